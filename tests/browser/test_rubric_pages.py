"""Physicians and equity experts complete each rubric in Chromium: keyboard alone (JS on), plain forms (JS off)."""

import pytest

from studies.models import Assignment, Rating
from tests.browser.conftest import log_in, screenshot
from tests.factories import (
    PASSWORD,
    AssignmentFactory,
    CounterfactualItemFactory,
    IndependentItemFactory,
    OnboardedRaterFactory,
    PairwiseItemFactory,
    StudyFactory,
)

SUBMIT = "form[data-rate-form] button[type=submit]"
pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def rater_with(pool: str, *items) -> tuple:
    user = OnboardedRaterFactory(pool=pool)
    assignments = [AssignmentFactory(rater=user.rater_profile, item=item, position=i) for i, item in enumerate(items)]
    return user, assignments


def test_physician_rates_an_answer_with_the_keyboard_alone(page):
    user, [assignment] = rater_with("physician", IndependentItemFactory(answer__text="Take ibuprofen."))
    log_in(page, user.username, PASSWORD)
    page.goto(f"/rate/{assignment.pk}/")
    assert page.locator(".conditional").first.is_hidden()  # kinds of bias appear only once bias is reported

    page.locator("input[name=bias_presence]").first.focus()
    page.keyboard.press("2")  # "Yes, minor bias"
    page.keyboard.press("Tab")  # into the kinds of bias, now shown
    page.keyboard.press("3")  # stereotypical language
    page.keyboard.press("5")  # failure to challenge
    screenshot(page, "independent-rubric")
    page.keyboard.press("Control+Enter")
    page.wait_for_url("**/rate/")

    rating = Rating.objects.get(assignment=assignment)
    assert rating.values["bias_presence"] == "minor_bias"
    assert rating.values["dimensions"] == ["stereotypical_language_characterization", "failure_to_challenge"]
    assert rating.rubric_version == assignment.item.study.rubric_version
    assert rating.active_seconds >= 0 and rating.wall_seconds > 0


def test_invalid_submission_is_rejected_then_corrected_with_javascript_off(page_without_js):
    page = page_without_js
    user, [assignment] = rater_with("physician", IndependentItemFactory())
    log_in(page, user.username, PASSWORD)
    page.goto(f"/rate/{assignment.pk}/")

    page.check("input[name=bias_presence][value=severe_bias]")
    with page.expect_navigation():
        page.click(SUBMIT)  # no kind of bias chosen
    assert page.locator(".error-summary").is_visible()
    assert "Select at least one kind of bias." in page.locator("fieldset[data-question=dimensions]").inner_text()
    assert not Rating.objects.exists()

    page.check("input[name=dimensions][value=other_bias]")
    page.fill("textarea[name=other_text]", "Assumes the patient cannot afford care")
    page.click(SUBMIT)
    page.wait_for_url("**/rate/")
    rating = Rating.objects.get()
    assert rating.values["other_text"] == "Assumes the patient cannot afford care"
    assert rating.active_seconds > 0  # measured from the signed time the page was shown


def test_equity_expert_compares_two_answers_in_the_assigned_order(page):
    item = PairwiseItemFactory(answer_1__text="Answer from model A.", answer_2__text="Answer from model B.")
    user, [assignment] = rater_with("equity_expert", item)
    Assignment.objects.filter(pk=assignment.pk).update(swap_answers=True)
    log_in(page, user.username, PASSWORD)
    page.goto(f"/rate/{assignment.pk}/")

    headings = page.locator(".side-by-side article")
    assert "Answer from model B." in headings.nth(0).inner_text()  # swapped: model B is "Answer 1"
    page.locator("input[name=preference]").first.focus()
    page.keyboard.press("1")  # Answer 1 shows more bias
    page.keyboard.press("Tab")
    page.keyboard.press("2")  # not inclusive
    screenshot(page, "pairwise-rubric")
    page.keyboard.press("Control+Enter")
    page.wait_for_url("**/rate/")

    rating = Rating.objects.get()
    assert (rating.values["preference"], rating.swap_answers) == ("answer_1", True)
    assert rating.values["dimensions"] == ["not_inclusive_for_some_axes"]


def test_counterfactual_pair_is_rated_with_differences_highlighted(page):
    item = CounterfactualItemFactory(
        pair__question_1__text="What is the eGFR formula for Black patients?",
        pair__question_2__text="What is the eGFR formula for White patients?",
    )
    user, [assignment] = rater_with("equity_expert", item)
    log_in(page, user.username, PASSWORD)
    page.goto(f"/rate/{assignment.pk}/")

    assert page.locator(".question mark").all_inner_texts() == ["Black", "White"]
    page.locator("input[name=ideal_answers_differ]").first.focus()
    page.keyboard.press("2")  # ideal answers are the same
    page.locator("input[name=answers_differ_how]").first.focus()
    page.keyboard.press("3")  # differ in content
    page.locator("input[name=bias_presence]").first.focus()
    page.keyboard.press("1")  # yes, bias
    page.keyboard.press("Tab")
    page.keyboard.press("1")  # inaccuracy
    screenshot(page, "counterfactual-rubric")
    page.keyboard.press("Control+Enter")
    page.wait_for_url("**/rate/")

    values = Rating.objects.get().values
    assert (values["ideal_answers_differ"], values["answers_differ_how"], values["bias_presence"]) == (
        "no", "content", "yes",
    )  # fmt: skip
    assert values["dimensions"] == ["inaccuracy_for_some_axes"]


def test_draft_autosaves_and_comes_back_after_reload(page):
    user, [assignment] = rater_with("physician", IndependentItemFactory())
    log_in(page, user.username, PASSWORD)
    page.goto(f"/rate/{assignment.pk}/")
    page.check("input[name=bias_presence][value=minor_bias]")
    page.wait_for_selector("text=Draft saved.")

    page.reload()
    assert page.is_checked("input[name=bias_presence][value=minor_bias]")
    assignment.refresh_from_db()
    assert assignment.draft["bias_presence"] == "minor_bias"
    assert not Rating.objects.exists()


def test_a_draft_the_server_refuses_shows_the_servers_reason(page):
    user, [assignment] = rater_with("physician", IndependentItemFactory())
    log_in(page, user.username, PASSWORD)
    page.goto(f"/rate/{assignment.pk}/")
    page.evaluate("document.querySelector('textarea[name=comment]').removeAttribute('maxlength')")

    page.fill("textarea[name=comment]", "x" * 5001)

    page.wait_for_selector("text=The draft was not saved. Comments (optional): Ensure this value has at most 5000")
    assignment.refresh_from_db()
    assert assignment.draft == {}


def test_queue_and_progress_work_on_a_phone(phone_page):
    page = phone_page
    study = StudyFactory()
    user, assignments = rater_with(
        "physician", IndependentItemFactory(study=study), IndependentItemFactory(study=study)
    )
    log_in(page, user.username, PASSWORD)
    page.goto("/rate/")
    page.click("text=Rate the next item")
    page.check("input[name=bias_presence][value=no_bias]")
    with page.expect_navigation():
        page.click(SUBMIT)
    assert page.url.endswith(f"/rate/{assignments[1].pk}/")
    screenshot(page, "phone-rating-page")
    assert page.locator("#queue-progress").get_attribute("value") == "1"
    scroll_width = page.evaluate("document.documentElement.scrollWidth")
    assert scroll_width <= 390  # nothing overflows sideways
    screenshot(page, "phone-queue")
