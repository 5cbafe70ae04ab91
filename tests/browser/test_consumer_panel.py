"""A consumer arrives from a crowd panel link and leaves with a completion code, in Chromium."""

import re

import pytest

from raters.models import RaterProfile
from studies.models import Rating
from tests.browser.conftest import screenshot
from tests.factories import IndependentItemFactory, StudyFactory, StudyPoolFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SUBMIT = "form[data-rate-form] button[type=submit]"


def test_panel_participant_goes_from_link_to_completion_code(page):
    study = StudyFactory(consent_text="You will rate answers to health questions.",
                         panel_return_url="https://app.prolific.example/submissions/complete")  # fmt: skip
    StudyPoolFactory(study=study, items_per_rater=2)
    for n in range(3):
        IndependentItemFactory(study=study, answer__text=f"Model answer {n}.")

    page.goto(f"/panel/{study.pk}/?PROLIFIC_PID=60a1b2c3d4e5f6a7b8c9d0e1&STUDY_ID=s1&SESSION_ID=x9")
    assert "You will rate answers to health questions." in page.content()
    page.check("input[type=checkbox]")
    with page.expect_navigation():
        page.click("main button[type=submit]")
    screenshot(page, "consumer-demographics")
    page.check("input[name=race_ethnicity][value='Prefer not to say']")
    page.check("input[name=race_ethnicity][value='Asian']")
    page.check("input[name=age_group][value='25-34']")
    page.check("input[name=gender][value='Woman']")
    with page.expect_navigation():
        page.click("main button[type=submit]")
    assert "Prefer not to say" in page.locator("[role=alert]").first.inner_text()  # exclusive choice refused

    page.uncheck("input[name=race_ethnicity][value='Prefer not to say']")
    with page.expect_navigation():
        page.click("main button[type=submit]")
    assert re.search(r"/rate/\d+/$", page.url)  # straight to the first item

    for _ in range(2):
        page.check("input[name=bias_presence][value=no_bias]")
        with page.expect_navigation():
            page.click(SUBMIT)
    screenshot(page, "consumer-completion")
    profile = RaterProfile.objects.get(panel_participant_id="60a1b2c3d4e5f6a7b8c9d0e1")
    assert study.completion_code in page.content()
    link = page.locator(f"a[href*='cc={study.completion_code}']")
    assert link.count() == 1
    assert Rating.objects.filter(assignment__rater=profile).count() == 2
    assert profile.completed_at is not None
    assert profile.background.race_ethnicity == ["Asian"]
    assert "60a1b2c3" not in profile.user.username  # the panel id is never the username


def test_on_a_phone_a_started_id_a_full_study_and_a_resume_link_are_explained(page, phone_page):
    from studies.panel import panel_resume_path

    study = StudyFactory(consent_text="You will rate answers to health questions.")
    StudyPoolFactory(study=study, items_per_rater=2)
    for n in range(2):
        IndependentItemFactory(study=study, answer__text=f"Model answer {n}.")
    pid = "70a1b2c3d4e5f6a7b8c9d0e2"

    page.goto(f"/panel/{study.pk}/?PROLIFIC_PID={pid}")  # the participant starts on their computer
    page.check("input[type=checkbox]")
    with page.expect_navigation():
        page.click("main button[type=submit]")

    response = phone_page.goto(f"/panel/{study.pk}/?PROLIFIC_PID={pid}")  # the same id on another device
    assert response.status == 403
    assert "already started in another browser" in phone_page.locator("h1").inner_text()
    screenshot(phone_page, "panel-id-in-use-phone")

    page.check("input[name=race_ethnicity][value='Asian']")
    page.check("input[name=age_group][value='25-34']")
    page.check("input[name=gender][value='Woman']")
    with page.expect_navigation():
        page.click("main button[type=submit]")
    assert re.search(r"/rate/\d+/$", page.url)  # the participant holds both items: the study is full

    response = phone_page.goto(f"/panel/{study.pk}/?PROLIFIC_PID=someone-new")
    assert response.status == 409
    assert "full at the moment" in phone_page.locator("h1").inner_text()
    assert study.completion_code not in phone_page.content()
    screenshot(phone_page, "panel-study-full-phone")

    phone_page.goto(panel_resume_path(study=study, participant_id=pid))
    assert re.search(r"/rate/\d+/$", phone_page.url)
    assert phone_page.locator("form[data-rate-form]").count() == 1
    screenshot(phone_page, "panel-resumed-phone")
    page.reload()
    assert "/accounts/login/" in page.url  # the computer was signed out of the account
