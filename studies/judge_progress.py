"""How far a study's judges are: per judge the study holds, the questions it was asked about the study's items
(items x repeats x display orders needed) that have a rating and those that failed (every reply invalid, no
attempts left: its call failed after replies), its replies (valid or not, retries included), and its engine
calls (`judge_kind`'s batch) pending, in flight and failed without a reply. For every study at once in one
aggregate query."""

from dataclasses import dataclass

from django.db.models import CharField, Count, F, IntegerField, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Cast, Coalesce, Concat

from engine.models import Call

from .judge_kind import KIND
from .judges import display_orders
from .models import Judge, Study, StudyJudge


@dataclass(frozen=True)
class JudgeProgress:
    judge: Judge
    needed: int  # the study's items x the judge's repeats x the display orders (two answers: both)
    replied: int  # replies stored, valid or not, an invalid reply's retries included
    rated: int  # questions with a valid reply, stored as their rating (one each)
    failed: int = 0  # questions whose replies were all invalid, no attempts left (asked again on the next submit)
    calls_pending: int = 0  # queued (or backing off after a passing error, or asked again after an invalid reply)
    calls_running: int = 0  # in flight
    calls_failed: int = 0  # failed for good without a reply: asked again when the judge is submitted again

    @property
    def answered(self) -> int:
        """Questions with an outcome: a rating or a recorded failure."""
        return self.rated + self.failed

    @property
    def percent(self) -> int:
        """Whole percent of the questions needed with an outcome, rounded down: 100 only when none is missing."""
        return 100 * self.answered // self.needed if self.needed else 0


def _calls(status: str, *, with_reply: bool | None = None) -> Coalesce:
    """How many of the (judge, study)'s batch calls have `status` (a correlated count on the batch index); with
    `with_reply`, only those whose result names a reply (True) or that have none (False)."""
    batch = Concat(Value("judge:"), Cast(OuterRef("judge_id"), CharField()), Value(":study:"),
                   Cast(OuterRef("study_id"), CharField()), output_field=CharField())  # fmt: skip
    counted = (
        Call.objects.filter(kind=KIND, batch=batch, status=status)
        .filter(Q() if with_reply is None else Q(result__isnull=not with_reply))
        .order_by()
        .values("kind")
        .annotate(n=Count("id"))
        .values("n")
    )
    return Coalesce(Subquery(counted, output_field=IntegerField()), 0)


def held_judges_with_counts() -> QuerySet[StudyJudge]:
    """Studies' judges with `replied` and `rated`: their replies to the study's own items (one judge may serve
    several studies) and the valid ones, `failed` (questions failed after invalid replies) and their calls
    `calls_pending`, `calls_running`, `calls_failed` (without a reply), in name order; the API prefetches it as
    a study's `judges`."""
    of_study = Q(judge__replies__item__study_id=F("study_id"))
    return (
        StudyJudge.objects.select_related("judge__source")
        .annotate(
            replied=Count("judge__replies", filter=of_study),
            rated=Count("judge__replies", filter=of_study & Q(judge__replies__rating__isnull=False)),
            calls_pending=_calls(Call.Status.PENDING),
            calls_running=_calls(Call.Status.RUNNING),
            failed=_calls(Call.Status.FAILED, with_reply=True),
            calls_failed=_calls(Call.Status.FAILED, with_reply=False),
        )
        .order_by("study_id", "judge__name")
    )


def judge_progress(studies: list[Study], n_items: dict[int, int]) -> dict[int, list[JudgeProgress]]:
    """Per study id, its judges' progress in name order; `n_items` gives each study's item count."""
    rows = held_judges_with_counts().filter(study_id__in=[study.pk for study in studies])
    progress: dict[int, list[JudgeProgress]] = {study.pk: [] for study in studies}
    by_id = {study.pk: study for study in studies}
    for row in rows:
        needed = n_items.get(row.study_id, 0) * row.judge.repeats * len(display_orders(by_id[row.study_id]))
        progress[row.study_id].append(JudgeProgress(row.judge, needed, row.replied, row.rated, row.failed,
                                                    row.calls_pending, row.calls_running,
                                                    row.calls_failed))  # fmt: skip
    return progress
