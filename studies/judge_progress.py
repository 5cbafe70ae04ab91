"""How far a study's judges are: per judge the study holds, its replies to the study's items (items x repeats
needed), the valid ones (ratings) and the failures. For every study at once in one aggregate query."""

from dataclasses import dataclass

from django.db.models import Count, F, Q, QuerySet

from .models import Judge, Study, StudyJudge


@dataclass(frozen=True)
class JudgeProgress:
    judge: Judge
    needed: int  # the study's items x the judge's repeats
    replied: int
    rated: int  # valid replies, stored as ratings

    @property
    def failed(self) -> int:
        return self.replied - self.rated

    @property
    def percent(self) -> int:
        """Whole percent of the replies needed, rounded down: 100 only when none is missing."""
        return 100 * self.replied // self.needed if self.needed else 0


def held_judges_with_counts() -> QuerySet[StudyJudge]:
    """Studies' judges with `replied` and `rated`: their replies to the study's own items (one judge may serve
    several studies), in name order; the API prefetches it as a study's `judges`."""
    of_study = Q(judge__replies__item__study_id=F("study_id"))
    return (
        StudyJudge.objects.select_related("judge__source")
        .annotate(
            replied=Count("judge__replies", filter=of_study),
            rated=Count("judge__replies", filter=of_study & Q(judge__replies__rating__isnull=False)),
        )
        .order_by("study_id", "judge__name")
    )


def judge_progress(studies: list[Study], n_items: dict[int, int]) -> dict[int, list[JudgeProgress]]:
    """Per study id, its judges' progress in name order; `n_items` gives each study's item count."""
    rows = held_judges_with_counts().filter(study_id__in=[study.pk for study in studies])
    progress: dict[int, list[JudgeProgress]] = {study.pk: [] for study in studies}
    for row in rows:
        needed = n_items.get(row.study_id, 0) * row.judge.repeats
        progress[row.study_id].append(JudgeProgress(row.judge, needed, row.replied, row.rated))
    return progress
