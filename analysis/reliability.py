"""Inter-rater reliability with percentile bootstrap intervals over items.

A ratings matrix is items x raters with category codes and NaN where a rater did not rate the item. Every
statistic is written as a function of item weights w_i (1 for the data, multinomial bootstrap counts for a
resample) times per-item terms, so all resamples are computed at once as matrix products.

- Randolph's free-marginal multirater kappa: Randolph, J. J. (2005), "Free-marginal multirater kappa
  (multirater kappa_free): an alternative to Fleiss' fixed-marginal multirater kappa", Joensuu Learning and
  Instruction Symposium.
- Krippendorff's alpha, nominal, from the coincidence matrix: Krippendorff, K. (2011), "Computing
  Krippendorff's Alpha-Reliability", Annenberg School for Communication, section C.
- Cohen's kappa: Cohen, J. (1960), "A coefficient of agreement for nominal scales", Educ. Psychol. Meas. 20.
- Percentile bootstrap over items: Efron & Tibshirani (1993), *An Introduction to the Bootstrap*, §13.3.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from analysis.bootstrap import CONFIDENCE, RESAMPLES, percentile_interval

Metric = Literal["randolph_kappa", "krippendorff_alpha", "cohen_kappa"]
METRICS: tuple[Metric, ...] = ("randolph_kappa", "krippendorff_alpha", "cohen_kappa")

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
# A statistic as a function of item weights: (resamples, items) -> (resamples,), NaN where undefined.
WeightedStatistic = Callable[[FloatArray], FloatArray]

FEW_ITEMS = "not estimable: fewer than 2 items with at least 2 ratings"
ONE_CATEGORY = "not estimable: all ratings in one category"
WEIGHTS_PER_BATCH = 1 << 22
NO_SPREAD = "not estimable: all ratings in one category, no spread to bootstrap"


@dataclass(frozen=True)
class Estimate:
    """A reliability statistic with its percentile interval; None (never NaN) where not estimable.

    `n_items` counts the items the statistic uses (those with at least 2 ratings; for Cohen's kappa, those
    both raters rated), `n_raters` the raters who rated at least one of them.
    """

    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    n_items: int
    n_raters: int
    note: str = ""


def _as_matrix(matrix: ArrayLike) -> FloatArray:
    array = np.asarray(matrix, dtype=np.float64)
    if array.ndim != 2:
        raise ValueError("a ratings matrix is 2-dimensional: items x raters")
    return array


def category_counts(matrix: ArrayLike, categories: ArrayLike | None = None) -> IntArray:
    """Items x categories table of how many raters put each item in each category.

    Columns follow `categories` (default: the sorted distinct codes in the matrix); NaN cells are not counted.
    """
    ratings = _as_matrix(matrix)
    rated = ~np.isnan(ratings)
    codes = np.unique(ratings[rated]) if categories is None else np.asarray(categories, dtype=np.float64)
    values = ratings[rated]
    column = np.searchsorted(codes, values)
    if values.size and (column.max() >= codes.size or np.any(codes[np.minimum(column, codes.size - 1)] != values)):
        raise ValueError("the matrix has codes outside `categories`")
    item = np.nonzero(rated)[0]
    n_items = ratings.shape[0]
    return np.bincount(item * codes.size + column, minlength=n_items * codes.size).reshape(n_items, codes.size)


def _weighted_randolph(counts: IntArray, n_categories: int) -> WeightedStatistic:
    """kappa_free = (P_o - 1/k) / (1 - 1/k), P_o = weighted mean of per-item agreement (items with >= 2 ratings).

    Per-item agreement P_i = sum_j n_ij (n_ij - 1) / (n_i (n_i - 1)) (Randolph 2005; Fleiss 1971, eq. 2).
    """
    n_i = counts.sum(axis=1)
    agreement = (counts * (counts - 1)).sum(axis=1) / (n_i * (n_i - 1.0))
    chance = 1.0 / n_categories

    def statistic(weights: FloatArray) -> FloatArray:
        observed = weights @ agreement / weights.sum(axis=1)
        return np.asarray((observed - chance) / (1 - chance), dtype=np.float64)

    return statistic


def _weighted_alpha(counts: IntArray) -> WeightedStatistic:
    """Nominal alpha = 1 - D_o / D_e = 1 - (n - 1)(n - sum_c o_cc) / (n^2 - sum_c n_c^2) (Krippendorff 2011, C).

    Item u with m_u >= 2 values adds n_uc(n_uc - 1)/(m_u - 1) to the diagonal o_cc of the coincidence matrix
    and n_uc to the marginal n_c, so weighted sums of these per-item terms give any resample's alpha.
    """
    m_u = counts.sum(axis=1)
    diagonal = (counts * (counts - 1)).sum(axis=1) / (m_u - 1.0)
    counts_f = counts.astype(np.float64)

    def statistic(weights: FloatArray) -> FloatArray:
        marginals = weights @ counts_f
        n = marginals.sum(axis=1)
        expected = n**2 - (marginals**2).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            alpha = 1 - (n - 1) * (n - weights @ diagonal) / expected
        return np.asarray(np.where(expected > 0, alpha, np.nan), dtype=np.float64)

    return statistic


def _weighted_cohen(first: FloatArray, second: FloatArray) -> WeightedStatistic:
    """kappa = (p_o - p_e) / (1 - p_e), p_e = sum_c p_1c p_2c from each rater's own marginals (Cohen 1960)."""
    codes = np.unique(np.concatenate([first, second]))
    agree = (first == second).astype(np.float64)
    one_hot_1 = (first[:, None] == codes).astype(np.float64)
    one_hot_2 = (second[:, None] == codes).astype(np.float64)

    def statistic(weights: FloatArray) -> FloatArray:
        total = weights.sum(axis=1)
        observed = weights @ agree / total
        chance = ((weights @ one_hot_1) * (weights @ one_hot_2)).sum(axis=1) / total**2
        with np.errstate(invalid="ignore", divide="ignore"):
            kappa = (observed - chance) / (1 - chance)
        return np.asarray(np.where(chance < 1, kappa, np.nan), dtype=np.float64)

    return statistic


def _point(statistic: WeightedStatistic, n_items: int) -> float | None:
    value = float(statistic(np.ones((1, n_items)))[0])
    return None if np.isnan(value) else value


def randolph_kappa(counts: ArrayLike, n_categories: int) -> float | None:
    """Randolph's free-marginal multirater kappa from an items x categories count table.

    P_o = mean over items with >= 2 ratings of sum_j n_ij (n_ij - 1) / (n_i (n_i - 1)); P_e = 1 / k;
    kappa = (P_o - P_e) / (1 - P_e) (Randolph 2005). None when no item has 2 ratings or k < 2.
    """
    table = np.asarray(counts, dtype=np.int64)
    table = table[table.sum(axis=1) >= 2]
    if table.shape[0] == 0 or n_categories < 2:
        return None
    return _point(_weighted_randolph(table, n_categories), table.shape[0])


def krippendorff_alpha(matrix: ArrayLike) -> float | None:
    """Krippendorff's alpha for nominal data, from the coincidence matrix (Krippendorff 2011, section C).

    alpha = 1 - (n - 1)(n - sum_c o_cc) / (n^2 - sum_c n_c^2) over items with >= 2 values; equals
    `krippendorff.alpha(matrix.T, level_of_measurement="nominal")`. None when no item has 2 values or all values
    are in one category (D_e = 0).
    """
    counts = category_counts(matrix)
    counts = counts[counts.sum(axis=1) >= 2]
    if counts.shape[0] == 0:
        return None
    return _point(_weighted_alpha(counts), counts.shape[0])


def cohen_kappa(a: ArrayLike, b: ArrayLike) -> float | None:
    """Cohen's kappa of two raters over the items both rated: (p_o - p_e) / (1 - p_e) (Cohen 1960).

    None when no item was rated by both or p_e == 1 (both raters used one and the same category throughout).
    """
    first, second = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    both = ~np.isnan(first) & ~np.isnan(second)
    if not both.any():
        return None
    return _point(_weighted_cohen(first[both], second[both]), int(both.sum()))


def bootstrap_weights(n_items: int, resamples: int, rng: np.random.Generator) -> FloatArray:
    """Multinomial(n, 1/n) item weights per resample (resamples x items): counts of items drawn with replacement.

    Drawn as `rng.integers(0, n, (resamples, n))` indices (the draw scipy.stats.bootstrap makes), counted per row.
    """
    picks = rng.integers(0, n_items, (resamples, n_items))
    offsets = np.arange(resamples)[:, None] * n_items
    counts = np.bincount((picks + offsets).ravel(), minlength=resamples * n_items)
    return counts.reshape(resamples, n_items).astype(np.float64)


def reliability_with_ci(
    matrix: ArrayLike,
    metric: Metric,
    *,
    rng: np.random.Generator,
    resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
    n_categories: int | None = None,
) -> Estimate:
    """A reliability statistic of an items x raters matrix with a percentile bootstrap interval over items.

    Items (those the statistic uses) are resampled with replacement and their ratings kept together; every
    resample's statistic is computed from multinomial item weights times per-item terms in one matrix product
    (Efron & Tibshirani 1993, §13.3). `n_categories` is Randolph's k (default: the number of codes seen, at
    least 2). `cohen_kappa` needs a matrix with exactly two rater columns. Not estimable (estimate None with a
    note): fewer than 2 usable items, or all ratings in one category (alpha's D_e = 0, Cohen's p_e = 1). For
    Randolph's kappa, all ratings in one category give kappa = 1 but no interval (nothing to resample).
    """
    ratings = _as_matrix(matrix)
    if metric == "cohen_kappa":
        if ratings.shape[1] != 2:
            return Estimate(
                None, None, None, 0, ratings.shape[1], "not estimable: Cohen's kappa needs exactly 2 raters"
            )
        used = ~np.isnan(ratings).any(axis=1)
    else:
        used = (~np.isnan(ratings)).sum(axis=1) >= 2
    ratings = ratings[used]
    n_items = ratings.shape[0]
    n_raters = int((~np.isnan(ratings)).any(axis=0).sum())
    if n_items < 2:
        return Estimate(None, None, None, n_items, n_raters, FEW_ITEMS)

    counts = category_counts(ratings)
    statistic: WeightedStatistic
    if metric == "randolph_kappa":
        if n_categories is not None and n_categories < counts.shape[1]:
            raise ValueError(f"n_categories={n_categories} but the ratings use {counts.shape[1]} categories")
        statistic = _weighted_randolph(counts, n_categories or max(2, counts.shape[1]))
    elif metric == "krippendorff_alpha":
        statistic = _weighted_alpha(counts)
    elif metric == "cohen_kappa":
        statistic = _weighted_cohen(ratings[:, 0], ratings[:, 1])
    else:
        raise ValueError(f"unknown metric {metric!r}; expected one of {METRICS}")

    estimate = _point(statistic, n_items)
    if counts.shape[1] < 2:
        return Estimate(estimate, None, None, n_items, n_raters, ONE_CATEGORY if estimate is None else NO_SPREAD)
    if estimate is None:
        return Estimate(None, None, None, n_items, n_raters, ONE_CATEGORY)
    # Resamples in batches keep the weight matrices small (~32 MB) however many items there are.
    batch = max(1, WEIGHTS_PER_BATCH // n_items)
    values = [
        statistic(bootstrap_weights(n_items, min(batch, resamples - start), rng))
        for start in range(0, resamples, batch)
    ]
    interval = percentile_interval(np.concatenate(values), confidence)
    return Estimate(estimate, interval.low, interval.high, n_items, n_raters, interval.note)
