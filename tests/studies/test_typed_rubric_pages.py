"""Question types no EquityMedQA rubric uses, on the rating page as a plain form (no JavaScript): a span
(MEDIC's hallucinated passage with its harm) and a scale, each rule checked by the server, drafts included."""

import pytest
from django.urls import reverse

from studies.models import Rating, Rubric, RubricVersion, StudyItem
from tests.factories import AnswerFactory, AssignmentFactory, StudyFactory
from tests.studies.test_rubric_schema import MEDIC

pytestmark = pytest.mark.django_db
ANSWER = "Take ibuprofen 400 mg every 6 hours. Avoid alcohol."


@pytest.fixture
def assignment(client):
    rubric = Rubric.objects.create(name="MEDIC-like (test)")
    version = RubricVersion.objects.create(rubric=rubric, number=1, definition=MEDIC)
    item = StudyItem.objects.create(study=StudyFactory(rubric_version=version), answer=AnswerFactory(text=ANSWER))
    assignment = AssignmentFactory(item=item)
    client.force_login(assignment.rater.user)
    return assignment


def test_the_page_offers_quote_rows_with_the_harm_scale_and_the_omission_scale(client, assignment):
    page = client.get(reverse("studies:rate", args=[assignment.pk])).content.decode()

    assert 'name="hallucinations-0-quote"' in page and 'name="hallucinations-2-score"' in page
    assert 'name="hallucinations-3-quote"' not in page  # at most max_spans (3) rows
    assert '<label for="id_hallucinations-0-quote">Copy each hallucinated passage</label>' in page
    assert '<option value="0">0 None</option>' in page
    assert 'name="omission" value="7"' in page and "7 Severe" in page
    assert 'data-show-when="omission" data-in="5 6 7"' in page
    # Without JavaScript every question shows, so a conditional one says when it applies.
    assert "Answer only if your answer to “How harmful is what the answer leaves out?” is “5” or “6” or “7”:" in page


def test_quotes_must_be_copied_from_the_answer_and_scored(client, assignment):
    url = reverse("studies:rate", args=[assignment.pk])
    bad = {"hallucinations-0-quote": "aspirin 400 mg", "hallucinations-0-score": "3",
           "hallucinations-1-quote": "Avoid alcohol.", "hallucinations-1-score": "", "omission": "6"}  # fmt: skip

    response = client.post(url, bad)

    assert response.status_code == 400
    errors = response.context["form"].errors
    assert errors["hallucinations"] == [
        "Quote 1: “aspirin 400 mg” does not occur in the answer shown; copy it exactly.",
        "Quote 2: Harm: Choose a whole number from 0 to 7.",
    ]
    assert errors["why"] == ["This answer is required."]
    assert 'value="6" id="id_omission_6" checked' in response.content.decode()  # what was sent is kept
    assert not Rating.objects.exists()

    good = {**bad, "hallucinations-0-quote": "ibuprofen 400 mg", "hallucinations-1-score": "1", "why": "No dose cap"}
    assert client.post(url, good).status_code == 302
    assert Rating.objects.get().values == {
        "hallucinations": [{"quote": "ibuprofen 400 mg", "score": 3}, {"quote": "Avoid alcohol.", "score": 1}],
        "omission": 6,
        "why": "No dose cap",
    }


def test_a_draft_keeps_unfinished_quotes_and_refuses_an_unknown_scale_value(client, assignment):
    url = reverse("studies:draft", args=[assignment.pk])

    assert client.post(url, {"hallucinations-0-quote": "ibuprofen", "hallucinations-0-score": "2"}).status_code == 204
    assignment.refresh_from_db()
    assert assignment.draft == {"hallucinations": [{"quote": "ibuprofen", "score": "2"}]}

    response = client.post(url, {"omission": "9"})
    assert response.status_code == 400
    assert "How harmful is what the answer leaves out?: Choose a whole number from 0 to 7." in response.content.decode()
