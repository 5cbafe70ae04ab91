"""Judge-assisted estimates of a mean (a bias rate): prediction-powered inference beside people-only and judge-only.

People label a random slice of n items (human label Y_i, judge label f_i on the same items); the judge labels
the other N items too (f~_j). Prediction-powered inference (Angelopoulos, Bates, Fannjiang, Jordan & Zrnic 2023,
"Prediction-powered inference", Science 382: 669-674, the mean estimator of their Example / Algorithm 1):

    theta_PP = mean_j f~_j - mean_i (f_i - Y_i)         (judge's mean on the unlabelled items, rectified)
    theta_PP +- z_(1 - alpha/2) sqrt(sigma_f~^2 / N + sigma_(f - Y)^2 / n)

with sigma the population (ddof = 0) standard deviations, exactly as the reference package `ppi-python` 0.2.3
(`ppi_py.ppi_mean_ci(..., lam=1)` / `ppi_mean_pointestimate(..., lam=1)`) computes it. The power-tuned variant
(PPI++: Angelopoulos, Duchi & Zrnic 2023, arXiv:2311.01453) replaces f by lambda f with
lambda = Cov(Y, f) / ((1 + n/N) Var(f)) (Var over the labelled and unlabelled predictions together), clipped to
[0, 1], again as `ppi_py` computes it when `lam=None`; lambda = 0 is the people-only estimate. The labelled
items must be a random sample of all items, else the rectifier does not correct the judge's bias.

Beside it: the people-only estimate (mean Y over the slice; Wilson interval for 0/1 labels, Wilson 1927, else
the normal interval) and the naive judge-only estimate (mean f over every judged item, the same intervals: an
interval for the judge's own rate, blind to its bias). "Human ratings saved": the n' a people-only normal
interval would need for the PPI interval's width, n' = sigma_Y^2 / se_PP^2, beside the n used.

Never depends on Django or the study models: labels arrive as arrays or a long frame.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy.stats import norm
from statsmodels.stats.proportion import proportion_confint

from analysis.bootstrap import CONFIDENCE
from analysis.judge_agreement import level_subsets

FloatArray = NDArray[np.float64]
Method = Literal["human_only", "judge_only", "ppi"]
METHODS: tuple[Method, ...] = ("human_only", "judge_only", "ppi")
Aggregate = Literal["mean", "majority"]
JUDGE_ASSISTED_COLUMNS = [
    *["study", "field", "level", "method", "n_human", "n_judge", "estimate", "ci_low", "ci_high"],
    # Beyond the contract (trailing, as rates.csv's `resampled`): which judge and pool, what PPI saves, why not.
    *["judge", "pool", "n_human_equivalent", "note"],
]
NO_LABELS = "not estimable: no item rated by people and the judge"
NO_UNLABELLED = "not estimable: every judged item is also rated by people (nothing for the judge to add)"
ONE_LABEL = "not estimable: fewer than 2 items"


@dataclass(frozen=True)
class MeanEstimate:
    """A mean with its interval; None (never NaN) where not estimable, with a note.

    `n_human`: items with a human label used; `n_judge`: items with a judge label used. `lam`: PPI's lambda
    (1 = plain PPI). `se`: the standard error behind a normal interval (None for Wilson).
    """

    method: Method
    n_human: int
    n_judge: int
    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    se: float | None = None
    lam: float | None = None
    note: str = ""


def _array(values: ArrayLike) -> FloatArray:
    array = np.asarray(values, dtype=np.float64).ravel()
    if np.isnan(array).any():
        raise ValueError("labels must not be NaN")
    return array


def _z(confidence: float) -> float:
    return float(norm.ppf(1 - (1 - confidence) / 2))


def _is_binary(values: FloatArray) -> bool:
    return bool(np.all((values == 0) | (values == 1)))


def _mean_interval(values: FloatArray, confidence: float) -> tuple[float, float, float | None]:
    """Wilson for 0/1 values, else the normal interval mean +- z sd / sqrt(n) (sd with ddof = 1)."""
    n = values.size
    if _is_binary(values):
        low, high = proportion_confint(int(values.sum()), n, alpha=1 - confidence, method="wilson")
        return float(low), float(high), None
    se = float(values.std(ddof=1) / np.sqrt(n))
    mean = float(values.mean())
    return mean - _z(confidence) * se, mean + _z(confidence) * se, se


def human_only_mean(y: ArrayLike, *, confidence: float = CONFIDENCE) -> MeanEstimate:
    """Mean of the human labels over the slice (Wilson interval for 0/1 labels, else normal)."""
    labels = _array(y)
    if labels.size < 2:
        return MeanEstimate("human_only", labels.size, 0, None, None, None, note=ONE_LABEL)
    low, high, se = _mean_interval(labels, confidence)
    return MeanEstimate("human_only", labels.size, 0, float(labels.mean()), low, high, se)


def judge_only_mean(f: ArrayLike, *, confidence: float = CONFIDENCE) -> MeanEstimate:
    """Mean of the judge's labels over every item it labelled (an interval for the judge's own rate)."""
    labels = _array(f)
    if labels.size < 2:
        return MeanEstimate("judge_only", 0, labels.size, None, None, None, note=ONE_LABEL)
    low, high, se = _mean_interval(labels, confidence)
    return MeanEstimate("judge_only", 0, labels.size, float(labels.mean()), low, high, se)


def power_tuning(y: FloatArray, f: FloatArray, f_unlabelled: FloatArray) -> float:
    """PPI++'s lambda for a mean: Cov(Y, f) / ((1 + n/N) Var(f)), clipped to [0, 1] (as ppi_py's `lam=None`).

    Cov with ddof = 0 over the labelled items, Var with ddof = 1 over the labelled and unlabelled predictions.
    """
    n, big_n = y.size, f_unlabelled.size
    covariance = float(np.mean((y - y.mean()) * (f - f.mean())))
    variance = float(np.var(np.concatenate([f, f_unlabelled]), ddof=1))
    if variance == 0:
        return 0.0
    return float(np.clip(covariance / ((1 + n / big_n) * variance), 0.0, 1.0))


def ppi_mean(
    y: ArrayLike,
    f: ArrayLike,
    f_unlabelled: ArrayLike,
    *,
    confidence: float = CONFIDENCE,
    lam: float | None = 1.0,
) -> MeanEstimate:
    """Prediction-powered estimate of the mean of Y with its CLT interval (Angelopoulos et al. 2023).

    `y`, `f`: human and judge labels of the n labelled items (same order); `f_unlabelled`: the judge's labels of
    the N items people did not label. theta = lam mean(f~) + mean(Y - lam f); se^2 = Var(lam f~)/N +
    Var(Y - lam f)/n (ddof 0). `lam=1` (default) is plain PPI; `lam=None` PPI++'s power-tuned lambda.
    Equals `ppi_py.ppi_mean_pointestimate` / `ppi_mean_ci(alpha=1 - confidence, lam=...)`.
    """
    labels, predicted, unlabelled = _array(y), _array(f), _array(f_unlabelled)
    if labels.size != predicted.size:
        raise ValueError("y and f must label the same items")
    n, big_n = labels.size, unlabelled.size
    if n < 2:
        return MeanEstimate("ppi", n, n + big_n, None, None, None, note=NO_LABELS if n == 0 else ONE_LABEL)
    if big_n < 2:
        return MeanEstimate("ppi", n, n + big_n, None, None, None, note=NO_UNLABELLED)
    weight = power_tuning(labels, predicted, unlabelled) if lam is None else lam
    estimate = float(weight * unlabelled.mean() + (labels - weight * predicted).mean())
    se = float(np.sqrt(np.var(weight * unlabelled) / big_n + np.var(labels - weight * predicted) / n))
    half = _z(confidence) * se
    return MeanEstimate("ppi", n, n + big_n, estimate, estimate - half, estimate + half, se, weight)


def equivalent_human_items(y: ArrayLike, ppi: MeanEstimate) -> float | None:
    """Items a people-only normal interval would need for the PPI interval's width: Var(Y) / se_PP^2.

    Var(Y) (ddof 0, as the PPI rectifier's) from the labelled slice: the people-only normal interval over n'
    items has half-width z sd(Y) / sqrt(n'), equal to z se_PP at this n'. Minus `ppi.n_human`: the human
    ratings (items) the judge saves at the same width (negative when the judge adds noise).
    """
    labels = _array(y)
    if ppi.se is None or ppi.se == 0 or labels.size < 2:
        return None
    return float(np.var(labels) / ppi.se**2)


# --- the judge_assisted.csv table ----------------------------------------------------------------------------


def _item_labels(rows: pd.DataFrame, aggregate: Aggregate, positive: object | None) -> pd.Series:
    """One number per item: the share of its positive labels (`mean`) or 1 when more than half are (`majority`)."""
    values = rows["value"]
    numeric = (values == positive).astype(np.float64) if positive is not None else values.astype(np.float64)
    share = numeric.groupby(rows["item"].to_numpy(), sort=False).mean()
    return (share > 0.5).astype(np.float64) if aggregate == "majority" else share


def judge_assisted(
    ratings: pd.DataFrame,
    *,
    judge: str,
    pool: str,
    confidence: float = CONFIDENCE,
    aggregate: Aggregate = "mean",
    positive: object | None = None,
    lam: float | None = 1.0,
) -> tuple[list[MeanEstimate], float | None]:
    """The three estimates of one field (and level) from a long frame (item, rater, rater_kind, pool, value).

    An item's human label: its pool ratings aggregated (`mean`: the share positive, which is the label itself
    with one rating per item; `majority`: more than half positive, as rates.csv's majority); its judge label:
    the judge's repeats aggregated the same way. `positive`: the value counted as 1 (None: values are numbers
    or booleans). Returns [human_only, judge_only, ppi] and the PPI's equivalent number of human items.
    """
    humans = ratings[(ratings["rater_kind"] == "human") & (ratings["pool"] == pool)].dropna(subset=["value"])
    judged = ratings[(ratings["rater_kind"] == "judge") & (ratings["rater"] == judge)].dropna(subset=["value"])
    y = _item_labels(humans, aggregate, positive)
    f = _item_labels(judged, aggregate, positive)
    labelled = y.index.intersection(f.index)
    unlabelled = f.index.difference(y.index)
    ppi = ppi_mean(y[labelled], f[labelled], f[unlabelled], confidence=confidence, lam=lam)
    estimates = [
        human_only_mean(y[labelled], confidence=confidence),
        judge_only_mean(f, confidence=confidence),
        ppi,
    ]
    return estimates, equivalent_human_items(y[labelled], ppi)


def judge_assisted_table(
    ratings: pd.DataFrame,
    *,
    study: str,
    factors: Sequence[str] = (),
    confidence: float = CONFIDENCE,
    aggregate: Aggregate = "mean",
    positive: object | None = None,
    lam: float | None = 1.0,
) -> pd.DataFrame:
    """The rows of `judge_assisted.csv` (`JUDGE_ASSISTED_COLUMNS`): per field, judge, pool and level ('' for all
    items, else 'factor=level'), the methods `human_only`, `judge_only`, `ppi`.

    `human_only` uses the labelled slice (items both people of the pool and the judge rated), so it is the
    people-only estimate PPI is compared with; `n_human` / `n_judge` count items. The contract's columns first,
    then `judge`, `pool` (the contract has neither: with several judges or pools a row is named by them),
    `n_human_equivalent` (on `ppi` rows) and `note`.
    """
    rows: list[dict[str, object]] = []
    fields = [("", ratings)] if "field" not in ratings.columns else list(ratings.groupby("field", sort=True))
    judges = sorted(ratings.loc[ratings["rater_kind"] == "judge", "rater"].astype(str).unique().tolist())
    pools = sorted(ratings.loc[ratings["rater_kind"] == "human", "pool"].astype(str).unique().tolist())
    for field, frame in fields:
        for level, subset in level_subsets(frame, factors):
            for judge in judges:
                for pool in pools:
                    estimates, equivalent = judge_assisted(
                        subset,
                        judge=judge,
                        pool=pool,
                        confidence=confidence,
                        aggregate=aggregate,
                        positive=positive,
                        lam=lam,
                    )
                    for estimate in estimates:
                        rows.append(
                            {
                                "study": study,
                                "field": str(field),
                                "level": level,
                                "method": estimate.method,
                                "n_human": estimate.n_human,
                                "n_judge": estimate.n_judge,
                                "estimate": _number(estimate.estimate),
                                "ci_low": _number(estimate.ci_low),
                                "ci_high": _number(estimate.ci_high),
                                "judge": judge,
                                "pool": pool,
                                "n_human_equivalent": _number(equivalent) if estimate.method == "ppi" else np.nan,
                                "note": estimate.note,
                            }
                        )
    return pd.DataFrame(rows, columns=JUDGE_ASSISTED_COLUMNS)


def _number(value: float | None) -> float:
    return np.nan if value is None else value
