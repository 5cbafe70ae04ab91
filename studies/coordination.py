"""What coordinators do from the study pages: set a study up, lock it, record that a rater dropped out."""

from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from raters.models import RaterPool, RaterProfile

from .assignment import AssignmentError, build_items
from .models import Assignment, RubricKind, RubricVersion, Slot, Study, StudyPool


@dataclass(frozen=True)
class PoolSetting:
    pool: RaterPool
    replication: int
    items_per_rater: int | None = None


NO_ITEMS = {
    RubricKind.INDEPENDENT: "The chosen sources have no answers to these datasets' questions",
    RubricKind.PAIRWISE: "The two sources never answered the same question of these datasets",
    RubricKind.COUNTERFACTUAL: "The source did not answer both questions of any counterfactual pair of these datasets",
}


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
            raise AssignmentError(f"{NO_ITEMS[study.kind]}: there would be nothing to rate.")
    return study


def lock_study(*, study: Study) -> bool:
    """Lock for good: ratings can no longer be submitted or revised. False if it was already locked."""
    locked = Study.objects.filter(pk=study.pk, locked_at__isnull=True).update(locked_at=timezone.now())
    study.refresh_from_db(fields=["locked_at"])
    return bool(locked)


def mark_dropped_out(*, study: Study, profile: RaterProfile) -> int:
    """Record that a rater dropped out (they get no more items of any study) and give their unrated items
    of this study back to the pool; returns how many went back. Their ratings are kept."""
    with transaction.atomic():
        RaterProfile.objects.filter(pk=profile.pk, dropped_out_at__isnull=True).update(dropped_out_at=timezone.now())
        unrated = Assignment.objects.filter(
            item__study=study, rater=profile, status__in=[Assignment.Status.ASSIGNED, Assignment.Status.STARTED]
        )
        ids = list(unrated.select_for_update().values_list("pk", flat=True))
        Slot.objects.filter(assignment_id__in=ids).update(assignment=None)
        Assignment.objects.filter(pk__in=ids).update(status=Assignment.Status.WITHDRAWN)
    profile.refresh_from_db(fields=["dropped_out_at"])
    return len(ids)
