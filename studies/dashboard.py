"""The figures on the study pages, each from a few aggregate queries: never one query per item or rater.

Progress is counted on slots (one per rating an item needs from a pool), so a withdrawn assignment, whose
slot is free again, no longer counts as done even though its rating is kept.
"""

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from statistics import median

from django.db.models import Count, F, IntegerField, Max, OuterRef, Q, Subquery, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from raters.models import RaterProfile

from .answer_progress import AnswerProgress, answer_progress
from .judge_progress import JudgeProgress, judge_progress
from .models import Assignment, Rating, Study, StudyItem, StudyPool

SUBMITTED = Assignment.Status.SUBMITTED
WITHDRAWN = Assignment.Status.WITHDRAWN


def percent(done: int, needed: int) -> int:
    """Whole percent, rounded down: 100 only when nothing is missing."""
    return 100 * done // needed if needed else 0


def duration_text(seconds: float | None) -> str:
    """Durations as people read them: 45 s, 12 min, 3 h 5 min (wall times run from seconds to days)."""
    if seconds is None:
        return "—"
    if seconds < 120:
        return f"{round(seconds)} s"
    minutes = round(seconds / 60)
    if minutes < 120:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


# --- The list of studies ---------------------------------------------------------------------------


def studies_with_progress() -> list[Study]:
    """Every study with its item count, ratings done / needed (slots), its answers' progress (`answer_progress`), its
    judges' (`judge_progress`) and percent done: of its ratings, or for a study read by scorers only, of its answers
    scored. Four queries."""
    # Ratings kept in the study, whether or not a slot asked for them (a ratings release imported for re-analysis
    # has ratings but no slots): a subquery, so that the slots' join does not multiply them.
    kept = Rating.objects.filter(is_current=True, assignment__item__study=OuterRef("pk")).exclude(
        assignment__status=Assignment.Status.WITHDRAWN
    )
    studies = list(
        Study.objects.select_related("rubric_version__rubric").annotate(
            n_items=Count("items", distinct=True),
            ratings_needed=Count("items__slots"),
            ratings_done=Count("items__slots", filter=Q(items__slots__assignment__status=SUBMITTED)),
            ratings_kept=Coalesce(
                Subquery(kept.order_by().values("assignment__item__study").annotate(n=Count("id")).values("n")),
                0,
                output_field=IntegerField(),
            ),
        )
    )
    answers = answer_progress(studies)
    judges = judge_progress(studies, {study.pk: study.n_items for study in studies})
    for study in studies:
        study.answer_progress = answers[study.pk]
        study.judge_progress = judges[study.pk]
        if study.rubric_version_id is None:
            study.percent = study.answer_progress.percent
        else:
            study.percent = percent(study.ratings_done, study.ratings_needed)
    return studies


# --- Per pool ------------------------------------------------------------------------------------


@dataclass
class PoolProgress:
    study_pool: StudyPool
    items_complete: int  # every slot of the pool for the item has a submitted assignment
    items_partial: int
    items_untouched: int  # no submitted rating from this pool yet
    ratings_done: int
    ratings_needed: int
    free_slots: int  # ratings nobody holds: what "Assign" hands out

    @property
    def pool(self):
        return self.study_pool.pool

    @property
    def ratings_missing(self) -> int:
        return self.ratings_needed - self.ratings_done

    @property
    def percent(self) -> int:
        return percent(self.ratings_done, self.ratings_needed)


def pool_progress(study: Study) -> list[PoolProgress]:
    """Item and rating counts for each pool of the study, in two queries whatever the number of items."""
    return _pool_figures(study)[0]


def _pool_figures(study: Study) -> tuple[list[PoolProgress], int]:
    """(each pool's progress, the study's items), in two queries whatever the number of items.

    Each item gets, per pool, its number of slots and of slots with a submitted assignment (an inner
    GROUP BY item); the outer aggregate counts items by state and sums slots per pool.
    """
    study_pools = list(study.study_pools.select_related("pool").order_by("pool__name"))
    if not study_pools:
        return [], study.items.count()
    per_item = {}
    for sp in study_pools:
        in_pool = Q(slots__pool_id=sp.pool_id)
        per_item[f"needed_{sp.pool_id}"] = Count("slots", filter=in_pool)
        per_item[f"done_{sp.pool_id}"] = Count("slots", filter=in_pool & Q(slots__assignment__status=SUBMITTED))
        per_item[f"free_{sp.pool_id}"] = Count("slots", filter=in_pool & Q(slots__assignment__isnull=True))
    totals = {"items": Count("pk")}
    for sp in study_pools:
        needed, done, free = f"needed_{sp.pool_id}", f"done_{sp.pool_id}", f"free_{sp.pool_id}"
        totals[f"complete_{sp.pool_id}"] = Count("pk", filter=Q(**{f"{needed}__gt": 0, done: F(needed)}))
        totals[f"untouched_{sp.pool_id}"] = Count("pk", filter=Q(**{done: 0}))
        totals[f"sum_{needed}"] = Coalesce(Sum(needed), 0)
        totals[f"sum_{done}"] = Coalesce(Sum(done), 0)
        totals[f"sum_{free}"] = Coalesce(Sum(free), 0)
    row = StudyItem.objects.filter(study=study).annotate(**per_item).aggregate(**totals)
    progress = []
    for sp in study_pools:
        complete, untouched = row[f"complete_{sp.pool_id}"], row[f"untouched_{sp.pool_id}"]
        progress.append(
            PoolProgress(
                study_pool=sp,
                items_complete=complete,
                items_partial=row["items"] - complete - untouched,
                items_untouched=untouched,
                ratings_done=row[f"sum_done_{sp.pool_id}"],
                ratings_needed=row[f"sum_needed_{sp.pool_id}"],
                free_slots=row[f"sum_free_{sp.pool_id}"],
            )
        )
    return progress, row["items"]


# --- Per rater -----------------------------------------------------------------------------------


@dataclass
class RaterProgress:
    profile: RaterProfile
    assigned: int  # held now: not withdrawn
    done: int
    withdrawn: int
    last_submitted_at: datetime | None
    last_viewed_at: datetime | None
    attention_failures: int
    active_days: int = 0  # calendar days with a submission
    median_active_seconds: float | None = None
    median_wall_seconds: float | None = None
    likely_dropped_out: bool = False

    @property
    def ratings_per_active_day(self) -> float | None:
        return self.done / self.active_days if self.active_days else None

    @property
    def median_active_text(self) -> str:
        return duration_text(self.median_active_seconds)

    @property
    def median_wall_text(self) -> str:
        return duration_text(self.median_wall_seconds)

    @property
    def last_activity(self) -> datetime | None:
        moments = [self.last_submitted_at, self.last_viewed_at, self.profile.consented_at]
        return max((m for m in moments if m is not None), default=None)


def study_raters(study: Study):
    """Raters with an assignment in the study (even withdrawn), and the raters of its pools who sign in with
    their own account (those "Assign" hands items to, and those who dropped out). Panel participants and
    imported raters belong to a study through their assignments only."""
    in_study = Assignment.objects.filter(item__study=study).values("rater_id")
    pools = study.study_pools.values("pool_id")
    signing_in = RaterProfile.objects.signing_in().filter(pool_id__in=pools).values("pk")
    return RaterProfile.objects.filter(Q(pk__in=in_study) | Q(pk__in=signing_in))


def rater_progress(study: Study, *, now: datetime | None = None) -> list[RaterProgress]:
    """One row per rater: counts and last activity (one aggregate query), medians of time per item and
    active days (one query over the study's current ratings), and whether a panel participant has likely
    dropped out: consented, not completed, and inactive for longer than the study's claim timeout."""
    now = now or timezone.now()
    mine = Q(assignments__item__study=study)
    failures = (
        Rating.objects.filter(
            assignment__rater=OuterRef("pk"),
            assignment__item__study=study,
            is_current=True,
            attention_check_passed=False,
        )
        .values("assignment__rater")
        .annotate(n=Count("pk"))
        .values("n")
    )
    profiles = (
        study_raters(study)
        .select_related("pool", "user")
        .annotate(
            n_assigned=Count("assignments", filter=mine & ~Q(assignments__status=WITHDRAWN)),
            n_done=Count("assignments", filter=mine & Q(assignments__status=SUBMITTED)),
            n_withdrawn=Count("assignments", filter=mine & Q(assignments__status=WITHDRAWN)),
            last_submitted_at=Max("assignments__submitted_at", filter=mine),
            last_viewed_at=Max("assignments__first_viewed_at", filter=mine),
            attention_failures=Coalesce(Subquery(failures, output_field=IntegerField()), 0),
        )
        .order_by("pool__name", "pseudonym")
    )
    rows = {
        p.pk: RaterProgress(
            profile=p,
            assigned=p.n_assigned,
            done=p.n_done,
            withdrawn=p.n_withdrawn,
            last_submitted_at=p.last_submitted_at,
            last_viewed_at=p.last_viewed_at,
            attention_failures=p.attention_failures,
        )
        for p in profiles
    }
    timings = _timings_by_rater(study)
    stale_before = now - timedelta(minutes=study.claim_timeout_minutes)
    for rater_id, row in rows.items():
        active, wall, days = timings.get(rater_id, ([], [], set()))
        row.median_active_seconds = median(active) if active else None
        row.median_wall_seconds = median(wall) if wall else None
        row.active_days = len(days)
        row.likely_dropped_out = _likely_dropped_out(row, stale_before)
    return list(rows.values())


def _timings_by_rater(study: Study) -> dict[int, tuple[list[float], list[float], set]]:
    """Time per item from the current ratings of items still counted (submitted, not withdrawn)."""
    timings: dict[int, tuple[list[float], list[float], set]] = defaultdict(lambda: ([], [], set()))
    ratings = (
        Rating.objects.filter(assignment__item__study=study, assignment__status=SUBMITTED, is_current=True)
        .order_by()  # the default ordering would join and sort through assignments and raters
        .values_list("assignment__rater", "active_seconds", "wall_seconds", "submitted_at")
    )
    for rater_id, active, wall, submitted_at in ratings.iterator(chunk_size=5000):
        entry = timings[rater_id]
        entry[0].append(active)
        entry[1].append(wall)
        entry[2].add(timezone.localdate(submitted_at))
    return timings


def _likely_dropped_out(row: RaterProgress, stale_before: datetime) -> bool:
    profile = row.profile
    if not profile.panel_participant_id or profile.consented_at is None:
        return False
    if profile.completed_at is not None or profile.dropped_out_at is not None:
        return False
    return row.last_activity is not None and row.last_activity < stale_before


# --- The whole dashboard -------------------------------------------------------------------------


@dataclass
class Dashboard:
    study: Study
    pools: list[PoolProgress]
    raters: list[RaterProgress]
    n_items: int
    answers: AnswerProgress
    judges: list[JudgeProgress]

    @property
    def dropped_out(self) -> list[RaterProgress]:
        return [r for r in self.raters if r.profile.dropped_out_at is not None]

    @property
    def likely_dropped_out(self) -> list[RaterProgress]:
        return [r for r in self.raters if r.likely_dropped_out]

    @property
    def attention_failures(self) -> int:
        return sum(r.attention_failures for r in self.raters)

    @property
    def ratings_done(self) -> int:
        return sum(p.ratings_done for p in self.pools)

    @property
    def ratings_needed(self) -> int:
        return sum(p.ratings_needed for p in self.pools)

    @property
    def percent(self) -> int:
        return percent(self.ratings_done, self.ratings_needed)


def study_dashboard(study: Study, *, now: datetime | None = None) -> Dashboard:
    pools, n_items = _pool_figures(study)
    return Dashboard(
        study=study,
        pools=pools,
        raters=rater_progress(study, now=now),
        n_items=n_items,
        answers=answer_progress([study])[study.pk],
        judges=judge_progress([study], {study.pk: n_items})[study.pk],
    )
