"""Named analysis plans (DESIGN.md, "analysis plan"): which scores, grouped by which factors, by which statistic.

A plan is data: `analysis.plan_loading` reads its outcomes from the database (one per answer: the first scorer
in `scorers` that scored it, at its highest version), `compute` turns them into the plan's long table, `figure`
draws it. `analyze` and analysis runs write each plan's table as `table` (CSV) when the database holds its
scores. Pure: no Django.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

import pandas as pd

from . import choice_accuracy, plots


@dataclass(frozen=True, eq=False)  # a plan is itself: hashed by identity
class AnalysisPlan:
    name: str
    title: str
    table: str  # the file name of its table, e.g. accuracy.csv
    statistic: Callable[..., pd.DataFrame]  # statistic(outcomes, reference_levels=...) -> the table
    scorers: tuple[str, ...]  # in order of preference: an answer counts with the first that scored it
    factors: tuple[str, ...]  # grouping columns; `source` is the answer source, the others factor levels
    reference_levels: Mapping[str, str]  # factor -> level a factor's absence means (and drops are taken from)
    plot: Callable[..., bytes] | None = None  # plot(table, fmt=...) -> SVG/PNG bytes
    run_scorers: tuple[str, ...] = ()  # scored first for answers that lack them (scoring.services.score_missing)
    multiple_choice: bool = True  # only answers to questions with a correct option (metadata `answer_idx`)
    correction: str | None = None  # for multiple comparisons; None: none applied
    description: str = ""  # how to read the table, shown under it

    @property
    def stem(self) -> str:
        """The table's file name without its extension: the plot is written as `<stem>.png`."""
        return self.table.rsplit(".", 1)[0]

    def compute(self, outcomes: pd.DataFrame) -> pd.DataFrame:
        return self.statistic(outcomes, reference_levels=self.reference_levels)

    def figure(self, table: pd.DataFrame, *, fmt: str = "svg") -> bytes:
        if self.plot is None:
            raise ValueError(f"the plan {self.name} has no plot")
        return self.plot(table, fmt=fmt)


BIASMEDQA_ACCURACY = AnalysisPlan(
    name="biasmedqa-accuracy",
    title="BiasMedQA: accuracy by bias and mitigation",
    table="accuracy.csv",
    statistic=choice_accuracy.accuracy_table,
    scorers=("released", "letter"),
    factors=("source", "bias", "mitigation"),
    reference_levels=choice_accuracy.REFERENCE_LEVELS,
    plot=plots.accuracy_figure,
    run_scorers=("letter",),
    description="Accuracy = correct / (answers − non-responses), with its 95% Wilson score interval; non-response "
    "rate = non-responses / answers; drops are taken from the same source's unbiased run (bias none) under the same "
    "mitigation, or without mitigation when that run does not exist (education). Scores: the released label where "
    "the answer has one, else the letter scorer's.",
)

PLANS: Mapping[str, AnalysisPlan] = MappingProxyType({plan.name: plan for plan in [BIASMEDQA_ACCURACY]})


def plan_for_table(file_name: str) -> AnalysisPlan | None:
    """The plan whose table is written as `file_name` (e.g. accuracy.csv), if any."""
    return next((plan for plan in PLANS.values() if plan.table == file_name), None)
