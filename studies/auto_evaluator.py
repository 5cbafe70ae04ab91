"""BiasMedQA's auto-evaluator as a judge: the released labels beside a judge's, answer by answer
(studies/DESIGN.md, "Judges"; ../shared/datasets/biasmedqa/SOURCE.md, "Auto-evaluator prompt").

The rubric is `rubric_defaults.AUTO_EVALUATOR` (one question, `is_correct`: True, False or NR) and the judge's
recipe the prompt itself (`studies/definitions/biasmedqa-auto-evaluator.yaml`). The import stores each released
label as the score `released` v1 with the label's origin (`first_char_match`, or `auto_eval_gpt-3.5` for the
responses gpt-3.5-turbo-0613 labelled); `label_pairs` lines those up with the judge's ratings of the same
answers. The agreement statistics are computed elsewhere (analysis): the study file names the same labels as a
reference (`references`), which the judge report and page set beside the judge (analysis/judge_references.py).
"""

from dataclasses import dataclass

from scoring.models import Score
from scoring.scorers import RELEASED

from .models import Judge, JudgeRating, Study

AUTO_EVAL_LABELS = "auto_eval_gpt-3.5"  # the released labels the auto-evaluator gave (is_correct_source)
FIELD = "is_correct"


@dataclass(frozen=True)
class LabelPair:
    answer: int
    item: int
    repeat: int
    released: str  # True, False, NR (or "" when the release has none)
    judged: str


def label_pairs(study: Study, judge: Judge, *, label_source: str = AUTO_EVAL_LABELS) -> list[LabelPair]:
    """For every answer of the study's items that has both, the released label of that origin and the judge's
    `is_correct` (one pair per repeat), in item and repeat order."""
    ratings = (
        JudgeRating.objects.filter(judge=judge, item__study=study, item__answer__isnull=False)
        .order_by("item_id", "repeat")
        .values_list("item__answer_id", "item_id", "repeat", "values")
    )
    released = dict(
        Score.objects.filter(
            scorer=RELEASED, version=1, value__label_source=label_source, answer_id__in=study.items.values("answer_id")
        ).values_list("answer_id", "value__label")
    )
    return [
        LabelPair(answer, item, repeat, released[answer], values.get(FIELD) or "")
        for answer, item, repeat, values in ratings.iterator()
        if answer in released
    ]
