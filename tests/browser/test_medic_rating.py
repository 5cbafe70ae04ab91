"""MEDIC's rubric in Chromium, at desktop and phone widths: a rater selects a sentence of the answer, quotes it with
"Quote the selected text", gives its harm and confidence, answers MANAGE / VISIT / RESOURCE, and the stored
rating holds the hallucination entry (empty rows dropped). No sideways scroll at either width."""

import pytest

from studies import medic
from studies.models import Rating, RubricVersion, StudyItem
from tests.browser.conftest import _open_page, log_in, screenshot
from tests.factories import PASSWORD, AnswerFactory, AssignmentFactory, OnboardedRaterFactory, StudyFactory

SUBMIT = "form[data-rate-form] button[type=submit]"
NO_SIDEWAYS_SCROLL = "document.documentElement.scrollWidth <= window.innerWidth"
ANSWER = "You can take acetaminophen for the fever. Ibuprofen is safe in the third trimester. Rest well."
WRONG = "Ibuprofen is safe in the third trimester."
SELECT = """(sentence) => {
  const answer = document.querySelector(".answer");
  const walker = document.createTreeWalker(answer, NodeFilter.SHOW_TEXT);
  let node;
  while ((node = walker.nextNode()) && !node.data.includes(sentence)) {}
  const range = document.createRange();
  range.setStart(node, node.data.indexOf(sentence));
  range.setEnd(node, node.data.indexOf(sentence) + sentence.length);
  const selection = window.getSelection();
  selection.removeAllRanges();
  selection.addRange(range);
}"""
pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("width", [1280, 390])
def test_a_rater_quotes_a_hallucinated_sentence_and_answers_the_categories(browser, live_server, width):
    version = RubricVersion.objects.get(rubric__name=medic.RUBRIC_NAME, number=1)
    item = StudyItem.objects.create(study=StudyFactory(rubric_version=version, name="MEDIC review"),
                                    answer=AnswerFactory(text=ANSWER))  # fmt: skip
    user = OnboardedRaterFactory(pool="physician")
    assignment = AssignmentFactory(rater=user.rater_profile, item=item)
    phone = {"is_mobile": True, "has_touch": True} if width == 390 else {}
    context, page = _open_page(browser, live_server, viewport={"width": width, "height": 900}, **phone)
    try:
        log_in(page, user.username, PASSWORD)
        page.goto(f"/rate/{assignment.pk}/")
        assert page.evaluate(NO_SIDEWAYS_SCROLL)

        page.evaluate(SELECT, WRONG)
        page.click("[data-quote-button='id_hallucinations-0-snippet']")
        assert page.input_value("#id_hallucinations-0-snippet") == WRONG
        page.select_option("#id_hallucinations-0-harm", "5")
        page.fill("#id_hallucinations-0-confidence", "0.8")
        page.fill("#id_hallucinations-0-explanation", "NSAIDs are avoided late in pregnancy.")
        page.check("input[name=manage][value=yes]")
        page.check("input[name=visit][value=no]")
        page.check("input[name=resource][value=no]")
        assert page.evaluate(NO_SIDEWAYS_SCROLL)
        screenshot(page, f"medic-rating-{width}")
        page.click(SUBMIT)
        page.wait_for_url("**/rate/")
    finally:
        context.close()

    assert Rating.objects.get().values == {
        "hallucinations": [{"snippet": WRONG, "explanation": "NSAIDs are avoided late in pregnancy.", "harm": 5,
                            "confidence": 0.8}],
        "omissions": [],
        "manage": "yes",
        "visit": "no",
        "resource": "no",
    }  # fmt: skip


def test_without_a_selection_the_button_says_what_to_do_and_a_typed_quote_not_in_the_answer_is_refused(page):
    version = RubricVersion.objects.get(rubric__name=medic.RUBRIC_NAME, number=1)
    item = StudyItem.objects.create(study=StudyFactory(rubric_version=version), answer=AnswerFactory(text=ANSWER))
    user = OnboardedRaterFactory(pool="physician")
    assignment = AssignmentFactory(rater=user.rater_profile, item=item)
    log_in(page, user.username, PASSWORD)
    page.goto(f"/rate/{assignment.pk}/")

    page.click("[data-quote-button='id_hallucinations-0-snippet']")
    assert "Select words of the answer first." in page.inner_text("[data-question=hallucinations]")
    page.fill("#id_hallucinations-0-snippet", "Aspirin is safe.")
    page.select_option("#id_hallucinations-0-harm", "2")
    for key in ("manage", "visit", "resource"):
        page.check(f"input[name={key}][value=no]")
    with page.expect_navigation():
        page.click(SUBMIT)

    assert "“Aspirin is safe.” does not occur in the answer shown; copy it exactly." in page.inner_text(
        "[data-question=hallucinations]"
    )
    assert page.input_value("#id_hallucinations-0-snippet") == "Aspirin is safe."  # kept for correcting
    assert not Rating.objects.exists()
