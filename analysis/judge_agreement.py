"""Judges checked against people: agreement, the judge's place among people, consistency, an equity audit.

Input: a long frame of labels, one row per rating, with columns `item`, `rater`, `rater_kind` (`human` or
`judge`), `pool` (a human's pool; empty for judges), `value` (a binary or categorical label), and optionally
`field` (the rubric question; absent means one field) and factor columns (one per factor, the item's level,
e.g. `race` = `Black`). Several rows of one rater on one item (a judge's repeats) are collapsed to their most
frequent value, ties going to the value seen first (`label_matrix`).

Statistics (all from the confusion table of two raters over the items both rated):
- percent agreement: trace / total.
- Cohen's kappa: (p_o - p_e) / (1 - p_e), p_e from each rater's own marginals (Cohen, J. 1960, "A coefficient
  of agreement for nominal scales", Educ. Psychol. Meas. 20: 37-46); equals
  `statsmodels.stats.inter_rater.cohens_kappa` of the same table and `analysis.reliability.cohen_kappa`.
- macro-F1: the mean over classes of F1_c = 2 TP_c / (2 TP_c + FP_c + FN_c), the classes being those either
  rater used in the comparison (scikit-learn's `f1_score(average="macro")` convention; Sokolova & Lapalme 2009,
  "A systematic analysis of performance measures for classification tasks", Inf. Process. Manag. 45). For a
  binary field it is the mean of the positive and the negative class's F1, HealthBench's "balanced F1"
  (Arora et al. 2025, openai/simple-evals `healthbench_meta_eval.py`), whose per-class F1 is the harmonic mean of
  precision and recall: the same number whenever both are defined. F1 is symmetric in the two raters.
- Several pairs (a judge and each person of a pool; every two people of a pool who rated common items): with
  `pairing="mean"` (default) each pair's statistic, then their plain mean (pairs where it is undefined are left
  out); with `pairing="pooled"` one table summed over all pairs, HealthBench's way (its grader's F1 pools every
  (grader label, physician label) pair).
- Intervals: percentile bootstrap over items (Efron & Tibshirani 1993, §13.3): items drawn with replacement,
  every pair's ratings of an item kept together, all resamples computed at once as item weights x per-item
  confusion indicators (`analysis.reliability.bootstrap_weights`, `analysis.bootstrap.percentile_interval`).
- The equity audit: the judge against the people's majority label, agree / disagree per level, Pearson's
  chi-squared test of independence (levels x agree/disagree, `scipy.stats.chi2_contingency`, no continuity
  correction) per (field, factor), Holm-corrected (Holm 1979, `statsmodels.stats.multitest.multipletests`) over
  all the tests of one call (every field and factor of one judge and pool).

Never depends on Django, the study models or the engine: raters, pools, fields and levels arrive as data.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy import sparse
from scipy.stats import chi2_contingency
from statsmodels.stats.multitest import multipletests

from analysis.bootstrap import CONFIDENCE, RESAMPLES, percentile_interval
from analysis.reliability import bootstrap_weights

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

HUMAN, JUDGE = "human", "judge"
AgreementMetric = Literal["percent_agreement", "cohen_kappa", "macro_f1"]
AGREEMENT_METRICS: tuple[AgreementMetric, ...] = ("percent_agreement", "cohen_kappa", "macro_f1")
Pairing = Literal["mean", "pooled"]
AGREEMENT_COLUMNS = [
    *["study", "field", "rater_a", "rater_b", "rater_a_kind", "rater_b_kind", "level", "metric"],
    *["n_items", "estimate", "ci_low", "ci_high", "p_value", "flag"],
]
AUDIT_COLUMNS = [
    *["field", "factor", "level", "n_items", "n_ties", "agree", "disagree", "disagreement_rate"],
    *["p_value", "p_adjusted", "flag", "note"],
]
PLACE_COLUMNS = [
    *["study", "field", "judge", "pool", "metric", "n_people", "n_items", "judge_score", "people_mean"],
    *["people_min", "people_max", "rank", "percentile", "share_matched"],
]
CONSISTENCY_COLUMNS = [
    *["study", "field", "judge", "check", "n_items", "share", "mean_pairwise_agreement", "first_shown_share"],
]
REPEATS, DISPLAY_ORDER = "repeats", "display_order"
MIN_LEVEL_ITEMS = 10  # a level with fewer items is described, not tested
MIN_EXPECTED = 5.0  # the usual validity rule of the chi-squared approximation (Cochran 1954)
ALPHA = 0.05
CELLS_PER_BATCH = 1 << 22  # floats per bootstrap batch (32 MB): memory stays flat however many items

NO_PAIRS = "not estimable: no item rated by both sides"
UNDEFINED = "not estimable: the statistic is undefined on these items (e.g. one category throughout)"
FEW_LEVEL_ITEMS = f"not tested: fewer than {MIN_LEVEL_ITEMS} items with a majority label"
FEW_EXPECTED = f"not tested: an expected count below {MIN_EXPECTED:g}"
ONE_LEVEL = "not tested: fewer than 2 levels with enough items"


@dataclass(frozen=True)
class Agreement:
    """An agreement statistic with its percentile interval over items; None (never NaN) where not estimable."""

    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    n_items: int
    n_pairs: int
    note: str = ""


@dataclass(frozen=True)
class JudgePlace:
    """Where a judge stands among the people of a pool, each scored against the majority of the others.

    `people`: one row per person (rater, n_items, n_ties, person, judge): the person's and the judge's agreement
    with the majority of the other people on the same items. `judge_score` is the mean of the `judge` column;
    `rank` is 1 + the number of people scoring above it (1 = best); `percentile` the share of people below it,
    ties counting half, in percent; `share_matched` the share of people the judge equals or beats on their
    own items and majority (a paired comparison).
    """

    people: pd.DataFrame
    judge_score: float | None
    rank: int | None
    percentile: float | None
    share_matched: float | None
    metric: str


# --- labels -------------------------------------------------------------------------------------------------


def classes_of(values: pd.Series | Sequence[object]) -> list[object]:
    """The distinct labels, sorted (by their text when they cannot be compared)."""
    distinct = pd.unique(pd.Series(values).dropna())
    try:
        return sorted(distinct.tolist())
    except TypeError:
        return sorted(distinct.tolist(), key=str)


def label_matrix(
    ratings: pd.DataFrame, raters: Sequence[str], items: Sequence[object], classes: Sequence[object]
) -> IntArray:
    """Items x raters class codes (index into `classes`), -1 where the rater did not rate the item.

    Several rows of one rater on one item (repeats) give their most frequent value, ties going to the value
    seen first in the frame's order.
    """
    matrix = np.full((len(items), len(raters)), -1, dtype=np.int64)
    rows = ratings[ratings["rater"].isin(raters) & ratings["item"].isin(items) & ratings["value"].notna()]
    if rows.empty:
        return matrix
    code = pd.Categorical(rows["value"], categories=list(classes)).codes
    if np.any(code < 0):
        raise ValueError("a value is not one of `classes`")
    frame = pd.DataFrame({"item": rows["item"].to_numpy(), "rater": rows["rater"].to_numpy(), "code": code})
    counted = frame.groupby(["item", "rater", "code"], sort=False).size().rename("n").reset_index()
    modal = counted.sort_values("n", ascending=False, kind="stable").drop_duplicates(["item", "rater"])
    item_index = pd.Index(list(items)).get_indexer(pd.Index(modal["item"]))
    rater_index = pd.Index(list(raters)).get_indexer(pd.Index(modal["rater"]))
    matrix[item_index, rater_index] = modal["code"].to_numpy()
    return matrix


def _people(ratings: pd.DataFrame, pool: str) -> list[str]:
    humans = ratings[(ratings["rater_kind"] == HUMAN) & (ratings["pool"] == pool)]
    return sorted(humans["rater"].astype(str).unique().tolist())


def _items(ratings: pd.DataFrame) -> list[object]:
    return list(pd.unique(ratings["item"]))


# --- confusion tables and their statistics ------------------------------------------------------------------


def confusion_statistics(counts: FloatArray, pairing: Pairing = "mean") -> dict[AgreementMetric, FloatArray]:
    """The three statistics from confusion tables of shape (..., pairs, k, k), one value per leading index.

    Rows are the first rater's class, columns the second's. `pairing="mean"`: each pair's statistic, then the
    mean over the pairs where it is defined; `"pooled"`: the statistic of the tables' sum. NaN where undefined
    (no item; Cohen's p_e = 1; no pair defined).
    """
    if pairing == "pooled":
        counts = counts.sum(axis=-3, keepdims=True)
    elif pairing != "mean":
        raise ValueError(f"unknown pairing {pairing!r}")
    total = counts.sum(axis=(-2, -1))
    diagonal = np.diagonal(counts, axis1=-2, axis2=-1)
    row, column = counts.sum(axis=-1), counts.sum(axis=-2)
    with np.errstate(invalid="ignore", divide="ignore"):
        observed = diagonal.sum(axis=-1) / total
        chance = (row * column).sum(axis=-1) / total**2
        kappa = np.where(chance < 1, (observed - chance) / (1 - chance), np.nan)
        used = (row + column) > 0
        f1 = np.where(used, 2 * diagonal / (row + column), 0.0)
        macro = np.where(used.any(axis=-1), f1.sum(axis=-1) / used.sum(axis=-1), np.nan)
    per_pair: dict[AgreementMetric, FloatArray] = {
        "percent_agreement": np.asarray(observed, dtype=np.float64),
        "cohen_kappa": np.asarray(kappa, dtype=np.float64),
        "macro_f1": np.asarray(macro, dtype=np.float64),
    }
    return {metric: _mean_over_pairs(values) for metric, values in per_pair.items()}


def _mean_over_pairs(values: FloatArray) -> FloatArray:
    defined = ~np.isnan(values)
    count = defined.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(np.where(count > 0, np.where(defined, values, 0.0).sum(axis=-1) / count, np.nan))


def confusion_table(first: Sequence[object], second: Sequence[object], classes: Sequence[object]) -> FloatArray:
    """The k x k table of two raters' labels over the items both rated (None/NaN = not rated)."""
    a = pd.Categorical(pd.Series(list(first), dtype=object), categories=list(classes)).codes
    b = pd.Categorical(pd.Series(list(second), dtype=object), categories=list(classes)).codes
    both = (a >= 0) & (b >= 0)
    k = len(classes)
    return np.bincount(a[both] * k + b[both], minlength=k * k).reshape(k, k).astype(np.float64)


def percent_agreement(first: Sequence[object], second: Sequence[object]) -> float | None:
    """Share of the items both rated on which two raters give the same label."""
    return _statistic(first, second, "percent_agreement")


def macro_f1(first: Sequence[object], second: Sequence[object]) -> float | None:
    """Macro-F1 of two raters (mean over the classes either used of 2 TP_c / (2 TP_c + FP_c + FN_c))."""
    return _statistic(first, second, "macro_f1")


def kappa(first: Sequence[object], second: Sequence[object]) -> float | None:
    """Cohen's kappa of two raters over the items both rated (Cohen 1960), from their labels."""
    return _statistic(first, second, "cohen_kappa")


def _statistic(first: Sequence[object], second: Sequence[object], metric: AgreementMetric) -> float | None:
    classes = classes_of([*first, *second])
    table = confusion_table(first, second, classes)
    if table.sum() == 0:
        return None
    value = float(confusion_statistics(table[None, None])[metric][0])
    return None if np.isnan(value) else value


# --- agreement with bootstrap intervals ----------------------------------------------------------------------


def _pair_indicators(
    first: IntArray, second: IntArray, pairs: Sequence[tuple[int, int]], k: int
) -> tuple[sparse.csr_array, int]:
    """Sparse items x (pairs * k * k) 0/1 matrix: which confusion cell of which pair each item falls in.

    Only items rated by both raters of at least one pair are kept (they are what the bootstrap resamples).
    """
    rows: list[IntArray] = []
    cols: list[IntArray] = []
    for p, (i, j) in enumerate(pairs):
        both = np.flatnonzero((first[:, i] >= 0) & (second[:, j] >= 0))
        rows.append(both)
        cols.append(p * k * k + first[both, i] * k + second[both, j])
    row = np.concatenate(rows) if rows else np.empty(0, dtype=np.int64)
    col = np.concatenate(cols) if cols else np.empty(0, dtype=np.int64)
    used, row = np.unique(row, return_inverse=True)
    shape = (used.size, max(1, len(pairs)) * k * k)
    matrix = sparse.csr_array((np.ones(row.size), (row, col)), shape=shape)
    return matrix, int(used.size)


def pair_agreement(
    first: IntArray,
    second: IntArray,
    pairs: Sequence[tuple[int, int]],
    k: int,
    *,
    rng: np.random.Generator,
    resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
    pairing: Pairing = "mean",
) -> dict[AgreementMetric, Agreement]:
    """The three statistics over `pairs` (column i of `first` against column j of `second`), with intervals.

    `first` and `second` are items x raters code matrices on the same items (-1 = not rated). Percentile
    bootstrap over the items that enter some pair: every resample's confusion tables are item weights
    (`bootstrap_weights`, multinomial counts) times the items' 0/1 cell indicators, in batches.
    """
    indicators, n_items = _pair_indicators(first, second, pairs, k)
    shape = (len(pairs), k, k)
    pair_used = [bool(np.any((first[:, i] >= 0) & (second[:, j] >= 0))) for i, j in pairs]
    n_pairs = int(sum(pair_used))
    if n_items == 0:
        return {metric: Agreement(None, None, None, 0, 0, NO_PAIRS) for metric in AGREEMENT_METRICS}
    point = confusion_statistics(np.asarray(indicators.sum(axis=0)).reshape(1, *shape), pairing)
    batch = max(1, CELLS_PER_BATCH // max(n_items, indicators.shape[1]))
    boot: dict[AgreementMetric, list[FloatArray]] = {metric: [] for metric in AGREEMENT_METRICS}
    for start in range(0, resamples, batch):
        weights = bootstrap_weights(n_items, min(batch, resamples - start), rng)
        counts = np.asarray((indicators.T @ weights.T).T).reshape(-1, *shape)
        for metric, values in confusion_statistics(counts, pairing).items():
            boot[metric].append(values)
    result: dict[AgreementMetric, Agreement] = {}
    for metric in AGREEMENT_METRICS:
        estimate = float(point[metric][0])
        if np.isnan(estimate):
            result[metric] = Agreement(None, None, None, n_items, n_pairs, UNDEFINED)
            continue
        interval = percentile_interval(np.concatenate(boot[metric]), confidence)
        result[metric] = Agreement(estimate, interval.low, interval.high, n_items, n_pairs, interval.note)
    return result


def judge_vs_people(
    ratings: pd.DataFrame,
    *,
    judge: str,
    pool: str,
    rng: np.random.Generator,
    classes: Sequence[object] | None = None,
    resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
    pairing: Pairing = "mean",
) -> dict[AgreementMetric, Agreement]:
    """The judge against each person of `pool` over the items both rated; per person, then averaged (or pooled).

    `classes` default: the labels seen in `ratings` (pass a field's full list so every cell uses the same).
    """
    classes = classes_of(ratings["value"]) if classes is None else list(classes)
    people = _people(ratings, pool)
    items = _items(ratings)
    first = label_matrix(ratings[ratings["rater_kind"] == JUDGE], [judge], items, classes)
    second = label_matrix(ratings[ratings["rater_kind"] == HUMAN], people, items, classes)
    pairs = [(0, j) for j in range(len(people))]
    return pair_agreement(
        first, second, pairs, len(classes), rng=rng, resamples=resamples, confidence=confidence, pairing=pairing
    )


def people_vs_people(
    ratings: pd.DataFrame,
    *,
    pool: str,
    rng: np.random.Generator,
    classes: Sequence[object] | None = None,
    resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
    pairing: Pairing = "mean",
) -> dict[AgreementMetric, Agreement]:
    """Every two people of `pool` who rated common items, each pair over its common items, averaged (or pooled).

    The human baseline the judge is placed beside.
    """
    classes = classes_of(ratings["value"]) if classes is None else list(classes)
    people = _people(ratings, pool)
    items = _items(ratings)
    matrix = label_matrix(ratings[ratings["rater_kind"] == HUMAN], people, items, classes)
    rated = matrix >= 0
    common = rated.T.astype(np.int64) @ rated.astype(np.int64)
    pairs = [(i, j) for i, j in combinations(range(len(people)), 2) if common[i, j] > 0]
    return pair_agreement(
        matrix, matrix, pairs, len(classes), rng=rng, resamples=resamples, confidence=confidence, pairing=pairing
    )


def judge_vs_judge(
    ratings: pd.DataFrame,
    *,
    judge_a: str,
    judge_b: str,
    rng: np.random.Generator,
    classes: Sequence[object] | None = None,
    resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
) -> dict[AgreementMetric, Agreement]:
    """Two judges over the items both rated (each judge's repeats collapsed to their most frequent label)."""
    classes = classes_of(ratings["value"]) if classes is None else list(classes)
    matrix = label_matrix(ratings[ratings["rater_kind"] == JUDGE], [judge_a, judge_b], _items(ratings), classes)
    return pair_agreement(matrix, matrix, [(0, 1)], len(classes), rng=rng, resamples=resamples, confidence=confidence)


# --- majority labels and the judge's place among people ------------------------------------------------------


def majority_codes(counts: IntArray) -> IntArray:
    """Per item the class with the most votes; -1 where no vote, -2 where the top count is tied."""
    top = counts.max(axis=1, initial=0)
    winners = (counts == top[:, None]).sum(axis=1)
    return np.where(top == 0, -1, np.where(winners > 1, -2, counts.argmax(axis=1))).astype(np.int64)


def _class_counts(matrix: IntArray, k: int) -> IntArray:
    counts = np.zeros((matrix.shape[0], k), dtype=np.int64)
    for c in range(k):
        counts[:, c] = (matrix == c).sum(axis=1)
    return counts


def judge_place(
    ratings: pd.DataFrame,
    *,
    judge: str,
    pool: str,
    metric: AgreementMetric = "percent_agreement",
    classes: Sequence[object] | None = None,
) -> JudgePlace:
    """Each person and the judge against the leave-one-out majority of the person's pool.

    For person p: on the items p rated that at least one other person of the pool rated, the majority label of
    the others (ties excluded and counted in `n_ties`); p's statistic against it and the judge's on the same
    items (those the judge rated too). HealthBench scores each physician against the others the same way
    (leave-one-out), there against each other label rather than their majority.
    """
    classes = classes_of(ratings["value"]) if classes is None else list(classes)
    k = len(classes)
    people = _people(ratings, pool)
    items = _items(ratings)
    humans = label_matrix(ratings[ratings["rater_kind"] == HUMAN], people, items, classes)
    judged = label_matrix(ratings[ratings["rater_kind"] == JUDGE], [judge], items, classes)[:, 0]
    counts = _class_counts(humans, k)
    rows = []
    for p, person in enumerate(people):
        own = humans[:, p]
        others = counts.copy()
        rated = own >= 0
        others[np.flatnonzero(rated), own[rated]] -= 1
        majority = majority_codes(others)
        ties = int((rated & (majority == -2)).sum())
        used = rated & (majority >= 0) & (judged >= 0)
        scores = []
        for labels in (own, judged):
            cells = np.bincount(labels[used] * k + majority[used], minlength=k * k).reshape(1, 1, k, k)
            scores.append(float(confusion_statistics(cells.astype(np.float64))[metric][0]) if used.any() else np.nan)
        rows.append(
            {"rater": person, "n_items": int(used.sum()), "n_ties": ties, "person": scores[0], "judge": scores[1]}
        )
    table = pd.DataFrame(rows, columns=["rater", "n_items", "n_ties", "person", "judge"])
    scored = table.dropna(subset=["person", "judge"])
    if scored.empty:
        return JudgePlace(table, None, None, None, None, metric)
    judge_score = float(scored["judge"].mean())
    person_scores = scored["person"].to_numpy(dtype=np.float64)
    above, below = int((person_scores > judge_score).sum()), int((person_scores < judge_score).sum())
    equal = person_scores.size - above - below
    percentile = 100.0 * (below + 0.5 * equal) / person_scores.size
    matched = float((scored["judge"] >= scored["person"]).mean())
    return JudgePlace(table, judge_score, 1 + above, percentile, matched, metric)


# --- consistency of judges -----------------------------------------------------------------------------------


def position_consistency(
    verdicts: pd.DataFrame, *, positions: tuple[object, object] = ("answer_1", "answer_2")
) -> pd.DataFrame:
    """Share of items whose pairwise verdict survives the display swap, per judge.

    `verdicts`: columns item, rater, swap (True when answer 2 was shown first), value (a verdict naming the
    position shown, e.g. `answer_1`, or another value such as `tie`). A verdict given under the swap names the
    other answer, so it is mapped back (answer_1 <-> answer_2) before comparing; other values are kept. Per
    judge, item and order the repeats give their most frequent verdict. An item is consistent when both orders
    give the same answer. Also `first_shown_share`: of the verdicts naming a position, the share naming the one
    shown first (0.5 = no position preference).
    """
    rows = []
    first, second = positions
    for rater, group in verdicts.groupby("rater", sort=True):
        value = group["value"].astype(object)
        swapped = group["swap"].astype(bool).to_numpy()
        mapped = value.where(~swapped, value.map({first: second, second: first}).fillna(value))
        frame = pd.DataFrame({"item": group["item"].to_numpy(), "order": swapped, "verdict": mapped.to_numpy()})
        counted = frame.groupby(["item", "order", "verdict"], sort=False).size().rename("n").reset_index()
        modal = counted.sort_values("n", ascending=False, kind="stable").drop_duplicates(["item", "order"])
        wide = modal.pivot(index="item", columns="order", values="verdict").dropna()
        n_items = len(wide) if {False, True} <= set(wide.columns) else 0
        consistent = int((wide[False] == wide[True]).sum()) if n_items else 0
        positional = value.isin(positions).to_numpy()
        shown_first = int((value.to_numpy()[positional] == first).sum())
        rows.append(
            {
                "rater": rater,
                "n_items": n_items,
                "consistent": consistent,
                "share": consistent / n_items if n_items else np.nan,
                "first_shown_share": shown_first / positional.sum() if positional.any() else np.nan,
            }
        )
    return pd.DataFrame(rows, columns=["rater", "n_items", "consistent", "share", "first_shown_share"])


def repeat_consistency(ratings: pd.DataFrame) -> pd.DataFrame:
    """Per rater, over the items it rated at least twice: the share where all repeats agree, and the mean
    pairwise agreement sum_c n_c (n_c - 1) / (n (n - 1)) per item (Fleiss 1971, eq. 2), averaged over items."""
    rows = []
    for rater, group in ratings.dropna(subset=["value"]).groupby("rater", sort=True):
        counts = group.groupby(["item", "value"], sort=False).size().rename("n").reset_index()
        counts["pairs"] = counts["n"] * (counts["n"] - 1)
        per_item = counts.groupby("item", sort=False)
        n = per_item["n"].sum()
        repeated = n >= 2
        agreement = per_item["pairs"].sum()[repeated] / (n[repeated] * (n[repeated] - 1))
        distinct = per_item.size()[repeated]
        rows.append(
            {
                "rater": rater,
                "n_items": int(repeated.sum()),
                "all_agree_share": float((distinct == 1).mean()) if repeated.any() else np.nan,
                "mean_pairwise_agreement": float(agreement.mean()) if repeated.any() else np.nan,
            }
        )
    return pd.DataFrame(rows, columns=["rater", "n_items", "all_agree_share", "mean_pairwise_agreement"])


# --- the equity audit -----------------------------------------------------------------------------------------


def _fields(ratings: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    if "field" not in ratings.columns:
        return [("", ratings)]
    return [(str(field), group) for field, group in ratings.groupby("field", sort=True)]


def _item_levels(ratings: pd.DataFrame, factor: str) -> pd.Series:
    """Each item's level of `factor` (its first non-empty value)."""
    levels = ratings[["item", factor]].dropna()
    levels = levels[levels[factor].astype(str) != ""]
    return levels.drop_duplicates("item").set_index("item")[factor].astype(str)


def level_subsets(ratings: pd.DataFrame, factors: Sequence[str]) -> list[tuple[str, pd.DataFrame]]:
    """[("", all rows), ("factor=level", the rows of items at that level), ...]: every factor's levels, sorted."""
    subsets: list[tuple[str, pd.DataFrame]] = [("", ratings)]
    for factor in factors:
        levels = _item_levels(ratings, factor)
        for level in sorted(levels.unique()):
            subsets.append((f"{factor}={level}", ratings[ratings["item"].map(levels) == level]))
    return subsets


def judge_majority_agreement(
    ratings: pd.DataFrame, *, judge: str, pool: str, classes: Sequence[object] | None = None
) -> pd.DataFrame:
    """Per item: the people's majority label (ties and unrated items left out) and whether the judge agrees.

    Columns item, agree (bool), tied (bool: the people's top count was tied; agree is then False and unused).
    """
    classes = classes_of(ratings["value"]) if classes is None else list(classes)
    items = _items(ratings)
    humans = label_matrix(ratings[ratings["rater_kind"] == HUMAN], _people(ratings, pool), items, classes)
    judged = label_matrix(ratings[ratings["rater_kind"] == JUDGE], [judge], items, classes)[:, 0]
    majority = majority_codes(_class_counts(humans, len(classes)))
    keep = (judged >= 0) & (majority != -1)
    return pd.DataFrame(
        {
            "item": np.asarray(items, dtype=object)[keep],
            "agree": (judged == majority)[keep],
            "tied": (majority == -2)[keep],
        }
    )


def equity_audit(
    ratings: pd.DataFrame,
    *,
    judge: str,
    pool: str,
    factors: Sequence[str],
    alpha: float = ALPHA,
) -> pd.DataFrame:
    """Does the judge disagree with the people's majority more at some levels of a factor than at others?

    Per field and factor: the items' agree/disagree counts (judge vs the pool's majority label; tied majorities
    left out and counted) per level; levels with fewer than `MIN_LEVEL_ITEMS` items are described with a note
    and left out of the test; over the others (at least 2) Pearson's chi-squared test of independence on the
    levels x (agree, disagree) table (`scipy.stats.chi2_contingency(correction=False)`: Yates's correction
    would make the 2-level test conservative), unless an expected count is below 5 (a note instead). The p
    values of every test of this call (all fields and factors) are Holm-adjusted together; `flag` when the
    adjusted p < `alpha`. All levels of one test carry its p. One row per (field, factor, level), `AUDIT_COLUMNS`.
    """
    rows: list[dict[str, object]] = []
    tests: list[tuple[list[int], float]] = []
    for field, frame in _fields(ratings):
        per_item = judge_majority_agreement(frame, judge=judge, pool=pool, classes=classes_of(frame["value"]))
        for factor in factors:
            levels = _item_levels(frame, factor)
            data = per_item.assign(level=per_item["item"].map(levels)).dropna(subset=["level"])
            first_row = len(rows)
            testable: list[tuple[int, int]] = []
            for level, group in data.groupby("level", sort=True):
                decided = group[~group["tied"]]
                agree = int(decided["agree"].sum())
                disagree = len(decided) - agree
                enough = len(decided) >= MIN_LEVEL_ITEMS
                rows.append(
                    {
                        "field": field,
                        "factor": factor,
                        "level": str(level),
                        "n_items": len(decided),
                        "n_ties": int(group["tied"].sum()),
                        "agree": agree,
                        "disagree": disagree,
                        "disagreement_rate": disagree / len(decided) if len(decided) else np.nan,
                        "p_value": np.nan,
                        "p_adjusted": np.nan,
                        "flag": False,
                        "note": "" if enough else FEW_LEVEL_ITEMS,
                    }
                )
                if enough:
                    testable.append((agree, disagree))
            tested_rows = [i for i in range(first_row, len(rows)) if not rows[i]["note"]]
            if len(testable) < 2:
                for i in tested_rows:
                    rows[i]["note"] = ONE_LEVEL
                continue
            table = np.asarray(testable, dtype=np.float64)
            expected = table.sum(axis=1, keepdims=True) * table.sum(axis=0, keepdims=True) / table.sum()
            if np.any(expected < MIN_EXPECTED):
                for i in tested_rows:
                    rows[i]["note"] = FEW_EXPECTED
                continue
            tests.append((tested_rows, float(chi2_contingency(table, correction=False).pvalue)))
    if tests:
        raw = [p for _, p in tests]
        # Holm over one test is its p; statsmodels' Holm branch runs gc.collect() (25-100 ms) on every call.
        adjusted = raw if len(raw) == 1 else multipletests(raw, alpha=alpha, method="holm")[1]
        for (indices, p), p_adj in zip(tests, adjusted, strict=True):
            for i in indices:
                rows[i].update(p_value=p, p_adjusted=float(p_adj), flag=bool(p_adj < alpha))
    return pd.DataFrame(rows, columns=AUDIT_COLUMNS)


# --- the agreement.csv table -----------------------------------------------------------------------------------


def _rows(
    result: dict[AgreementMetric, Agreement], base: dict[str, object], p_value: float, flag: object
) -> list[dict[str, object]]:
    return [
        {
            **base,
            "metric": metric,
            "n_items": value.n_items,
            "estimate": np.nan if value.estimate is None else value.estimate,
            "ci_low": np.nan if value.ci_low is None else value.ci_low,
            "ci_high": np.nan if value.ci_high is None else value.ci_high,
            "p_value": p_value,
            "flag": flag,
        }
        for metric, value in result.items()
    ]


def agreement_table(
    ratings: pd.DataFrame,
    *,
    study: str,
    factors: Sequence[str] = (),
    seed: int = 0,
    resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
    pairing: Pairing = "mean",
) -> pd.DataFrame:
    """The rows of `agreement.csv` (`AGREEMENT_COLUMNS`), per field:

    - every pool, people vs people (rater_a = rater_b = the pool, both kinds `human`);
    - every judge vs every pool (rater_a the judge, `judge`; rater_b the pool, `human`);
    - every two judges (both `judge`), all items only;
    each for all items (level '') and, for the first two kinds, per level of each factor ('factor=level').
    `p_value` / `flag` only on the per-level judge-vs-pool rows: the equity audit's Holm-adjusted p of that
    factor's test (`equity_audit`, adjusted over the judge and pool's fields and factors), the same for the three
    metrics and every level of the test; empty (NaN / None) where no test was made. One generator seeded with
    `seed` draws every interval, in row order.
    """
    rng = np.random.default_rng(seed)
    rows: list[dict[str, object]] = []
    humans = ratings[ratings["rater_kind"] == HUMAN]
    pools = sorted(humans["pool"].astype(str).unique().tolist())
    judges = sorted(ratings.loc[ratings["rater_kind"] == JUDGE, "rater"].astype(str).unique().tolist())
    audits = {
        (judge, pool): equity_audit(ratings, judge=judge, pool=pool, factors=factors)
        for judge in judges
        for pool in pools
    }
    for field, frame in _fields(ratings):
        classes = classes_of(frame["value"])
        for level, subset in level_subsets(frame, factors):
            for pool in pools:
                base = {"study": study, "field": field, "rater_a": pool, "rater_b": pool}
                base |= {"rater_a_kind": HUMAN, "rater_b_kind": HUMAN, "level": level}
                result = people_vs_people(
                    subset,
                    pool=pool,
                    rng=rng,
                    classes=classes,
                    resamples=resamples,
                    confidence=confidence,
                    pairing=pairing,
                )
                rows += _rows(result, base, np.nan, None)
            for judge in judges:
                for pool in pools:
                    p_value, flag = _audit_p(audits[(judge, pool)], field, level)
                    base = {"study": study, "field": field, "rater_a": judge, "rater_b": pool}
                    base |= {"rater_a_kind": JUDGE, "rater_b_kind": HUMAN, "level": level}
                    result = judge_vs_people(
                        subset,
                        judge=judge,
                        pool=pool,
                        rng=rng,
                        classes=classes,
                        resamples=resamples,
                        confidence=confidence,
                        pairing=pairing,
                    )
                    rows += _rows(result, base, p_value, flag)
        for judge_a, judge_b in combinations(judges, 2):
            base = {"study": study, "field": field, "rater_a": judge_a, "rater_b": judge_b}
            base |= {"rater_a_kind": JUDGE, "rater_b_kind": JUDGE, "level": ""}
            result = judge_vs_judge(
                frame,
                judge_a=judge_a,
                judge_b=judge_b,
                rng=rng,
                classes=classes,
                resamples=resamples,
                confidence=confidence,
            )
            rows += _rows(result, base, np.nan, None)
    return pd.DataFrame(rows, columns=AGREEMENT_COLUMNS)


def judge_place_table(ratings: pd.DataFrame, *, study: str) -> pd.DataFrame:
    """The rows of `judge_place.csv` (`PLACE_COLUMNS`): per field, judge, pool and metric, where the judge stands
    among the pool's people, each scored against the majority of the others (`judge_place`), over all items.
    `n_people`: the people scored (who shared items with others and the judge); `n_items`: their items summed;
    `people_mean` / `people_min` / `people_max`: their scores; `rank` 1 = the judge beats everyone."""
    rows: list[dict[str, object]] = []
    humans = ratings[ratings["rater_kind"] == HUMAN]
    pools = sorted(humans["pool"].astype(str).unique().tolist())
    judges = sorted(ratings.loc[ratings["rater_kind"] == JUDGE, "rater"].astype(str).unique().tolist())
    for field, frame in _fields(ratings):
        classes = classes_of(frame["value"])
        for judge in judges:
            for pool in pools:
                for metric in AGREEMENT_METRICS:
                    place = judge_place(frame, judge=judge, pool=pool, metric=metric, classes=classes)
                    scored = place.people.dropna(subset=["person", "judge"])
                    people = scored["person"]
                    rows.append(
                        {
                            **{"study": study, "field": field, "judge": judge, "pool": pool, "metric": metric},
                            "n_people": len(scored),
                            "n_items": int(scored["n_items"].sum()),
                            "judge_score": np.nan if place.judge_score is None else place.judge_score,
                            "people_mean": float(people.mean()) if len(people) else np.nan,
                            "people_min": float(people.min()) if len(people) else np.nan,
                            "people_max": float(people.max()) if len(people) else np.nan,
                            "rank": np.nan if place.rank is None else place.rank,
                            "percentile": np.nan if place.percentile is None else place.percentile,
                            "share_matched": np.nan if place.share_matched is None else place.share_matched,
                        }
                    )
    return pd.DataFrame(rows, columns=PLACE_COLUMNS)


def consistency_table(
    ratings: pd.DataFrame, *, study: str, positions: tuple[object, object] = ("answer_1", "answer_2")
) -> pd.DataFrame:
    """The rows of `judge_consistency.csv` (`CONSISTENCY_COLUMNS`): per field and judge,

    - `repeats`: over the items the judge rated at least twice in one display order, the share where every
      repeat agrees (`share`) and the mean pairwise agreement (`repeat_consistency`);
    - `display_order` (fields where some of the judge's ratings saw the answers swapped: a `swapped` column, the
      value already naming the item's own answer): the share of items whose verdict survives the swap (`share`)
      and, of the verdicts naming a position, the share naming the one shown first (`position_consistency`).
    Raters without a row: no repeated item, no item seen in both orders."""
    rows: list[dict[str, object]] = []
    judged = ratings[ratings["rater_kind"] == JUDGE]
    swapped = judged["swapped"].fillna(False).astype(bool) if "swapped" in judged.columns else None
    first, second = positions
    for field, frame in _fields(judged):
        base = {"study": study, "field": field}
        order = swapped.loc[frame.index] if swapped is not None else pd.Series(False, index=frame.index)
        # Repeats are compared within one display order: across orders is the position check's business.
        units = frame.assign(item=frame["item"].astype(str) + np.where(order, "|swapped", ""))
        for row in repeat_consistency(units).itertuples(index=False):
            if row.n_items:
                rows.append(
                    {
                        **base,
                        **{"judge": row.rater, "check": REPEATS, "n_items": row.n_items, "share": row.all_agree_share},
                        **{"mean_pairwise_agreement": row.mean_pairwise_agreement, "first_shown_share": np.nan},
                    }
                )
        if not order.any():
            continue
        value = frame["value"].astype(object)
        shown = value.where(~order, value.map({first: second, second: first}).fillna(value))
        verdicts = pd.DataFrame({"item": frame["item"], "rater": frame["rater"], "swap": order, "value": shown})
        for row in position_consistency(verdicts, positions=positions).itertuples(index=False):
            if row.n_items:
                rows.append(
                    {
                        **base,
                        **{"judge": row.rater, "check": DISPLAY_ORDER, "n_items": row.n_items, "share": row.share},
                        **{"mean_pairwise_agreement": np.nan, "first_shown_share": row.first_shown_share},
                    }
                )
    return pd.DataFrame(rows, columns=CONSISTENCY_COLUMNS)


def _audit_p(audit: pd.DataFrame, field: str, level: str) -> tuple[float, object]:
    if not level:
        return np.nan, None
    factor, _, value = level.partition("=")
    match = audit[(audit["field"] == field) & (audit["factor"] == factor) & (audit["level"] == value)]
    if match.empty or np.isnan(match["p_adjusted"].iloc[0]):
        return np.nan, None
    return float(match["p_adjusted"].iloc[0]), bool(match["flag"].iloc[0])
