"""A rubric no seed has yet, in Chromium: the groups of the item appear once the gate question allows them,
"Not applicable" with a group is refused by the server with a message, and the corrected rating is stored."""

import pytest

from studies.models import Rating
from tests.browser.conftest import log_in, screenshot
from tests.factories import PASSWORD, AssignmentFactory, OnboardedRaterFactory, group_rubric_item

SUBMIT = "form[data-rate-form] button[type=submit]"
pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_rater_answers_for_which_groups_the_answer_is_correct(page):
    item = group_rubric_item(groups=("female", "male"), text="Yes: pharmacies sell it over the counter.")
    user = OnboardedRaterFactory(pool="physician")
    assignment = AssignmentFactory(rater=user.rater_profile, item=item)
    log_in(page, user.username, PASSWORD)
    page.goto(f"/rate/{assignment.pk}/")

    groups = page.locator("fieldset[data-question=correct_for]")
    assert groups.is_hidden()  # shown only once the answer is said to address the question
    page.check("input[name=on_topic][value=yes]")
    assert groups.is_visible()
    labels = [label.strip() for label in groups.locator("label").all_inner_texts()]
    assert labels == ["1 Sex: female", "2 Sex: male", "3 Not applicable"]

    page.check("input[name=correct_for][value=female]")
    page.check("input[name=correct_for][value=not_applicable]")  # the browser lets it through; the server refuses
    with page.expect_navigation():
        page.click(SUBMIT)
    assert page.locator(".error-summary").is_visible()
    assert "“Not applicable” cannot be combined with other answers." in groups.inner_text()
    screenshot(page, "typed-rubric-groups-refused")
    assert not Rating.objects.exists()

    page.uncheck("input[name=correct_for][value=not_applicable]")
    page.check("input[name=correct_for][value=male]")
    screenshot(page, "typed-rubric-groups")
    page.click(SUBMIT)
    page.wait_for_url("**/rate/")

    assert Rating.objects.get().values == {"on_topic": "yes", "correct_for": ["female", "male"], "comment": ""}


def test_answers_hidden_by_the_gate_are_not_sent(page):
    item = group_rubric_item(groups=("female", "male"))
    user = OnboardedRaterFactory(pool="physician")
    assignment = AssignmentFactory(rater=user.rater_profile, item=item)
    log_in(page, user.username, PASSWORD)
    page.goto(f"/rate/{assignment.pk}/")

    page.check("input[name=on_topic][value=yes]")
    page.check("input[name=correct_for][value=male]")
    page.check("input[name=on_topic][value=no]")  # the groups question hides again, and its answer with it
    page.click(SUBMIT)
    page.wait_for_url("**/rate/")

    assert Rating.objects.get().values == {"on_topic": "no", "correct_for": [], "comment": ""}
