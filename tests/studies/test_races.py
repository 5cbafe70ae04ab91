"""Races between raters and coordinators, on two real PostgreSQL connections: the first action runs in an open
transaction on its own connection and commits only once the second (another connection) waits on its locks,
or has finished without waiting. Whatever the order, no item ever counts more ratings than its replication,
no rating is stored after the study's lock, and a stale action is refused with a message."""

import threading
import time

import pytest
from django.db import connection, connections, transaction
from django.http import QueryDict
from django.urls import reverse

from raters.models import RaterPool
from studies import services
from studies.assignment import assign_study, create_slots, reassign_assignment, withdraw_assignment
from studies.coordination import lock_study, mark_dropped_out, reassign_open_items, withdraw_open_items
from studies.exports import exported_ratings
from studies.models import Assignment, Rating, Slot, StudyItem, StudyPool
from studies.services import submit_rating
from tests.api.client import client_for
from tests.factories import IndependentItemFactory, OnboardedRaterFactory, StudyFactory

pytestmark = [pytest.mark.postgresql, pytest.mark.django_db(transaction=True)]

NO_BIAS = {"bias_presence": "no_bias", "dimensions": [], "other_text": "", "comment": ""}


@pytest.fixture(autouse=True)
def _postgresql(reference_data):
    if connection.vendor != "postgresql":
        pytest.fail("these races need PostgreSQL row locks")


def waiting_on_locks() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        return cursor.fetchone()[0]


def race(first, second, timeout: float = 30):
    """Run `first` in a transaction kept open until `second`, on another connection, waits on a lock (or is
    done); then commit. Returns (first's result or error, second's result or error, whether second was done
    before first committed)."""
    results: dict = {}
    first_done, commit = threading.Event(), threading.Event()

    def run_first():
        try:
            with transaction.atomic():
                results["first"] = first()
                first_done.set()
                commit.wait(timeout)
        except Exception as error:
            results["first"] = error
        finally:
            first_done.set()
            connections.close_all()

    def run_second():
        try:
            results["second"] = second()
        except Exception as error:
            results["second"] = error
        finally:
            results["second_early"] = not commit.is_set()
            connections.close_all()

    holder = threading.Thread(target=run_first)
    holder.start()
    assert first_done.wait(timeout)
    contender = threading.Thread(target=run_second)
    contender.start()
    deadline = time.monotonic() + timeout
    while contender.is_alive() and waiting_on_locks() == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    commit.set()
    holder.join(timeout)
    contender.join(timeout)
    assert not holder.is_alive() and not contender.is_alive(), "deadlocked"
    return results["first"], results["second"], results["second_early"]


def physician_study(n_items=1):
    """Items rated once by the physician pool, each assigned to one of two physicians."""
    study = StudyFactory(kind="independent")
    StudyPool.objects.create(study=study, pool=RaterPool.objects.get(slug="physician"), replication=1)
    for _ in range(n_items):
        IndependentItemFactory(study=study)
    team = [OnboardedRaterFactory(pool="physician").rater_profile for _ in range(2)]
    create_slots(study=study)
    assign_study(study=study, pool_id=team[0].pool_id)
    return study, team


def as_the_page_read_it(assignment) -> Assignment:
    """The assignment as a rating page or the API read it before the race (study and item included)."""
    return Assignment.objects.select_related("item__study__rubric_version__rubric", "rater").get(pk=assignment.pk)


def counted_per_item(study) -> dict[int, int]:
    rows = exported_ratings("independent", study).values_list("assignment__item_id", flat=True)
    counts: dict[int, int] = {}
    for item_id in rows:
        counts[item_id] = counts.get(item_id, 0) + 1
    return counts


def take_back(action, held, other):
    if action == "withdraw":
        return lambda: withdraw_assignment(assignment=Assignment.objects.get(pk=held.pk))
    if action == "drop-out":
        return lambda: mark_dropped_out(study=held.item.study, profile=held.rater)
    if action == "withdraw-all":
        return lambda: withdraw_open_items(study=held.item.study, profile=held.rater)
    if action == "reassign-all":
        return lambda: reassign_open_items(study=held.item.study, profile=held.rater, to_rater=other)
    return lambda: reassign_assignment(assignment=Assignment.objects.get(pk=held.pk), to_rater=other)


# --- Taking an item back while its rater submits --------------------------------------------------


@pytest.mark.parametrize("action", ["withdraw", "drop-out", "reassign", "withdraw-all", "reassign-all"])
def test_a_rating_submitted_while_its_item_is_taken_back_is_refused_and_replication_holds(action):
    study, team = physician_study()
    held = Assignment.objects.get(item__study=study)
    other = team[1] if held.rater == team[0] else team[0]
    page = as_the_page_read_it(held)

    _, submitted, _ = race(
        take_back(action, held, other),
        lambda: submit_rating(assignment=page, values=NO_BIAS, active_seconds=1),
    )

    assert not Rating.objects.filter(assignment=held).exists()
    held.refresh_from_db()
    assert held.status == Assignment.Status.WITHDRAWN
    # The slot goes to the other physician, who rates it: the export counts one rating, as configured.
    if action not in ("reassign", "reassign-all"):
        assign_study(study=study, pool_id=other.pool_id)
    submit_rating(assignment=Assignment.objects.get(item__study=study, rater=other), values=NO_BIAS, active_seconds=1)
    assert counted_per_item(study) == {held.item_id: 1}
    assert isinstance(submitted, services.StaleTransition)
    assert str(submitted) == "This item was taken back from you meanwhile, so your answers were not stored."


def test_withdrawing_an_item_rated_meanwhile_is_refused_and_the_rating_counts():
    study, _ = physician_study()
    held = Assignment.objects.get(item__study=study)
    seen_unrated = Assignment.objects.select_related("rater").get(pk=held.pk)

    rating, withdrawn, _ = race(
        lambda: submit_rating(assignment=as_the_page_read_it(held), values=NO_BIAS, active_seconds=1),
        lambda: withdraw_assignment(assignment=seen_unrated),
    )

    held.refresh_from_db()
    assert held.status == Assignment.Status.SUBMITTED
    assert Slot.objects.get(item__study=study).assignment_id == held.pk
    assert counted_per_item(study) == {held.item_id: 1} and rating.assignment_id == held.pk
    assert isinstance(withdrawn, services.StaleTransition)
    assert "rated item" in str(withdrawn) and "Withdraw it again if that rating should not count" in str(withdrawn)


def test_reassigning_an_item_rated_meanwhile_is_refused():
    study, team = physician_study()
    held = Assignment.objects.get(item__study=study)
    other = team[1] if held.rater == team[0] else team[0]
    seen_unrated = Assignment.objects.select_related("rater").get(pk=held.pk)

    _, moved, _ = race(
        lambda: submit_rating(assignment=as_the_page_read_it(held), values=NO_BIAS, active_seconds=1),
        lambda: reassign_assignment(assignment=seen_unrated, to_rater=other),
    )

    held.refresh_from_db()
    assert held.status == Assignment.Status.SUBMITTED
    assert not Assignment.objects.filter(rater=other).exists()
    assert isinstance(moved, services.StaleTransition) and "so it was not moved" in str(moved)


def test_a_drop_out_recorded_while_the_rater_submits_keeps_the_rating():
    study, _ = physician_study()
    held = Assignment.objects.get(item__study=study)

    _, freed, _ = race(
        lambda: submit_rating(assignment=as_the_page_read_it(held), values=NO_BIAS, active_seconds=1),
        lambda: mark_dropped_out(study=study, profile=held.rater),
    )

    assert freed == 0
    held.refresh_from_db()
    assert held.status == Assignment.Status.SUBMITTED and counted_per_item(study) == {held.item_id: 1}


@pytest.mark.parametrize("bulk", ["withdraw-all", "reassign-all"])
def test_a_bulk_action_waiting_on_a_submission_leaves_the_rated_item_alone(bulk):
    study, team = physician_study()
    held = Assignment.objects.get(item__study=study)
    other = team[1] if held.rater == team[0] else team[0]

    _, moved, early = race(
        lambda: submit_rating(assignment=as_the_page_read_it(held), values=NO_BIAS, active_seconds=1),
        take_back(bulk, held, other),
    )

    assert moved == 0 and not early  # it waited for the submission, then found nothing open
    held.refresh_from_db()
    assert held.status == Assignment.Status.SUBMITTED and counted_per_item(study) == {held.item_id: 1}


# --- Locking while raters submit ----------------------------------------------------------------------


def test_a_rating_sent_after_the_lock_committed_is_refused():
    study, _ = physician_study()
    held = Assignment.objects.get(item__study=study)
    page = as_the_page_read_it(held)  # read before the lock, as an open rating page was

    locked, submitted, _ = race(
        lambda: lock_study(study=study),
        lambda: submit_rating(assignment=page, values=NO_BIAS, active_seconds=1),
    )

    assert locked is True
    assert not Rating.objects.filter(assignment__item__study=study).exists()
    assert isinstance(submitted, services.StudyLocked)


def test_locking_waits_for_the_ratings_in_flight_so_none_appears_after_it():
    study, _ = physician_study()
    held = Assignment.objects.get(item__study=study)

    def lock_then_count():
        assert lock_study(study=study)
        return Rating.objects.filter(assignment__item__study=study).count()  # what an export right after sees

    rating, seen_at_lock, lock_was_early = race(
        lambda: submit_rating(assignment=as_the_page_read_it(held), values=NO_BIAS, active_seconds=1),
        lock_then_count,
    )

    assert not lock_was_early  # it waited for the submission in flight
    assert seen_at_lock == Rating.objects.filter(assignment__item__study=study).count() == 1
    study.refresh_from_db()
    assert rating.submitted_at <= study.locked_at


def test_raters_submitting_at_once_do_not_wait_for_each_other():
    study, _ = physician_study(n_items=2)
    first, second = Assignment.objects.filter(item__study=study).order_by("id")

    _, rating, done_early = race(
        lambda: submit_rating(assignment=as_the_page_read_it(first), values=NO_BIAS, active_seconds=1),
        lambda: submit_rating(assignment=as_the_page_read_it(second), values=NO_BIAS, active_seconds=1),
    )
    _, draft_result, draft_early = race(
        lambda: submit_rating(assignment=as_the_page_read_it(first), values=NO_BIAS, active_seconds=1),
        lambda: services.save_draft(assignment=as_the_page_read_it(second), data=QueryDict("comment=so+far")),
    )

    assert isinstance(rating, Rating) and done_early
    assert draft_result is None and draft_early  # stored, not an error that came back early
    second.refresh_from_db()
    assert second.draft == {"comment": "so far"}
    assert Rating.objects.filter(assignment__item__study=study).count() == 3


# --- What the rater is told ---------------------------------------------------------------------------


def test_the_api_answers_409_when_the_item_was_withdrawn_while_rating():
    study, _ = physician_study()
    held = Assignment.objects.select_related("rater__user").get(item__study=study)

    def post_rating():
        return client_for(held.rater.user).post(
            f"/api/assignments/{held.pk}/rating/", {"values": NO_BIAS, "active_seconds": 3}, format="json"
        )

    _, response, _ = race(lambda: withdraw_assignment(assignment=Assignment.objects.get(pk=held.pk)), post_rating)

    assert not Rating.objects.exists()
    assert response.status_code == 409
    assert response.json()["detail"] == "This item was taken back from you meanwhile, so your answers were not stored."


def test_the_rating_page_says_the_item_was_withdrawn_while_rating(client):
    study, _ = physician_study()
    held = Assignment.objects.select_related("rater__user").get(item__study=study)
    client.force_login(held.rater.user)

    def post_page():
        return client.post(reverse("studies:rate", args=[held.pk]), {"bias_presence": "no_bias"}, follow=True)

    _, response, _ = race(lambda: withdraw_assignment(assignment=Assignment.objects.get(pk=held.pk)), post_page)

    assert not Rating.objects.exists()
    assert response.redirect_chain[-1][0] == reverse("studies:queue")
    assert "This item was taken back from you meanwhile" in response.content.decode()


def test_an_item_never_counts_more_ratings_than_configured_after_many_racing_withdrawals():
    """Six items; each physician submits while a coordinator withdraws, all at once on separate connections;
    whatever wins, the export never counts two ratings of one item."""
    study, team = physician_study(n_items=6)
    pages = [as_the_page_read_it(a) for a in Assignment.objects.filter(item__study=study)]
    barrier = threading.Barrier(len(pages) * 2)
    errors: list[Exception] = []

    def act(fn):
        try:
            barrier.wait()
            fn()
        except services.StaleTransition:
            pass
        except Exception as error:
            errors.append(error)
        finally:
            connections.close_all()

    threads = []
    for page in pages:
        threads.append(threading.Thread(target=act, args=(lambda p=page: withdraw_assignment(
            assignment=Assignment.objects.get(pk=p.pk)),)))  # fmt: skip
        threads.append(threading.Thread(target=act, args=(lambda p=page: submit_rating(
            assignment=p, values=NO_BIAS, active_seconds=1),)))  # fmt: skip
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)

    assert errors == []
    assign_study(study=study, pool_id=team[0].pool_id)
    for assignment in (
        Assignment.objects.filter(item__study=study).exclude(status="withdrawn").exclude(status="submitted")
    ):
        submit_rating(assignment=assignment, values=NO_BIAS, active_seconds=1)
    counts = counted_per_item(study)
    assert set(counts.values()) == {1} and len(counts) == StudyItem.objects.filter(study=study).count()
