"""Studies, their items, ratings and raters through the API."""

import pytest

from raters.models import RaterPool
from studies.models import Assignment
from studies.services import submit_rating
from tests.api.client import client_for
from tests.factories import (
    AnalystFactory,
    AssignmentFactory,
    IndependentItemFactory,
    OnboardedRaterFactory,
    PairwiseItemFactory,
    StudyFactory,
    StudyPoolFactory,
)

pytestmark = pytest.mark.django_db


def test_a_study_shows_its_rubric_pools_replication_and_counts(coordinator):
    study = StudyFactory(kind="pairwise", name="Pairwise pilot")
    StudyPoolFactory(study=study, items_per_rater=10)
    StudyPoolFactory(study=study, pool=RaterPool.objects.get(slug="physician"), replication=3)
    first = PairwiseItemFactory(study=study)
    sources = {"answer_1__source": first.answer_1.source, "answer_2__source": first.answer_2.source}
    second = PairwiseItemFactory(study=study, is_attention_check=True, **sources)
    rated = AssignmentFactory(item=first)
    submit_rating(assignment=rated, values={"preference": "tie"}, active_seconds=3)
    AssignmentFactory(item=second)
    AssignmentFactory(item=second, status=Assignment.Status.WITHDRAWN)

    row = client_for(coordinator).get(f"/api/studies/{study.id}/").json()

    assert row["name"] == "Pairwise pilot"
    assert row["kind"] == "pairwise"
    assert row["rubric_version"]["id"] == study.rubric_version_id
    assert sorted((p["pool"], p["replication"], p["items_per_rater"]) for p in row["pools"]) == [
        ("consumer", 1, 10),
        ("physician", 3, None),
    ]
    assert (row["item_count"], row["attention_check_count"]) == (2, 1)
    assert (row["assignment_count"], row["submitted_count"]) == (2, 1)
    assert row["locked_at"] is None
    assert "completion_code" not in row


def test_study_items_show_their_answers_sources_and_assignment_counts():
    item = PairwiseItemFactory()
    IndependentItemFactory()  # another study
    AssignmentFactory(item=item)

    response = client_for(AnalystFactory()).get(f"/api/studies/{item.study_id}/items/")

    [row] = response.json()["results"]
    assert row["id"] == item.id
    assert row["question"] == item.question_id
    assert row["answer"] is None
    assert row["answer_1"] == {"id": item.answer_1.id, "question": item.question_id,
                               "source": item.answer_1.source_id, "source_name": "Model A"}  # fmt: skip
    assert row["answer_2"]["source_name"] == "Model B"
    assert (row["assignment_count"], row["submitted_count"]) == (1, 0)


def test_items_of_an_unknown_study_are_404(coordinator):
    assert client_for(coordinator).get("/api/studies/999999/items/").status_code == 404


def test_ratings_show_version_timings_display_order_and_pseudonyms_only():
    rater = OnboardedRaterFactory(username="alice-smith", email="alice@example.org")
    assignment = AssignmentFactory(item=PairwiseItemFactory(), rater=rater.rater_profile, swap_answers=True)
    first = submit_rating(assignment=assignment, values={"preference": "tie"}, active_seconds=12)
    second = submit_rating(assignment=assignment, values={"preference": "answer_1"}, active_seconds=3)
    other_study = AssignmentFactory()
    submit_rating(assignment=other_study, values={"bias_presence": "no_bias"}, active_seconds=1)

    response = client_for(AnalystFactory()).get("/api/ratings/", {"study": assignment.item.study_id})

    rows = response.json()["results"]
    assert [row["id"] for row in rows] == [first.id, second.id]
    assert [row["is_current"] for row in rows] == [False, True]
    latest = rows[1]
    assert latest["values"] == {"preference": "answer_1"}
    assert latest["rater"] == rater.rater_profile.pseudonym
    assert latest["pool"] == "physician"
    assert latest["rubric_version"]["id"] == assignment.item.study.rubric_version_id
    assert latest["swap_answers"] is True
    assert latest["active_seconds"] == 15
    assert latest["wall_seconds"] >= 0
    assert latest["revision"] == 2
    assert "alice" not in response.content.decode()


def test_ratings_can_be_limited_to_current_ones(coordinator):
    assignment = AssignmentFactory()
    submit_rating(assignment=assignment, values={"bias_presence": "no_bias"}, active_seconds=1)
    current = submit_rating(assignment=assignment, values={"bias_presence": "minor_bias"}, active_seconds=1)

    response = client_for(coordinator).get("/api/ratings/", {"current": "true"})

    assert [row["id"] for row in response.json()["results"]] == [current.id]


def test_coordinators_list_raters_with_usernames_and_milestones(coordinator):
    onboarded = OnboardedRaterFactory(username="dr-patel", pool="consumer")
    OnboardedRaterFactory(pool="physician")

    response = client_for(coordinator).get("/api/raters/", {"pool": "consumer"})

    [row] = response.json()["results"]
    profile = onboarded.rater_profile
    assert (row["pseudonym"], row["username"], row["pool"]) == (profile.pseudonym, "dr-patel", "consumer")
    assert row["onboarded_at"] is not None
    assert row["completed_at"] is None
    assert row["dropped_out_at"] is None
