"""What coordinators do from the study pages: set a study up, lock it, record that a rater dropped out, take a
rater's open items back or move them all to another rater."""

from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from raters.models import RaterPool, RaterProfile

from .assignment import LOCKED, SOURCES, AssignmentError, build_items, reassign_assignment, withdraw_assignment
from .models import Assignment, RubricVersion, Slot, Study, StudyPool
from .transitions import StaleTransition, current_study_lock, hold_study_open


@dataclass(frozen=True)
class PoolSetting:
    pool: RaterPool
    replication: int
    items_per_rater: int | None = None


def create_study(
    *,
    name: str,
    description: str,
    rubric_version: RubricVersion,
    dataset_ids: list[int],
    source_ids: list[int],
    pools: list[PoolSetting],
) -> Study:
    """A study with its pools, its items (datasets x sources) and their slots; nothing is kept on failure."""
    with transaction.atomic():
        study = Study.objects.create(name=name, description=description, rubric_version=rubric_version)
        StudyPool.objects.bulk_create(
            StudyPool(study=study, pool=p.pool, replication=p.replication, items_per_rater=p.items_per_rater)
            for p in pools
        )
        if build_items(study=study, dataset_ids=dataset_ids, source_ids=source_ids) == 0:
            raise AssignmentError(f"{SOURCES[study.display][3]}: there would be nothing to rate.")
    return study


def lock_study(*, study: Study) -> bool:
    """Lock for good: ratings can no longer be submitted or revised. False if it was already locked.

    Takes the study row FOR UPDATE, so it waits for the ratings being submitted (they hold it FOR SHARE) and
    `locked_at` is set after the last of them: no rating is ever stored after `locked_at`.
    """
    with transaction.atomic():
        already = current_study_lock(study.pk) is not None
        if not already:
            Study.objects.filter(pk=study.pk).update(locked_at=timezone.now())
    study.refresh_from_db(fields=["locked_at"])
    return not already


def mark_dropped_out(*, study: Study, profile: RaterProfile) -> int:
    """Record that a rater dropped out (they get no more items of any study) and give their unrated items
    of this study back to the pool; returns how many went back. Their ratings are kept."""
    with transaction.atomic():
        hold_study_open(study.pk, locked_message=LOCKED)
        RaterProfile.objects.filter(pk=profile.pk, dropped_out_at__isnull=True).update(dropped_out_at=timezone.now())
        unrated = Assignment.objects.filter(
            item__study=study, rater=profile, status__in=[Assignment.Status.ASSIGNED, Assignment.Status.STARTED]
        )
        # Locked in id order and re-checked by PostgreSQL after any wait: an item rated meanwhile stays rated.
        ids = list(unrated.select_for_update(of=("self",)).order_by("pk").values_list("pk", flat=True))
        Slot.objects.filter(assignment_id__in=ids).update(assignment=None)
        Assignment.objects.filter(pk__in=ids).update(status=Assignment.Status.WITHDRAWN)
    profile.refresh_from_db(fields=["dropped_out_at"])
    return len(ids)


OPEN = (Assignment.Status.ASSIGNED, Assignment.Status.STARTED)


def _lock_open_items(study: Study, profile: RaterProfile) -> list[Assignment]:
    """The rater's unrated items of the study, locked in id order; PostgreSQL re-checks the status after any
    wait, so an item rated meanwhile is not among them (and stays rated)."""
    hold_study_open(study.pk, locked_message=LOCKED)
    held = Assignment.objects.filter(item__study=study, rater=profile, status__in=OPEN)
    ids = list(held.select_for_update(of=("self",)).order_by("pk").values_list("pk", flat=True))
    return list(Assignment.objects.filter(pk__in=ids).select_related("item", "rater").order_by("pk"))


def withdraw_open_items(*, study: Study, profile: RaterProfile) -> int:
    """Withdraw every item the rater holds unrated in this study, in one transaction, each through
    `withdraw_assignment` (its re-checks, the audit trail's rules); returns how many. The rater is not marked
    as dropped out (`mark_dropped_out` does that too)."""
    with transaction.atomic():
        items = _lock_open_items(study, profile)
        for assignment in items:
            withdraw_assignment(assignment=assignment, seen_status=assignment.status)
    return len(items)


def reassign_open_items(*, study: Study, profile: RaterProfile, to_rater: RaterProfile) -> int:
    """Move every item the rater holds unrated in this study to `to_rater`, each through `reassign_assignment`
    (same pool, assignable, not an author of the item, not holding it already), in one transaction: all of them
    or none (AssignmentError or StaleTransition names the first that cannot move). Returns how many moved."""
    with transaction.atomic():
        items = _lock_open_items(study, profile)
        for assignment in items:
            try:
                reassign_assignment(assignment=assignment, to_rater=to_rater)
            except (AssignmentError, StaleTransition) as error:
                raise type(error)(f"Nothing was moved. Item {assignment.item_id}: {error}") from error
    return len(items)
