"""An analysis plan's outcomes from the database: one row per scored answer, its factor levels and its outcome.

Answers belong to no study, so a plan reads every answer (of multiple-choice questions, for choice plans): its
source's name, each factor's level (the question's `levels`, else the answer's condition
`parameters["condition"]`, else the factor's reference level) and the outcome of the first of the plan's scorers
that scored it, at that scorer's highest version. Rows stream from one query in chunks of plain values (no
model instances): 216,288 BiasMedQA answers with two scores each load in seconds.
"""

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from datasets.models import Answer
from scoring.models import Score

from .choice_accuracy import OUTCOMES
from .plans import AnalysisPlan

CHUNK = 20_000
CHOICE_KEY = "answer_idx"  # a multiple-choice question's metadata names its correct option


def plan_answers(plan: AnalysisPlan):
    """The answers a plan may read (choice plans: answers to questions with a correct option)."""
    answers = Answer.objects.all()
    if plan.multiple_choice:
        answers = answers.filter(question__metadata__has_key=CHOICE_KEY)
    return answers


def score_answers(plan: AnalysisPlan) -> None:
    """Runs the plan's automatic scorers on its answers that lack their current version's score."""
    if not plan.run_scorers:
        return
    try:
        from scoring.services import score_missing
    except ModuleNotFoundError as error:  # the scorers land on another branch (issue 11); until then, none run
        if error.name != "scoring.services":
            raise
        return
    for scorer in plan.run_scorers:
        score_missing(scorer=scorer, answers=plan_answers(plan))


class _Codes:
    """Category codes of a column read row by row: each distinct value is kept once."""

    def __init__(self) -> None:
        self.codes: dict[Any, int] = {}
        self.values: list[str] = []

    def __call__(self, value: Any) -> int:
        code = self.codes.get(value)
        if code is None:
            code = self.codes[value] = len(self.values)
            self.values.append(str(value))
        return code

    def column(self, codes: Iterable[int]) -> pd.Categorical:
        return pd.Categorical.from_codes(np.fromiter(codes, dtype=np.int32), categories=pd.Index(self.values))


def load_outcomes(plan: AnalysisPlan) -> pd.DataFrame:
    """One row per scored answer of the plan: its `factors` columns and `outcome` (see the module docstring)."""
    levels = [factor for factor in plan.factors if factor != "source"]
    fields = ["answer_id", "scorer", "version", "outcome", "answer__source__name"]
    for factor in levels:
        fields += [f"answer__question__levels__{factor}", f"answer__parameters__condition__{factor}"]
    scores = Score.objects.filter(scorer__in=plan.scorers, outcome__in=OUTCOMES)
    if plan.multiple_choice:
        scores = scores.filter(answer__question__metadata__has_key=CHOICE_KEY)
    preference = {scorer: rank for rank, scorer in enumerate(plan.scorers)}
    answer_ids, ranks, versions, outcome_codes, source_codes = [], [], [], [], []
    outcome, source = _Codes(), _Codes()
    factor_codes: dict[str, _Codes] = {factor: _Codes() for factor in levels}
    factor_columns: dict[str, list[int]] = {factor: [] for factor in levels}
    defaults = {factor: plan.reference_levels.get(factor, "none") for factor in levels}
    for row in scores.order_by().values_list(*fields).iterator(chunk_size=CHUNK):
        answer_ids.append(row[0])
        ranks.append(preference[row[1]])
        versions.append(row[2])
        outcome_codes.append(outcome(row[3]))
        source_codes.append(source(row[4]))
        for index, factor in enumerate(levels):
            level = row[5 + 2 * index]
            if level is None:
                level = row[6 + 2 * index]
            factor_columns[factor].append(factor_codes[factor](defaults[factor] if level is None else level))
    frame = pd.DataFrame(
        {
            "answer_id": np.array(answer_ids, dtype=np.int64),
            "rank": np.array(ranks, dtype=np.int16),
            "version": np.array(versions, dtype=np.int32),
        }
    )
    for factor in plan.factors:
        if factor == "source":
            frame[factor] = source.column(source_codes)
        else:
            frame[factor] = factor_codes[factor].column(factor_columns[factor])
    frame["outcome"] = outcome.column(outcome_codes)
    # The preferred scorer's highest version of each answer.
    frame = frame.sort_values(["answer_id", "rank", "version"], ascending=[True, True, False], kind="stable")
    frame = frame.drop_duplicates("answer_id", keep="first")
    return frame[[*plan.factors, "outcome"]].reset_index(drop=True)


def plan_table(plan: AnalysisPlan) -> pd.DataFrame | None:
    """The plan's table over every answer in the database; None when no answer of the plan has a score."""
    if not plan_answers(plan).exists():
        return None
    score_answers(plan)
    outcomes = load_outcomes(plan)
    if outcomes.empty:
        return None
    return plan.compute(outcomes)


def table_csv(table: pd.DataFrame) -> str:
    """A plan table as CSV text: what `analyze` writes and a run stores (full precision, empty for NaN)."""
    return str(table.to_csv(index=False))
