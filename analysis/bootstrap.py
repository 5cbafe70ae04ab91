"""Bootstrap confidence intervals, vectorised over many table cells at once.

BCa (bias-corrected and accelerated): Efron & Tibshirani (1993), *An Introduction to the Bootstrap*, §14.3 and
eq. 14.15, computed exactly as `scipy.stats.bootstrap(method="BCa")` does (scipy/stats/_resampling.py:
`_bca_interval`, `_percentile_of_score`, and `scipy.stats.quantile(method="linear")`, Hyndman & Fan (1996)
definition 7). Percentile: Efron & Tibshirani (1993), §13.3. Clustered data (resample the clusters, keep what is
inside each): Davison & Hinkley (1997), *Bootstrap Methods and their Application*, §3.8; the ratio of two sums as
in their Example 2.8 (the city population ratio, bootstrapped over pairs (u_j, x_j)).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import ndtr, ndtri

RESAMPLES = 1000
CONFIDENCE = 0.95

FloatArray = NDArray[np.float64]

NO_RATINGS = "not estimable: no ratings"
ONE_RATING = "not estimable: one rating"
ALL_EQUAL = "not estimable: all ratings equal, no spread to bootstrap"
BCA_UNDEFINED = "not estimable: BCa undefined (the bootstrap distribution lies on one side of the estimate)"
DRAWS_PER_BATCH = 1 << 22  # cluster indices drawn at once (32 MB as int64): memory stays flat however many


@dataclass(frozen=True)
class Interval:
    """A confidence interval; `low`/`high` are None (never NaN) when not estimable, and `note` says why."""

    low: float | None
    high: float | None
    note: str = ""


def bca_acceleration(jackknife: ArrayLike) -> FloatArray:
    """Acceleration a from jackknife values theta_(i), per cell (last axis = the leave-one-out values).

    a = sum(d_i^3) / (6 (sum d_i^2)^(3/2)) with d_i = mean(theta_(.)) - theta_(i) (Efron & Tibshirani 1993,
    eq. 14.15; scipy's form with U_i = (n - 1) d_i reduces to this). NaN entries are ignored, so cells with
    fewer observations can be padded with NaN. NaN when all jackknife values are equal (as in scipy).
    """
    values = np.asarray(jackknife, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        d = np.nanmean(values, axis=-1, keepdims=True) - values
        return np.asarray(np.nansum(d**3, axis=-1) / (6.0 * np.nansum(d**2, axis=-1) ** 1.5), dtype=np.float64)


def linear_quantile(sorted_values: FloatArray, p: FloatArray) -> FloatArray:
    """Quantile p[c] of each row sorted_values[c] (sorted ascending on the last axis), one p per row.

    Hyndman & Fan (1996) definition 7 (numpy's default "linear"), written as `scipy.stats.quantile` computes
    it so that results match to the last bits: j = floor(p B + 1 - p) - 1, g = (p B + 1 - p) mod 1,
    q = (1 - g) x[j] + g x[j + 1]. NaN where p is NaN.
    """
    size = sorted_values.shape[-1]
    missing = np.isnan(p)
    p = np.where(missing, 0.0, p)
    position = p * size + (1 - p)
    upper = position // 1
    lower = upper - 1
    g = np.where(lower < 0, 0.0, position % 1)
    lower_i = np.clip(lower, 0, size - 1).astype(np.intp)[..., None]
    upper_i = np.clip(upper, 0, size - 1).astype(np.intp)[..., None]
    low = np.take_along_axis(sorted_values, lower_i, axis=-1)[..., 0]
    high = np.take_along_axis(sorted_values, upper_i, axis=-1)[..., 0]
    return np.where(missing, np.nan, (1 - g) * low + g * high)


def bca_from_acceleration(
    theta_hat: ArrayLike, theta_boot: ArrayLike, acceleration: ArrayLike, confidence: float = CONFIDENCE
) -> tuple[FloatArray, FloatArray]:
    """BCa bounds per cell from the estimate, its bootstrap distribution (last axis) and the acceleration.

    z0 = Phi^-1(share of theta* < theta_hat, ties counting half) as scipy's `_percentile_of_score`;
    alpha_1,2 = Phi(z0 + (z0 -/+ z) / (1 - a (z0 -/+ z))) with z = Phi^-1(1 - (1 - confidence) / 2);
    the bounds are the alpha_1 and alpha_2 linear quantiles of theta* (Efron & Tibshirani 1993, eq. 14.10).
    NaN where BCa is undefined (z0 infinite, or a NaN).
    """
    hat = np.asarray(theta_hat, dtype=np.float64)
    boot = np.asarray(theta_boot, dtype=np.float64)
    resamples = boot.shape[-1]
    below = np.count_nonzero(boot < hat[..., None], axis=-1) + np.count_nonzero(boot <= hat[..., None], axis=-1)
    z0 = ndtri(below / (2.0 * resamples))
    z_alpha = float(ndtri((1 - confidence) / 2))
    a = np.asarray(acceleration, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        num1 = z0 + z_alpha
        alpha_1 = ndtr(z0 + num1 / (1 - a * num1))
        num2 = z0 - z_alpha
        alpha_2 = ndtr(z0 + num2 / (1 - a * num2))
    ordered = np.sort(boot, axis=-1)
    return linear_quantile(ordered, alpha_1), linear_quantile(ordered, alpha_2)


def bca_from_distribution(
    theta_hat: ArrayLike, theta_boot: ArrayLike, jackknife: ArrayLike, confidence: float = CONFIDENCE
) -> tuple[FloatArray, FloatArray]:
    """BCa bounds (low, high) per cell, as `scipy.stats.bootstrap(method="BCa")` computes them.

    Shapes: theta_hat (cells,), theta_boot (cells, resamples), jackknife (cells, n) with NaN padding for cells
    with fewer observations; a leading cell axis may be absent (scalars). Formula: Efron & Tibshirani (1993)
    §14.3; see `bca_from_acceleration` and `bca_acceleration`. NaN bounds mark cells where BCa is undefined;
    `intervals` turns them into notes.
    """
    return bca_from_acceleration(theta_hat, theta_boot, bca_acceleration(jackknife), confidence)


def intervals(low: ArrayLike, high: ArrayLike, note: str = BCA_UNDEFINED) -> list[Interval]:
    """Bounds as `Interval`s, with `note` for cells whose bounds are NaN."""
    return [
        Interval(None, None, note) if np.isnan(lo) or np.isnan(hi) else Interval(float(lo), float(hi))
        for lo, hi in zip(np.ravel(low), np.ravel(high), strict=True)
    ]


def proportion_cis(
    successes: ArrayLike,
    totals: ArrayLike,
    *,
    rng: np.random.Generator,
    resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
) -> list[Interval]:
    """BCa intervals for many proportions k/n at once (one `Interval` per cell, in input order).

    The bootstrap distribution of the mean of n 0/1 values with k ones is Binomial(n, k/n) / n, so it is drawn
    directly: one `rng.binomial(n, k/n, size=(resamples, cells))` call for all estimable cells. The jackknife
    has two values, (k - 1)/(n - 1) (k times) and k/(n - 1) (n - k times), which makes the acceleration
    closed-form: a = (n - 2k) / (6 sqrt(n k (n - k))). Otherwise as `bca_from_acceleration` (Efron &
    Tibshirani 1993, §14.3). Not estimable: n == 0, n == 1, k in {0, n} (the bootstrap distribution is a
    single point).
    """
    k = np.asarray(successes, dtype=np.int64).ravel()
    n = np.asarray(totals, dtype=np.int64).ravel()
    if k.shape != n.shape or np.any(k < 0) or np.any(k > n):
        raise ValueError("successes and totals must have the same length with 0 <= successes <= totals")
    ok = (n >= 2) & (k > 0) & (k < n)
    result = [Interval(None, None, NO_RATINGS if t == 0 else ONE_RATING if t == 1 else ALL_EQUAL) for t in n]
    if not ok.any():
        return result
    k_ok, n_ok = k[ok], n[ok]
    draws = rng.binomial(n_ok, k_ok / n_ok, size=(resamples, k_ok.size))
    # Divide exactly as the mean of 0/1 data would, so resamples equal to the estimate compare as equal.
    theta_boot = (draws / n_ok).T
    acceleration = (n_ok - 2 * k_ok) / (6.0 * np.sqrt(n_ok * k_ok * (n_ok - k_ok).astype(np.float64)))
    low, high = bca_from_acceleration(k_ok / n_ok, theta_boot, acceleration, confidence)
    for index, interval in zip(np.flatnonzero(ok), intervals(low, high), strict=True):
        result[index] = interval
    return result


def cluster_notes(unit: str) -> tuple[str, str, str]:
    """The notes of `cluster_ratio_cis` for cells with no cluster, one cluster, or clusters of one rate."""
    return (
        f"not estimable: no {unit}s",
        f"not estimable: one {unit}",
        f"not estimable: every {unit} has the same rate, no spread to bootstrap",
    )


def cluster_ratio_cis(
    successes: ArrayLike,
    totals: ArrayLike,
    cells: ArrayLike,
    *,
    rng: np.random.Generator,
    resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
    unit: str = "cluster",
) -> list[Interval]:
    """BCa intervals of ratio estimates sum(k_j) / sum(n_j) over clusters j, resampling the clusters.

    One entry of `successes` (k_j), `totals` (n_j >= 1) and `cells` per cluster; one `Interval` per cell number
    0..max(cells). A resample draws a cell's m clusters with replacement, keeping each cluster's (k_j, n_j)
    whole, and its statistic is sum k / sum n over the clusters drawn: the cluster bootstrap (Davison & Hinkley
    1997, §3.8, resampling the top stage only) of the ratio estimator (their Example 2.8). BCa (Efron &
    Tibshirani 1993, §14.3) with the jackknife leaving out one cluster, theta_(j) = (K - k_j) / (N - n_j):
    exactly what `scipy.stats.bootstrap((k, n), ratio, paired=True, method="BCa")` computes for one cell (it
    resamples the indices of the pairs (k_j, n_j) with `rng.integers(0, m, (resamples, m))`, the draw made
    here, and its jackknife leaves out one index).

    All cells at once: per batch of resamples, one `rng.integers` call draws every cell's indices (each column
    bounded by its cell's m), and `np.add.reduceat` sums the drawn k and n per cell. With a single cell the
    draws are scipy's, so the bounds equal scipy's for the same generator. Not estimable (notes of
    `cluster_notes(unit)`): no cluster, one cluster, every cluster with the same rate k_j / n_j (every resample
    then equals the estimate); BCa undefined: `BCA_UNDEFINED`.
    """
    k = np.asarray(successes, dtype=np.int64).ravel()
    n = np.asarray(totals, dtype=np.int64).ravel()
    cell = np.asarray(cells, dtype=np.int64).ravel()
    if not k.shape == n.shape == cell.shape or np.any(k < 0) or np.any(k > n) or np.any(n < 1) or np.any(cell < 0):
        raise ValueError("successes, totals and cells must have one entry per cluster, 0 <= successes <= totals >= 1")
    if cell.size == 0:
        return []
    none, one, equal = cluster_notes(unit)
    order = np.argsort(cell, kind="stable")  # a cell's clusters together, in their given order
    k, n, cell = k[order], n[order], cell[order]
    count = int(cell[-1]) + 1
    m = np.bincount(cell, minlength=count)
    big_k = np.bincount(cell, weights=k, minlength=count).astype(np.int64)
    big_n = np.bincount(cell, weights=n, minlength=count).astype(np.int64)
    # k_j / n_j == K / N for every j exactly when all clusters of the cell have one rate (integers: no rounding).
    spread = np.bincount(cell, weights=k * big_n[cell] != big_k[cell] * n, minlength=count) > 0
    ok = (m >= 2) & spread
    result = [Interval(None, None, none if size == 0 else one if size == 1 else equal) for size in m]
    if not ok.any():
        return result
    used = ok[cell]
    k_ok, n_ok, m_ok = k[used], n[used], m[ok]
    starts = np.r_[0, np.cumsum(m_ok)[:-1]]
    # int32 draws are the int64 ones (the same 32-bit bounded generator), a third faster.
    highs, offsets = np.repeat(m_ok, m_ok).astype(np.int32), np.repeat(starts, m_ok)
    batch = max(1, DRAWS_PER_BATCH // k_ok.size)
    boot = []
    for done in range(0, resamples, batch):
        size = (min(batch, resamples - done), k_ok.size)
        drawn = rng.integers(0, highs, size=size, dtype=np.int32) + offsets
        boot.append(np.add.reduceat(k_ok[drawn], starts, axis=1) / np.add.reduceat(n_ok[drawn], starts, axis=1))
    theta_boot = np.concatenate(boot).T
    theta_hat = big_k[ok] / big_n[ok]
    within = np.repeat(np.arange(m_ok.size), m_ok)
    jackknife = (big_k[ok][within] - k_ok) / (big_n[ok][within] - n_ok)
    d = (np.bincount(within, weights=jackknife) / m_ok)[within] - jackknife
    with np.errstate(invalid="ignore", divide="ignore"):
        acceleration = np.bincount(within, weights=d**3) / (6.0 * np.bincount(within, weights=d**2) ** 1.5)
    low, high = bca_from_acceleration(theta_hat, theta_boot, acceleration, confidence)
    for index, interval in zip(np.flatnonzero(ok), intervals(low, high), strict=True):
        result[index] = interval
    return result


def percentile_interval(values: ArrayLike, confidence: float = CONFIDENCE) -> Interval:
    """Percentile interval of bootstrap values: their (1 - c)/2 and (1 + c)/2 linear quantiles.

    Efron & Tibshirani (1993) §13.3 (`scipy.stats.bootstrap(method="percentile")` computes the same).
    Resamples where the statistic is undefined (NaN) are dropped and counted in the note; "not estimable"
    when more than half of them are.
    """
    array = np.asarray(values, dtype=np.float64).ravel()
    finite = array[~np.isnan(array)]
    dropped = array.size - finite.size
    if array.size == 0:
        return Interval(None, None, "not estimable: no bootstrap resamples")
    if 2 * dropped > array.size:
        return Interval(None, None, f"not estimable: statistic undefined in {dropped} of {array.size} resamples")
    alpha = (1 - confidence) / 2
    low, high = np.quantile(finite, [alpha, 1 - alpha])
    note = f"statistic undefined in {dropped} of {array.size} resamples (dropped)" if dropped else ""
    return Interval(float(low), float(high), note)
