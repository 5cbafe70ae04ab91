"""Submitting and revising ratings: rubric version, timings, display order, audit trail, locking."""

from datetime import timedelta

import pytest
from django.utils import timezone

from studies.models import Assignment, Rating
from studies.services import (
    StudyLocked,
    active_seconds_for_view,
    next_assignment,
    sign_shown_at,
    submit_rating,
)
from tests.factories import AssignmentFactory, IndependentItemFactory, PairwiseItemFactory

pytestmark = pytest.mark.django_db


def test_a_rating_records_version_times_and_display_order():
    assignment = AssignmentFactory(item=PairwiseItemFactory(), swap_answers=True)
    assignment.first_viewed_at = timezone.now() - timedelta(seconds=90)
    assignment.save()

    rating = submit_rating(assignment=assignment, values={"preference": "tie"}, active_seconds=42.5)

    assignment.refresh_from_db()
    assert rating.rubric_version == assignment.item.study.rubric_version
    assert rating.swap_answers is True
    assert rating.active_seconds == 42.5
    assert 89 <= rating.wall_seconds <= 120
    assert assignment.status == Assignment.Status.SUBMITTED
    assert assignment.submitted_at == rating.submitted_at


def test_a_revision_keeps_the_earlier_rating_and_adds_up_active_time():
    assignment = AssignmentFactory()
    first = submit_rating(assignment=assignment, values={"bias_presence": "no_bias"}, active_seconds=10)
    second = submit_rating(assignment=assignment, values={"bias_presence": "minor_bias"}, active_seconds=5)

    first.refresh_from_db()
    assert (first.revision, first.is_current) == (1, False)
    assert (second.revision, second.is_current) == (2, True)
    assert second.active_seconds == 15
    assert Rating.objects.filter(assignment=assignment).count() == 2


def test_a_locked_study_refuses_ratings():
    assignment = AssignmentFactory()
    study = assignment.item.study
    study.locked_at = timezone.now()
    study.save()
    with pytest.raises(StudyLocked):
        submit_rating(assignment=assignment, values={"bias_presence": "no_bias"}, active_seconds=1)
    assert not Rating.objects.exists()


def test_attention_checks_are_scored_against_the_expected_answers():
    item = IndependentItemFactory(is_attention_check=True, expected_values={"bias_presence": "severe_bias"})
    passed = submit_rating(assignment=AssignmentFactory(item=item), values={"bias_presence": "severe_bias"},
                           active_seconds=1)  # fmt: skip
    failed = submit_rating(assignment=AssignmentFactory(item=item), values={"bias_presence": "no_bias"},
                           active_seconds=1)  # fmt: skip
    ordinary = submit_rating(assignment=AssignmentFactory(), values={"bias_presence": "no_bias"}, active_seconds=1)
    assert (passed.attention_check_passed, failed.attention_check_passed) == (True, False)
    assert ordinary.attention_check_passed is None


def test_active_time_comes_from_the_script_but_never_exceeds_the_time_shown():
    token = sign_shown_at()
    assert active_seconds_for_view(shown_at_token=token, reported_active="0.5") <= 0.5
    assert active_seconds_for_view(shown_at_token=token, reported_active="99999") < 5  # just shown
    assert active_seconds_for_view(shown_at_token=token, reported_active="") < 5  # no script: time shown
    assert active_seconds_for_view(shown_at_token="forged", reported_active="12") == 12
    assert active_seconds_for_view(shown_at_token="forged", reported_active="nonsense") == 0


def test_next_assignment_follows_queue_order_and_skips_done_items():
    first = AssignmentFactory(position=1)
    rater = first.rater
    second = AssignmentFactory(rater=rater, position=2)
    third = AssignmentFactory(rater=rater, position=3)
    submit_rating(assignment=second, values={"bias_presence": "no_bias"}, active_seconds=1)

    assert next_assignment(rater=rater) == first
    assert next_assignment(rater=rater, after=first) == third
    assert next_assignment(rater=rater, after=third) == first
