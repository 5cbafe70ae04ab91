"""The rater's way through the queue in Chromium (issue 22): one study at a time, told when it is done, a queue
grouped by study with previews, a cut-off answer flagged, and a panel participant sent from the survey straight
to their first item. At 1,280 and 390 px no page scrolls sideways."""

import re

import pytest

from studies.models import Rating
from tests.browser.conftest import log_in, screenshot
from tests.factories import (
    PASSWORD,
    AssignmentFactory,
    CounterfactualItemFactory,
    IndependentItemFactory,
    OnboardedRaterFactory,
    PairwiseItemFactory,
    StudyFactory,
    StudyPoolFactory,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SUBMIT = "form[data-rate-form] button[type=submit]"
NO_SIDEWAYS_SCROLL = "document.documentElement.scrollWidth <= window.innerWidth"
QUESTION = "A 34-year-old woman with sickle cell disease asks which painkiller she can take at home tonight. " * 3


@pytest.fixture
def wide_page(browser, live_server):
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(10_000)
    yield page
    context.close()


def _rater_in_two_studies():
    """Three items of an independent study and one of a pairwise study, positions counted per study as
    assign_study counts them (so queue order alone would alternate between the studies)."""
    user = OnboardedRaterFactory()
    first, second = StudyFactory(name="Pain answers"), StudyFactory(name="Pain pairs", kind="pairwise")
    answers = [
        {
            "answer__question__text": QUESTION,
            "answer__text": "Take paracetamol and",
            "answer__response_metadata": {"finish_reason": "length"},
        },  # fmt: skip
        {"answer__question__text": "Is ibuprofen safe with asthma?"},
        {"answer__question__text": "How much water should I drink?"},
    ]
    held = [
        AssignmentFactory(rater=user.rater_profile, position=n, item=IndependentItemFactory(study=first, **fields))
        for n, fields in enumerate(answers)
    ]
    other = AssignmentFactory(rater=user.rater_profile, position=0, item=PairwiseItemFactory(study=second))
    return user, held, other


def test_a_rater_finishes_one_study_before_the_next_and_the_queue_groups_and_previews(wide_page, phone_page):
    user, held, other = _rater_in_two_studies()
    log_in(wide_page, user.username, PASSWORD)
    wide_page.goto("/rate/")
    sections = wide_page.locator("section.queue-study")
    assert sections.count() == 2
    assert "Pain answers" in sections.nth(0).locator("h2").inner_text()
    assert "Rubric: EquityMedQA independent, one answer to rate per item" in sections.nth(0).inner_text()
    assert "Rubric: EquityMedQA pairwise, two answers to compare per item" in sections.nth(1).inner_text()
    preview = sections.nth(0).locator(".queue-row a").first.inner_text()
    assert preview.startswith("A 34-year-old woman") and preview.endswith("…") and len(preview) <= 110
    assert wide_page.evaluate(NO_SIDEWAYS_SCROLL)
    screenshot(wide_page, "rater-queue-1280")

    with wide_page.expect_navigation():
        wide_page.click("text=Rate the next item of Pain answers")
    assert wide_page.url.endswith(f"/rate/{held[0].pk}/")
    notice = wide_page.locator("[data-cut-off]")
    assert notice.is_visible() and "cut off" in notice.inner_text()
    assert wide_page.evaluate(NO_SIDEWAYS_SCROLL)
    screenshot(wide_page, "rater-cut-off-answer-1280")

    visited = []
    for _ in held:
        wide_page.check("input[name=bias_presence][value=no_bias]")
        with wide_page.expect_navigation():
            wide_page.click(SUBMIT)
        visited.append(wide_page.url)
    assert [url.removeprefix(wide_page.url.split("/rate/")[0]) for url in visited] == [
        f"/rate/{held[1].pk}/",
        f"/rate/{held[2].pk}/",
        "/rate/",
    ]  # the whole first study in queue order, never the pairwise item in between
    assert (
        "You have rated every item of Pain answers: this study is done." in wide_page.locator(".messages").inner_text()
    )
    assert "Study done" in wide_page.locator("section.queue-study").nth(0).inner_text()
    assert wide_page.locator("[data-next-item]").inner_text() == "Rate the next item of Pain pairs"
    assert wide_page.evaluate(NO_SIDEWAYS_SCROLL)
    screenshot(wide_page, "rater-study-done-1280")
    assert Rating.objects.filter(assignment__rater=user.rater_profile).count() == 3

    log_in(phone_page, user.username, PASSWORD)
    phone_page.goto("/rate/")
    assert phone_page.evaluate(NO_SIDEWAYS_SCROLL)
    screenshot(phone_page, "rater-queue-390")
    phone_page.locator("[data-done-items] summary").first.click()  # the done items fold away until asked for
    assert phone_page.locator("[data-done-items] .queue-row").count() == 3
    assert phone_page.evaluate(NO_SIDEWAYS_SCROLL)
    phone_page.goto(f"/rate/{held[0].pk}/")
    assert phone_page.locator("[data-cut-off]").is_visible()
    assert phone_page.evaluate(NO_SIDEWAYS_SCROLL)
    screenshot(phone_page, "rater-cut-off-answer-390")
    phone_page.goto("/rate/")
    with phone_page.expect_navigation():
        phone_page.click("[data-next-item]")
    assert phone_page.url.endswith(f"/rate/{other.pk}/")
    assert phone_page.evaluate(NO_SIDEWAYS_SCROLL)
    screenshot(phone_page, "rater-pairwise-390")

    cut = {"answer_2__response_metadata": {"finish_reason": "length"}}
    pair = AssignmentFactory(rater=user.rater_profile, item=CounterfactualItemFactory(**cut))
    for shown in (phone_page, wide_page):
        shown.goto(f"/rate/{pair.pk}/")
        assert shown.locator("[data-cut-off]").count() == 1 and shown.locator("[data-cut-off]").is_visible()
        assert shown.evaluate(NO_SIDEWAYS_SCROLL)
    screenshot(phone_page, "rater-counterfactual-cut-off-390")


def test_a_panel_participant_goes_from_the_survey_straight_to_their_first_item(phone_page):
    page = phone_page
    study = StudyFactory(name="Pain answers", consent_text="You will rate answers to health questions.")
    StudyPoolFactory(study=study, items_per_rater=2)
    for n in range(2):
        IndependentItemFactory(study=study, answer__text=f"Model answer {n}.")

    page.goto(f"/panel/{study.pk}/?PROLIFIC_PID=80a1b2c3d4e5f6a7b8c9d0e3")
    page.check("input[type=checkbox]")
    with page.expect_navigation():
        page.click("main button[type=submit]")
    page.check("input[name=race_ethnicity][value='Asian']")
    page.check("input[name=age_group][value='25-34']")
    page.check("input[name=gender][value='Woman']")
    with page.expect_navigation():
        page.click("main button[type=submit]")

    assert re.search(r"/rate/\d+/$", page.url)  # no queue page, no extra click
    assert page.locator("header.site-header button").inner_text().strip() == "Log out"
    assert page.evaluate(NO_SIDEWAYS_SCROLL)
    screenshot(page, "panel-first-item-390")
    for _ in range(2):
        page.check("input[name=bias_presence][value=no_bias]")
        with page.expect_navigation():
            page.click(SUBMIT)
    assert study.completion_code in page.locator("#completion-code").inner_text()
    assert "close this tab" in page.locator("[data-no-return-url]").inner_text()  # the study has no return URL
    assert page.evaluate(NO_SIDEWAYS_SCROLL)
    screenshot(page, "panel-completion-no-return-url-390")
