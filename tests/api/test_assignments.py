"""Assignments through the API: raters see and rate only their own; the study team reads all."""

import pytest
from django.utils import timezone

from studies.models import Assignment, Rating
from studies.services import MAX_VIEW_SECONDS
from tests.api.client import client_for
from tests.factories import (
    AnalystFactory,
    AnswerSourceFactory,
    AssignmentFactory,
    CounterfactualItemFactory,
    IndependentItemFactory,
    PairwiseItemFactory,
    RaterFactory,
)

pytestmark = pytest.mark.django_db


def rate(assignment, values, active_seconds=5.0, user=None):
    return client_for(user or assignment.rater.user).post(
        f"/api/assignments/{assignment.id}/rating/",
        {"values": values, "active_seconds": active_seconds},
        format="json",
    )


def test_a_rater_sees_only_their_own_assignments():
    mine = AssignmentFactory()
    AssignmentFactory()  # someone else's
    AssignmentFactory(rater=mine.rater, status=Assignment.Status.WITHDRAWN)

    response = client_for(mine.rater.user).get("/api/assignments/")

    assert [row["id"] for row in response.json()["results"]] == [mine.id]


def test_another_raters_assignment_is_404():
    mine, theirs = AssignmentFactory(), AssignmentFactory()
    response = client_for(mine.rater.user).get(f"/api/assignments/{theirs.id}/")
    assert response.status_code == 404


def test_independent_content_is_the_question_and_its_answer():
    assignment = AssignmentFactory(item=IndependentItemFactory())
    answer = assignment.item.answer

    row = client_for(assignment.rater.user).get("/api/assignments/").json()["results"][0]

    assert (row["study"]["kind"], row["study"]["display"]) == ("independent", "one_answer")
    assert row["content"] == {"question": answer.question.text, "answer": answer.text, "question_1": None,
                              "question_2": None, "answer_1": None, "answer_2": None, "groups": []}  # fmt: skip


def test_pairwise_answers_come_in_the_raters_display_order_without_their_sources():
    item = PairwiseItemFactory()
    swapped = AssignmentFactory(item=item, swap_answers=True)
    straight = AssignmentFactory(item=item, swap_answers=False)

    swapped_row = client_for(swapped.rater.user).get(f"/api/assignments/{swapped.id}/").json()
    straight_row = client_for(straight.rater.user).get(f"/api/assignments/{straight.id}/").json()

    assert swapped_row["content"]["question"] == item.question.text
    assert (swapped_row["content"]["answer_1"], swapped_row["content"]["answer_2"]) == (
        item.answer_2.text,
        item.answer_1.text,
    )
    assert (straight_row["content"]["answer_1"], straight_row["content"]["answer_2"]) == (
        item.answer_1.text,
        item.answer_2.text,
    )
    assert "Model A" not in str(swapped_row)
    assert swapped_row["rubric"]["kind"] == "pairwise"
    assert swapped_row["rubric"]["display"] == "two_answers"
    assert swapped_row["rubric"]["definition"]["questions"][0]["key"] == "preference"
    assert swapped_row["answers_schema"]["properties"]["preference"]["enum"] == ["answer_1", "answer_2", "tie"]


def test_counterfactual_content_has_both_questions_and_both_answers():
    item = CounterfactualItemFactory()
    assignment = AssignmentFactory(item=item)

    content = client_for(assignment.rater.user).get(f"/api/assignments/{assignment.id}/").json()["content"]

    assert content["question_1"] == item.pair.question_1.text
    assert content["question_2"] == item.pair.question_2.text
    assert (content["answer_1"], content["answer_2"]) == (item.answer_1.text, item.answer_2.text)


def test_opening_an_assignment_marks_it_viewed_for_its_rater_only(coordinator):
    assignment = AssignmentFactory()
    client_for(coordinator).get(f"/api/assignments/{assignment.id}/")
    assignment.refresh_from_db()
    assert assignment.first_viewed_at is None

    client_for(assignment.rater.user).get(f"/api/assignments/{assignment.id}/")

    assignment.refresh_from_db()
    assert assignment.first_viewed_at is not None
    assert assignment.status == Assignment.Status.STARTED


def test_raters_are_never_told_the_display_order_and_the_study_team_is(coordinator):
    item = PairwiseItemFactory()
    swapped = AssignmentFactory(item=item, swap_answers=True)
    as_rater = client_for(swapped.rater.user)

    for row in (as_rater.get("/api/assignments/").json()["results"][0],
                as_rater.get(f"/api/assignments/{swapped.id}/").json()):  # fmt: skip
        assert "swap_answers" not in row and row["id"] == swapped.id
    team = client_for(coordinator)
    assert team.get("/api/assignments/").json()["results"][0]["swap_answers"] is True
    assert team.get(f"/api/assignments/{swapped.id}/").json()["swap_answers"] is True
    analyst_row = client_for(AnalystFactory()).get(f"/api/assignments/{swapped.id}/").json()
    assert analyst_row["swap_answers"] is True
    schema = client_for(coordinator).get("/api/schema/", HTTP_ACCEPT="application/json").json()
    assert "swap_answers" not in schema["components"]["schemas"]["Assignment"]["properties"]


def test_coordinators_see_every_assignment_and_filter_by_study_and_rater(coordinator):
    first = AssignmentFactory()
    AssignmentFactory(item=IndependentItemFactory(study=first.item.study))
    AssignmentFactory()
    client = client_for(coordinator)

    everything = client.get("/api/assignments/").json()
    by_study = client.get("/api/assignments/", {"study": first.item.study_id}).json()
    by_rater = client.get("/api/assignments/", {"rater": first.rater.pseudonym}).json()

    assert everything["count"] == 3
    assert by_study["count"] == 2
    assert [row["id"] for row in by_rater["results"]] == [first.id]
    assert by_rater["results"][0]["rater"] == first.rater.pseudonym


def test_analysts_read_assignments_but_cannot_rate_them():
    assignment = AssignmentFactory()
    analyst = AnalystFactory()

    listed = client_for(analyst).get("/api/assignments/")
    response = rate(assignment, {"bias_presence": "no_bias"}, user=analyst)

    assert listed.json()["count"] == 1
    assert response.status_code == 403
    assert not Rating.objects.exists()


def test_a_valid_rating_is_stored_with_version_and_display_order():
    assignment = AssignmentFactory(item=PairwiseItemFactory(), swap_answers=True)
    values = {"preference": "answer_2", "dimensions": ["failure_to_challenge"], "comment": "Answer 1 is better."}

    response = rate(assignment, values, active_seconds=42.5)

    assert response.status_code == 201, response.content
    rating = Rating.objects.get()
    assert response.json()["id"] == rating.id
    assert rating.values == {**values, "other_text": ""}
    assert rating.rubric_version == assignment.item.study.rubric_version
    assert rating.swap_answers is True
    assert rating.active_seconds == 42.5
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SUBMITTED


def test_a_revision_keeps_the_earlier_rating():
    assignment = AssignmentFactory()
    rate(assignment, {"bias_presence": "no_bias"})

    response = rate(assignment, {"bias_presence": "minor_bias", "dimensions": ["omits_systemic_explanation"]})

    assert response.status_code == 201
    assert response.json()["revision"] == 2
    assert list(Rating.objects.order_by("revision").values_list("is_current", flat=True)) == [False, True]
    row = client_for(assignment.rater.user).get(f"/api/assignments/{assignment.id}/").json()
    assert row["current_values"]["bias_presence"] == "minor_bias"


def test_an_incomplete_rating_gets_per_field_errors_and_nothing_is_stored():
    assignment = AssignmentFactory(item=CounterfactualItemFactory())

    response = rate(assignment, {"ideal_answers_differ": "maybe"})

    assert response.status_code == 400
    errors = response.json()["values"]
    assert errors["ideal_answers_differ"] == ["Choose one of the answers shown."]
    assert errors["answers_differ_how"] == ["Choose one answer."]
    assert errors["bias_presence"] == ["Choose one answer."]
    assert not Rating.objects.exists()


def test_kinds_of_bias_with_a_no_bias_answer_are_refused_and_nothing_is_stored():
    assignment = AssignmentFactory()

    response = rate(assignment, {"bias_presence": "no_bias", "dimensions": ["failure_to_challenge"],
                                 "other_text": "sneaked in"})  # fmt: skip

    assert response.status_code == 400
    errors = response.json()["values"]
    assert set(errors) == {"dimensions", "other_text"}
    assert not Rating.objects.exists()
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.ASSIGNED


@pytest.mark.parametrize(
    "values",
    [
        {"bias_presence": {"$ne": "x"}},
        {"bias_presence": "severe_bias", "dimensions": "failure_to_challenge"},
        {"bias_presence": "severe_bias", "dimensions": [1]},
    ],
)
def test_values_of_the_wrong_shape_are_refused(values):
    assignment = AssignmentFactory()
    response = rate(assignment, values)
    assert response.status_code == 400
    assert "values" in response.json()
    assert not Rating.objects.exists()


def test_a_negative_active_time_is_refused_and_a_huge_one_is_capped():
    assignment = AssignmentFactory()
    assert rate(assignment, {"bias_presence": "no_bias"}, active_seconds=-1).status_code == 400

    rate(assignment, {"bias_presence": "no_bias"}, active_seconds=10**9)

    assert Rating.objects.get().active_seconds == MAX_VIEW_SECONDS


def test_rating_a_locked_study_is_409_and_stores_nothing():
    assignment = AssignmentFactory()
    study = assignment.item.study
    study.locked_at = timezone.now()
    study.save(update_fields=["locked_at"])

    response = rate(assignment, {"bias_presence": "no_bias"})

    assert response.status_code == 409
    assert "locked" in response.json()["detail"]
    assert not Rating.objects.exists()


def test_rating_another_raters_assignment_is_404():
    mine, theirs = AssignmentFactory(), AssignmentFactory()
    response = rate(theirs, {"bias_presence": "no_bias"}, user=mine.rater.user)
    assert response.status_code == 404
    assert not Rating.objects.exists()


def test_a_rater_who_has_not_finished_onboarding_cannot_rate():
    rater = RaterFactory()
    assignment = AssignmentFactory(rater=rater.rater_profile)
    response = rate(assignment, {"bias_presence": "no_bias"})
    assert response.status_code == 403
    assert not Rating.objects.exists()


def test_coordinators_without_a_rater_profile_cannot_rate(coordinator):
    assignment = AssignmentFactory()
    response = rate(assignment, {"bias_presence": "no_bias"}, user=coordinator)
    assert response.status_code == 403


def test_listing_assignments_takes_a_fixed_number_of_queries(coordinator, django_assert_max_num_queries):
    model_a, model_b = AnswerSourceFactory(), AnswerSourceFactory()
    for _ in range(4):
        AssignmentFactory(item=IndependentItemFactory())
        AssignmentFactory(item=PairwiseItemFactory(answer_1__source=model_a, answer_2__source=model_b))
        AssignmentFactory(item=CounterfactualItemFactory())
    rate(Assignment.objects.first(), {"bias_presence": "no_bias"})
    client = client_for(coordinator)

    with django_assert_max_num_queries(10):  # 2 of them set and reset the request's statement timeout
        response = client.get("/api/assignments/")

    assert response.json()["count"] == 12
