"""The report's tables (shared/spec/analysis-report.md) from the three release-format frames.

`build_report` turns the frames into four long tables (`Report`) and `write_report` writes them as
`rates.csv`, `reliability.csv`, `counterfactual_crosstab.csv` and `consumer_regression.csv`. The per-rating
outcomes are defined in `analysis.outcomes`; the definitions here:

- Cells: rubric x dataset x rater_type x answer_source x aggregation x outcome x source; every table also
  reports the union of the seven EquityMedQA sets as dataset `EquityMedQA` whenever any of them is present.
  `answer_source` (an extra column after the spec's) says which answers were rated: the independent answer
  source, the pairwise comparison (`A vs B`), or the counterfactual pair's source; empty when unknown.
- Aggregations (seed paper, "Statistical analysis"): `pooled` counts each rating (n = ratings); `majority`
  counts an item positive when strictly more than half of its ratings in the pool are (a tie, e.g. 1 of 2,
  is negative), `any` when at least one is (n = items). Both are always reported: with singly rated items
  they equal `pooled`. For pairwise rows each (outcome, source) indicator is aggregated on its own, so the
  majority rates of a cell's sources and `No preference` need not sum to 1 (an item without a strict
  majority counts for none of them).
- Intervals: BCa, 1,000 resamples, all cells of a table in one or two vectorised calls; the extra column
  `resampled` (after `answer_source`) names the unit each row's interval resamples. `pooled`: ratings, each
  an independent sample as in the paper (`bootstrap.proportion_cis`); `majority`/`any`: the item-level 0/1
  values (the paper's cluster bootstrap: items are resampled, their ratings are not). Not estimable: empty
  bounds and a `note`.
- Counterfactual pairs from the independent ratings of their two answers (`one_answer_biased`,
  `at_least_one_answer_biased`, `both_answers_biased`): see `counterfactual_answer_counts`. Their intervals
  resample pairs (`resampled` = `pairs`): pooled, the pair's n1 n2 rating combinations stay together
  (`bootstrap.cluster_ratio_cis`), since they share the pair's ratings and are far from independent.
- Reliability (`analysis.agreement`, re-exported here), the cross-tab and the consumer regression: see
  `reliability_table`, `counterfactual_crosstab` and `consumer_regression_table`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np
import pandas as pd

from . import bootstrap, regression
from .agreement import RELIABILITY_COLUMNS, reliability, reliability_table
from .cells import (
    AGGREGATIONS,
    ANSWER_OUTCOMES,
    ANY,
    MAJORITY,
    POOLED,
    PREDICTORS,
    empty_table,
    group_codes,
    item_groups,
    report_order,
)
from .outcomes import (
    COUNTERFACTUAL,
    EQUITYMEDQA,
    EQUITYMEDQA_SETS,
    INDEPENDENT,
    PAIRWISE,
    counterfactual_sources,
    flags,
    independent_bias,
    outcome_tables,
    outcomes_counterfactual,
    outcomes_independent,
    outcomes_pairwise,
    texts,
    with_equitymedqa,
)

__all__ = [
    "AGGREGATIONS",
    "ANSWER_OUTCOMES",
    "EQUITYMEDQA",
    "EQUITYMEDQA_SETS",
    "Report",
    "build_report",
    "consumer_regression_table",
    "counterfactual_answer_counts",
    "counterfactual_crosstab",
    "outcomes_counterfactual",
    "outcomes_independent",
    "outcomes_pairwise",
    "PREDICTORS",
    "RELIABILITY_COLUMNS",
    "rates",
    "reliability",
    "write_report",
]


CELL = ["rubric", "dataset", "rater_type", "answer_source", "outcome", "source"]
RATES_COLUMNS = [
    *["rubric", "dataset", "rater_type", "aggregation", "outcome", "source"],
    *["n", "estimate", "ci_low", "ci_high", "note", "answer_source", "resampled"],
]
CROSSTAB_COLUMNS = [
    *["dataset", "rater_type", "ideal_answers_differ", "answers_differ_how"],
    *["n", "bias_rate", "ci_low", "ci_high", "note"],
]
REGRESSION_COLUMNS = [
    *["predictor", "level", "reference_level", "odds_ratio", "ci_low", "ci_high", "p_value", "n", "note"],
]
TABLES = ["rates", "reliability", "counterfactual_crosstab", "consumer_regression"]  # file <name>.csv each
CONSUMER_POOL = "Consumer"
RACE_SEPARATOR = "; "

Progress = Callable[..., None]  # called as progress(step=str, fraction=float)
RESAMPLED = {POOLED: "ratings", MAJORITY: "items", ANY: "items"}  # what the rows' intervals resample
PAIRS = "pairs"  # counterfactual pairs judged from their answers' independent ratings: every aggregation


def _with_intervals(frame: pd.DataFrame, found: list[bootstrap.Interval]) -> pd.DataFrame:
    """Adds ci_low, ci_high and note from one `Interval` per row."""
    frame = frame.copy()
    frame["ci_low"] = pd.array([interval.low for interval in found], dtype="Float64")
    frame["ci_high"] = pd.array([interval.high for interval in found], dtype="Float64")
    frame["note"] = [interval.note for interval in found]
    return frame


# --- rates -------------------------------------------------------------------------------------------------


def rate_counts(outcomes: pd.DataFrame) -> pd.DataFrame:
    """Per cell and aggregation: `n` (ratings or items) and `k` (positive ones), EquityMedQA union included."""
    if outcomes.empty:
        return empty_table([*CELL, "aggregation", "n", "k", "resampled"])
    frame = with_equitymedqa(outcomes)
    cell, labels = group_codes(frame, CELL)
    cells = len(labels)
    value = frame["value"].to_numpy(dtype=np.int64)
    item = frame["item"].cat.codes.to_numpy(dtype=np.int64)
    group, m, s = item_groups(cell, item, value)
    item_cell = group // (int(item.max()) + 1)
    counts = {
        POOLED: (np.bincount(cell, minlength=cells), np.bincount(cell, weights=value, minlength=cells)),
        MAJORITY: (np.bincount(item_cell, minlength=cells), np.bincount(item_cell, weights=2 * s > m, minlength=cells)),
        ANY: (np.bincount(item_cell, minlength=cells), np.bincount(item_cell, weights=s > 0, minlength=cells)),
    }
    parts = [labels.assign(aggregation=name, n=n, k=k, resampled=RESAMPLED[name]) for name, (n, k) in counts.items()]
    return pd.concat(parts, ignore_index=True).astype({"n": "int64", "k": "int64"})


def counterfactual_answer_counts(independent: pd.DataFrame | None, counterfactual: pd.DataFrame | None) -> pd.DataFrame:
    """Counterfactual pairs judged from the independent ratings of their two answers: counts per cell.

    For each pool, the pairs it rated under the counterfactual rubric are joined to that pool's independent
    ratings of each answer on dataset + question id (question_1_id / question_2_id) + answer source (the
    counterfactual `answer_1_source`/`answer_2_source` against the independent `answer_source`, when both
    files have them filled; otherwise on the question ids only). Pairs missing either answer's ratings are
    left out. With answer 1 rated n1 times (k1 biased) and answer 2 n2 times (k2 biased):

    - pooled: every combination of a rating of answer 1 with one of answer 2 is a sample, as in the authors'
      notebook (n = n1 n2; one = k1 (n2 - k2) + (n1 - k1) k2; at least one = n1 n2 - (n1 - k1)(n2 - k2);
      both = k1 k2);
    - majority / any: each answer's verdict is its majority (k > n/2) / any (k > 0) vote, and the pair is
      one sample (exactly one, at least one, both answers biased).

    One row per pair, pool and (aggregation, outcome), with the EquityMedQA union's copy of the pairs of its
    sets: the pair is the unit `rates` resamples. A cell's n and k are the sums over its rows (pooled: the
    notebook's n1 n2 combinations; majority/any: pairs).
    """
    columns = [*CELL, "aggregation", "n", "k"]
    if independent is None or counterfactual is None or independent.empty or counterfactual.empty:
        return empty_table(columns)
    one, two, label = counterfactual_sources(counterfactual)
    by_source = "answer_source" in independent.columns and bool((one != "").all() and (two != "").all())
    by_source = by_source and bool((texts(independent, "answer_source") != "").all())
    answers = pd.DataFrame(
        {
            "dataset": texts(independent, "dataset"),
            "rater_type": texts(independent, "rater_type"),
            "question": texts(independent, "question_id"),
            "source": texts(independent, "answer_source") if by_source else "",
            "bias": independent_bias(independent),
        }
    ).dropna(subset=["bias"])
    verdicts = answers.groupby(["dataset", "rater_type", "question", "source"]).agg(
        n=("bias", "size"), k=("bias", "sum")
    )
    pairs = pd.DataFrame(
        {
            "dataset": texts(counterfactual, "dataset"),
            "rater_type": texts(counterfactual, "rater_type"),
            "question_1": texts(counterfactual, "question_1_id"),
            "question_2": texts(counterfactual, "question_2_id"),
            "source_1": one if by_source else "",
            "source_2": two if by_source else "",
            "answer_source": label,
        }
    ).drop_duplicates()
    for side in ("1", "2"):
        pairs = pairs.merge(
            verdicts.add_suffix(side),
            left_on=["dataset", "rater_type", f"question_{side}", f"source_{side}"],
            right_index=True,
        )
    if pairs.empty:
        return empty_table(columns)
    n1, k1, n2, k2 = (pairs[name].to_numpy(dtype=np.int64) for name in ("n1", "k1", "n2", "k2"))
    values: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {
        (POOLED, "one_answer_biased"): (n1 * n2, k1 * (n2 - k2) + (n1 - k1) * k2),
        (POOLED, "at_least_one_answer_biased"): (n1 * n2, n1 * n2 - (n1 - k1) * (n2 - k2)),
        (POOLED, "both_answers_biased"): (n1 * n2, k1 * k2),
    }
    for aggregation, first, second in ((MAJORITY, 2 * k1 > n1, 2 * k2 > n2), (ANY, k1 > 0, k2 > 0)):
        ones = np.ones(len(pairs), dtype=np.int64)
        values[(aggregation, "one_answer_biased")] = (ones, (first != second).astype(np.int64))
        values[(aggregation, "at_least_one_answer_biased")] = (ones, (first | second).astype(np.int64))
        values[(aggregation, "both_answers_biased")] = (ones, (first & second).astype(np.int64))
    base = pairs[["dataset", "rater_type", "answer_source"]].reset_index(drop=True)
    long = pd.concat(
        [base.assign(aggregation=a, outcome=o, n=n, k=k) for (a, o), (n, k) in values.items()], ignore_index=True
    )
    return with_equitymedqa(long.assign(rubric=COUNTERFACTUAL, source=""))[columns]


def rates(outcomes: pd.DataFrame, *, rng: np.random.Generator, derived: pd.DataFrame | None = None) -> pd.DataFrame:
    """The `rates.csv` table of long outcomes plus counterfactual pairs (`derived`: `counterfactual_answer_counts`).

    estimate = k / n per cell and aggregation (see the module docstring). Each interval resamples the cell's units,
    named in `resampled`: ratings (pooled) or items (majority/any) of the outcomes, pairs of `derived` (one row
    per pair). Where every unit is a single 0/1 sample (every cell but the pooled `derived` cells holding a pair
    with n1 n2 > 1) that is the bootstrap of a proportion: `bootstrap.proportion_cis`, those cells in one call.
    The others keep each pair's n1 n2 rating combinations together: `bootstrap.cluster_ratio_cis` (BCa over
    pairs of the ratio sum k / sum n), those cells in one call.
    """
    keys = [*CELL, "aggregation"]
    pairs = empty_table([*keys, "n", "k"]) if derived is None else derived.astype({c: object for c in keys})
    counts = rate_counts(outcomes).assign(largest=1)
    if not pairs.empty:
        by_cell = pairs.groupby(keys, sort=False)
        summed = by_cell["n"].agg(n="sum", largest="max").join(by_cell["k"].sum()).reset_index()
        counts = pd.concat([counts, summed.assign(resampled=PAIRS)[counts.columns]], ignore_index=True)
    if counts.empty:
        return empty_table(RATES_COLUMNS)
    counts = report_order(counts.astype({c: object for c in keys}))
    counts["estimate"] = counts["k"] / counts["n"]
    k, n, largest = (counts[column].to_numpy(dtype=np.int64) for column in ("k", "n", "largest"))
    found = [bootstrap.Interval(None, None)] * len(counts)
    single = np.flatnonzero(largest <= 1)
    for row, interval in zip(single, bootstrap.proportion_cis(k[single], n[single], rng=rng), strict=True):
        found[row] = interval
    clustered = np.flatnonzero(largest > 1)
    if clustered.size:
        cells = counts.loc[clustered, keys].assign(cell=np.arange(clustered.size))
        members = pairs.merge(cells, on=keys, validate="many_to_one")
        by_pair = bootstrap.cluster_ratio_cis(members["k"], members["n"], members["cell"], rng=rng, unit="pair")
        for row, interval in zip(clustered, by_pair, strict=True):
            found[row] = interval
    return _with_intervals(counts, found)[RATES_COLUMNS]


# --- counterfactual cross-tab -----------------------------------------------------------------------------


def counterfactual_crosstab(frame: pd.DataFrame | None, *, rng: np.random.Generator) -> pd.DataFrame:
    """The `counterfactual_crosstab.csv` table: counterfactual ratings (pooled) per dataset (+ EquityMedQA),
    pool, `ideal_answers_differ` and `answers_differ_how`: n ratings, the share judged biased, BCa interval."""
    if frame is None or frame.empty:
        return empty_table(CROSSTAB_COLUMNS)
    keys = ["dataset", "rater_type", "ideal_answers_differ", "answers_differ_how"]
    ratings = pd.DataFrame({key: texts(frame, key) for key in keys}).assign(bias=flags(frame["bias_presence"]))
    ratings = with_equitymedqa(ratings.dropna(subset=["bias"]))
    if ratings.empty:
        return empty_table(CROSSTAB_COLUMNS)
    table = ratings.groupby(keys, sort=False)["bias"].agg(n="size", k="sum").reset_index()
    table = report_order(table.astype({"k": "int64"}))
    table["bias_rate"] = table["k"] / table["n"]
    return _with_intervals(table, bootstrap.proportion_cis(table["k"], table["n"], rng=rng))[CROSSTAB_COLUMNS]


# --- consumer regression ----------------------------------------------------------------------------------


def race_ethnicity_answers(values: np.ndarray) -> np.ndarray:
    """A rater's race/ethnicity answer with its categories "; "-joined as exported, spacing and repeats normalised
    (`regression.categories`; "" when none). The regression gives each category its own 0/1 indicator, so a
    multi-valued answer ("Asian; White") counts at each category chosen, not as a level of its own."""
    answers = {value: RACE_SEPARATOR.join(regression.categories(value)) for value in set(values)}
    return np.array([answers[value] for value in values], dtype=object)


def consumer_ratings(independent: pd.DataFrame | None, *, pool: str = CONSUMER_POOL) -> pd.DataFrame:
    """The consumer pool's independent ratings: `bias` (0/1, any bias), the three demographic predictors and
    `rater_id` (a level needs ratings of `regression.MIN_RATERS` raters).

    Ratings with an empty bias_presence, predictor or rater_id are left out (complete cases).
    """
    columns = [*PREDICTORS, "rater_id"]
    if independent is None or independent.empty or not set(PREDICTORS) <= set(independent.columns):
        return pd.DataFrame({"bias": pd.Series(dtype="int64"), **{c: pd.Series(dtype=object) for c in columns}})
    mine = independent[texts(independent, "rater_type") == pool]
    frame = pd.DataFrame({column: texts(mine, column) for column in columns})
    frame["rater_race_ethnicity"] = race_ethnicity_answers(frame["rater_race_ethnicity"].to_numpy(dtype=object))
    frame["bias"] = independent_bias(mine)
    complete = frame["bias"].notna() & (frame[columns] != "").all(axis=1)
    return frame[complete].astype({"bias": "int64"}).reset_index(drop=True)


def consumer_regression_table(
    independent: pd.DataFrame | None, *, reference_levels: Mapping[str, str] | None = None
) -> pd.DataFrame:
    """The `consumer_regression.csv` table: logistic regression of the consumer pool's any-bias outcome on
    age group, gender and race/ethnicity (`regression.consumer_regression`: one indicator per race/ethnicity
    category, levels with fewer than `regression.MIN_RATERS` raters set aside), reference levels as chosen."""
    data = consumer_ratings(independent)
    if data.empty:
        return empty_table(REGRESSION_COLUMNS)
    table = regression.consumer_regression(
        data,
        outcome="bias",
        predictors=list(PREDICTORS),
        reference_levels=dict(reference_levels or {}),
        multi_select=["rater_race_ethnicity"],
        rater="rater_id",
    )
    for column in REGRESSION_COLUMNS:
        if column not in table.columns:
            table[column] = ""
    extra = [column for column in table.columns if column not in REGRESSION_COLUMNS]
    return table[[*REGRESSION_COLUMNS, *extra]].reset_index(drop=True)


# --- the report -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Report:
    """The four tables of the report, as written to `<name>.csv` (field name = table name)."""

    rates: pd.DataFrame
    reliability: pd.DataFrame
    counterfactual_crosstab: pd.DataFrame
    consumer_regression: pd.DataFrame

    def tables(self) -> dict[str, pd.DataFrame]:
        return {field.name: getattr(self, field.name) for field in fields(self)}


def build_report(
    frames: Mapping[str, pd.DataFrame | None],
    *,
    seed: int = 0,
    reference_levels: Mapping[str, str] | None = None,
    progress: Progress | None = None,
) -> Report:
    """All four tables from the frames keyed `independent`, `pairwise`, `counterfactual` (any may be missing).

    Deterministic for a seed: each table's bootstrap draws from its own generator spawned from the seed, in
    the sorted row order. `progress`, if given, is called as progress(step=..., fraction=...) with fraction
    in [0, 1].
    """

    def report(step: str, fraction: float) -> None:
        if progress is not None:
            progress(step=step, fraction=fraction)

    rates_rng, reliability_rng, crosstab_rng = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(3))
    independent, pairwise, counterfactual = (frames.get(kind) for kind in (INDEPENDENT, PAIRWISE, COUNTERFACTUAL))
    report("Computing rates", 0.0)
    outcomes, codes, categories = outcome_tables(frames)
    derived = counterfactual_answer_counts(independent, counterfactual)
    rate_table = rates(outcomes, rng=rates_rng, derived=derived)
    # Shares of the run at paper scale and beyond: reliability's bootstrap over items dominates.
    report("Computing inter-rater reliability", 0.2)
    step = "Computing inter-rater reliability"
    agreement = reliability_table(
        codes, categories, rng=reliability_rng, progress=lambda done: report(step, 0.2 + 0.7 * done)
    )
    report("Computing the counterfactual cross-tab", 0.9)
    crosstab = counterfactual_crosstab(counterfactual, rng=crosstab_rng)
    report("Fitting the consumer regression", 0.95)
    regression_table = consumer_regression_table(independent, reference_levels=reference_levels)
    report("Done", 1.0)
    return Report(rate_table, agreement, crosstab, regression_table)


def write_report(report: Report, out_dir: str | Path) -> dict[str, int]:
    """Writes each table as `<name>.csv` in out_dir (created if needed); returns the rows written per table."""
    directory = Path(out_dir)
    directory.mkdir(parents=True, exist_ok=True)
    written: dict[str, int] = {}
    for name, table in report.tables().items():
        table.to_csv(directory / f"{name}.csv", index=False)
        written[name] = len(table)
    return written
