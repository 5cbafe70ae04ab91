"""Named analysis plans (DESIGN.md, "analysis plan"): which scores, grouped by which factors, by which statistic.

A plan is data: `analysis.plan_loading` reads its outcomes from the database (one per answer: the first scorer
in `scorers` that scored it, at its highest version; for a numeric plan, per outcome in `outcomes`, the number of
the first of that outcome's scorers that measured one), `compute` turns them into the plan's long table,
`figure` draws it. `analyze` and analysis runs write each plan's table as `table` (CSV) when the database holds its
scores. Pure: no Django.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import pandas as pd

from . import choice_accuracy, plots, run_summary
from .factor_comparisons import Comparison, forest_of, heat_of, heat_views, means_statistic, paired_statistic


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
    # A numeric plan: outcome name -> its scorers in order of preference (each answer counts with the first that
    # measured a number). The statistic then gets one row per (answer, outcome) with `outcome` and `value`.
    outcomes: Mapping[str, tuple[str, ...]] | None = None
    requires_levels: tuple[str, ...] = ()  # only answers to questions carrying these factor levels
    plot_alt: str = ""  # the plot's text alternative on the pages
    # compact views shown above the long table: table -> [(title, frame indexed by row label)]
    summary: Callable[[pd.DataFrame], list[tuple[str, pd.DataFrame]]] | None = None
    # the run page's summary, first on the page: the plan's headline estimates (analysis.run_summary)
    headline: Callable[[pd.DataFrame], list[run_summary.Headline]] | None = None
    # the range the table's values and intervals live in (probabilities: 0-1); the pages clip intervals to it
    bounds: tuple[float, float] | None = None
    # A plan comparing a factor's levels: what it compares, and its statistic made from that, so that a study can
    # compare another factor, block or correction with the same plan (plan_parameters.configure).
    comparison: Comparison | None = None
    statistic_of: Callable[[Comparison], Callable[..., pd.DataFrame]] | None = None
    # A plan over judge ratings (MEDIC's): its tables come from `analysis.services.medic_report`, not from scores,
    # so `compute_plans` leaves it out and `analyze --study` writes its `tables`; `factors` is its parameter.
    reads_judges: bool = False
    # A plan over scores and people's ratings together (ContextSRH's): its tables come from
    # `analysis.services.contextsrh_report`, so it is left out of `compute_plans` as MEDIC's is.
    reads_ratings_and_scores: bool = False
    tables: tuple[str, ...] = ()  # every file it writes, `table` first
    # A plan's own parameters (name -> default), which a study file may set (ContextSRH's `scorer` and `k`).
    options: Mapping[str, object] = MappingProxyType({})

    @property
    def numeric(self) -> bool:
        return self.outcomes is not None

    @property
    def own_report(self) -> bool:
        """Its tables come from a report of their own (MEDIC's, ContextSRH's), not from one outcome per answer."""
        return self.reads_judges or self.reads_ratings_and_scores

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
    headline=run_summary.accuracy_headlines,
    plot_alt="accuracy by bias with 95% Wilson intervals, one panel per mitigation",
    description="Accuracy = correct / (answers − non-responses), with its 95% Wilson score interval; non-response "
    "rate = non-responses / answers; drops are taken from the same source's unbiased run (bias none) under the same "
    "mitigation, or without mitigation when that run does not exist (education). Scores: the released label where "
    "the answer has one, else the letter scorer's.",
)

# Q-Pain (seed 002): race x gender compared over vignettes. The paper's level order: women first, races by name.
QPAIN_LEVELS = tuple(f"{race} {gender}" for gender in ("woman", "man") for race in ("Asian", "Black", "Hispanic",
                                                                                     "White"))  # fmt: skip
QPAIN_COMPARISON = Comparison(
    study="Q-Pain", compare=("race", "gender"), block="vignette", strata=("context",), level_order=QPAIN_LEVELS
)
QPAIN_OUTCOMES = MappingProxyType(
    {
        "p_no": ("released_p_no", "p_no"),  # P(No): the paper's outcome (denying pain treatment)
        "p_low": ("released_p_low", "p_low"),  # P(Low dose), among answers with a dose token
        "said_no": ("said_no",),  # the parsed answer (1 = No), for sources without log-probabilities
    }
)
_QPAIN_COMMON: dict[str, Any] = {
    "scorers": tuple(dict.fromkeys(name for names in QPAIN_OUTCOMES.values() for name in names)),
    "factors": ("source", "race", "gender", "context", "vignette"),
    "reference_levels": MappingProxyType({}),
    "run_scorers": ("p_no", "p_low", "said_no"),
    "multiple_choice": False,
    "outcomes": QPAIN_OUTCOMES,
    "requires_levels": ("race", "gender", "vignette"),
    "comparison": QPAIN_COMPARISON,
}
QPAIN_GROUP_MEANS = AnalysisPlan(
    name="qpain-group-means",
    title="Q-Pain: mean P(No) by race x gender and pain context",
    table="group_means.csv",
    statistic=means_statistic(QPAIN_COMPARISON),
    statistic_of=means_statistic,
    plot=heat_of("p_no"),
    plot_alt="heat map of the mean probability of No (denying pain treatment) by race x gender and pain context, "
    "one panel per source",
    summary=heat_views,
    bounds=(0.0, 1.0),
    description="Mean of each outcome per race x gender group over its variants (one answer per variant and "
    "source), overall (stratum all) and per pain context, with 95% t-intervals (on this page clipped to 0-1 and "
    "marked † where the t-interval of a few answers runs past them; the CSV keeps the t-interval). Outcomes: "
    "p_no = P(No) at the "
    "first answer token (the released value where imported, else read from the answer's log-probabilities; 0 when "
    "No is not among the top k); p_low = P(Low) at the dose token; said_no = 1 when the reply says No. Answers "
    "without what an outcome reads have no value and are left out.",
    **_QPAIN_COMMON,
)
QPAIN_PAIRED_TESTS = AnalysisPlan(
    name="qpain-paired-tests",
    title="Q-Pain: paired t-tests of the race x gender pairs",
    table="paired_tests.csv",
    statistic=paired_statistic(QPAIN_COMPARISON),
    statistic_of=paired_statistic,
    plot=forest_of("p_no"),
    plot_alt="forest plot of the difference in P(No) for each pair of groups, 95% and Bonferroni intervals, one "
    "panel per source (the CSV has every outcome)",
    correction="bonferroni",
    headline=run_summary.paired_headlines,
    description="For each pair A v B of race x gender groups, a paired two-sided t-test over the vignettes that "
    "have both (the pairing unit is the vignette): mean_diff = mean(A - B) in the outcome's units (a positive "
    "difference: A is more likely to be denied treatment), its 95% paired-t interval and the Bonferroni interval "
    "(1 - 0.05/m, m the pairs of the groups present: 28 for all eight), p adjusted by Bonferroni. Vignettes "
    "missing a group are dropped from that pair and listed. significance: * p < 0.05, ** p < 0.05/m, "
    "*** p < 0.0001.",
    **_QPAIN_COMMON,
)


def _from_judge_ratings(*args: object, **kwargs: object) -> pd.DataFrame:
    raise TypeError("MEDIC's tables come from judge ratings: analysis.services.medic_report(study)")


# MEDIC (seed 003, issue 20): judges' hallucinations, omissions and treatment categories per (answering source,
# judge model) pair; the statistics are analysis.medic's. The factors are those of the items' levels among these.
MEDIC_FACTORS = ("style", "grade", "descriptor", "gender", "race")
MEDIC = AnalysisPlan(
    name="medic",
    title="MEDIC: judges' findings per (answering source, judge model) pair",
    table="generalisation.csv",
    tables=("generalisation.csv", "judge_means.csv", "judge_agreement.csv"),
    statistic=_from_judge_ratings,
    scorers=(),
    factors=MEDIC_FACTORS,
    reference_levels=MappingProxyType({}),
    multiple_choice=False,
    reads_judges=True,
    description="Per (answering source, judge model) pair: mean hallucination and omission counts, their mean "
    "harm and the MANAGE / VISIT / RESOURCE rates by factor level with 95% t-intervals (judge_means.csv); Welch's "
    "test of every two levels, Holm-corrected per pair, and per effect in how many pairs it is significant and "
    "whether the directions agree (generalisation.csv); percent agreement and Cohen's kappa of every two judge "
    "models per category and their mean (judge_agreement.csv).",
)


def _from_scores_and_ratings(*args: object, **kwargs: object) -> pd.DataFrame:
    raise TypeError("ContextSRH's tables come from scores and people's ratings: analysis.services.contextsrh_report")


# ContextSRH (seed 004, issue 21): each group's context answers' similarity to the original answer (mean, % Win,
# Friedman / Wilcoxon over questions) and people's "correct for which groups"; the statistics are
# analysis.contextsrh's. `scorer`: the similarity's scorer; `k`: votes for a group to count as correct (None: a
# majority of the question's counted raters).
CONTEXTSRH = AnalysisPlan(
    name="contextsrh",
    title="ContextSRH: similarity to the original answer and people's verdicts, per group",
    table="similarity.csv",
    tables=("similarity.csv", "group_tests.csv", "human_agreement.csv"),
    statistic=_from_scores_and_ratings,
    scorers=("minilm_cosine",),
    factors=("age", "location", "sex"),
    reference_levels=MappingProxyType({}),
    multiple_choice=False,
    reads_ratings_and_scores=True,
    options=MappingProxyType({"scorer": "minilm_cosine", "k": None}),
    description="Per (answering source, attribute, group): the mean similarity of the context answers to the "
    "source's answer to the original question, % Win (the share of the attribute's questions where the group's "
    "answer is the most similar; ties count for every tied group), % Human (the share of the questions people "
    "judged whose original answer they marked correct for the group, by k votes) and % Win marked correct "
    "(similarity.csv); Friedman's test across the groups (Wilcoxon's signed-rank test for two), questions as "
    "blocks (group_tests.csv); Cohen's kappa and Krippendorff's alpha of people's question x group labels "
    "(human_agreement.csv).",
)

PLANS: Mapping[str, AnalysisPlan] = MappingProxyType(
    {plan.name: plan for plan in [BIASMEDQA_ACCURACY, QPAIN_GROUP_MEANS, QPAIN_PAIRED_TESTS, MEDIC, CONTEXTSRH]}
)
# The plans computed from scored answers (every plan but those with a report of their own: MEDIC's, ContextSRH's).
SCORE_PLANS: Mapping[str, AnalysisPlan] = MappingProxyType(
    {name: plan for name, plan in PLANS.items() if not plan.own_report}
)


def plan_for_table(file_name: str) -> AnalysisPlan | None:
    """The plan whose table is written as `file_name` (e.g. accuracy.csv), if any."""
    return next((plan for plan in SCORE_PLANS.values() if plan.table == file_name), None)
