"""How far a study's judges are: per judge the study holds, its replies to the study's items (items x repeats
needed), the valid ones (ratings) and the failures, and its engine calls (`judge_kind`'s batch) pending, in
flight and failed without a reply. For every study at once in one aggregate query."""

from dataclasses import dataclass

from django.db.models import CharField, Count, F, IntegerField, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Cast, Coalesce, Concat

from engine.models import Call

from .judge_kind import KIND
from .models import Judge, Study, StudyJudge


@dataclass(frozen=True)
class JudgeProgress:
    judge: Judge
    needed: int  # the study's items x the judge's repeats
    replied: int
    rated: int  # valid replies, stored as ratings
    calls_pending: int = 0  # queued (or backing off after a passing error)
    calls_running: int = 0  # in flight
    calls_failed: int = 0  # failed for good without a reply: asked again when the judge is submitted again

    @property
    def failed(self) -> int:
        return self.replied - self.rated

    @property
    def percent(self) -> int:
        """Whole percent of the replies needed, rounded down: 100 only when none is missing."""
        return 100 * self.replied // self.needed if self.needed else 0


def _calls(status: str) -> Coalesce:
    """How many of the (judge, study)'s batch calls have `status` (a correlated count on the batch index)."""
    batch = Concat(Value("judge:"), Cast(OuterRef("judge_id"), CharField()), Value(":study:"),
                   Cast(OuterRef("study_id"), CharField()), output_field=CharField())  # fmt: skip
    counted = (
        Call.objects.filter(kind=KIND, batch=batch, status=status)
        .order_by()
        .values("kind")
        .annotate(n=Count("id"))
        .values("n")
    )
    return Coalesce(Subquery(counted, output_field=IntegerField()), 0)


def held_judges_with_counts() -> QuerySet[StudyJudge]:
    """Studies' judges with `replied` and `rated`: their replies to the study's own items (one judge may serve
    several studies), and their calls `calls_pending`, `calls_running`, `calls_failed`, in name order; the API
    prefetches it as a study's `judges`."""
    of_study = Q(judge__replies__item__study_id=F("study_id"))
    return (
        StudyJudge.objects.select_related("judge__source")
        .annotate(
            replied=Count("judge__replies", filter=of_study),
            rated=Count("judge__replies", filter=of_study & Q(judge__replies__rating__isnull=False)),
            calls_pending=_calls(Call.Status.PENDING),
            calls_running=_calls(Call.Status.RUNNING),
            calls_failed=_calls(Call.Status.FAILED),
        )
        .order_by("study_id", "judge__name")
    )


def judge_progress(studies: list[Study], n_items: dict[int, int]) -> dict[int, list[JudgeProgress]]:
    """Per study id, its judges' progress in name order; `n_items` gives each study's item count."""
    rows = held_judges_with_counts().filter(study_id__in=[study.pk for study in studies])
    progress: dict[int, list[JudgeProgress]] = {study.pk: [] for study in studies}
    for row in rows:
        needed = n_items.get(row.study_id, 0) * row.judge.repeats
        progress[row.study_id].append(JudgeProgress(row.judge, needed, row.replied, row.rated, row.calls_pending,
                                                    row.calls_running, row.calls_failed))  # fmt: skip
    return progress
