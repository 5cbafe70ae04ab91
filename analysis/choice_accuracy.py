"""Accuracy of multiple-choice answers per condition: the `accuracy.csv` table (DESIGN.md, BiasMedQA's plan).

Input: one row per scored answer with columns `source`, `bias`, `mitigation` and `outcome` (`correct`, `wrong`
or `non_response`). Output (`ACCURACY_COLUMNS`, the contract analysts script against), one row per
(source, bias, mitigation):

- `n` answers, `correct`, `non_response`;
- `accuracy` = correct / (n - non_response), as in the BiasMedQA paper (Schmidgall et al. 2024, Appendix C:
  "reported accuracy was adjusted to exclude non-response answers"); empty when every answer is a non-response;
- `ci_low`, `ci_high`: the 95% Wilson score interval of that proportion (`wilson_interval`);
- `non_response_rate` = non_response / n (the paper's Table 5);
- `drop_abs` = reference accuracy - accuracy and `drop_rel` = drop_abs / reference accuracy, where the reference
  is the same source with bias `none` under the same mitigation, or under mitigation `none` when that condition
  was not run (BiasMedQA's education sentence is bias-specific, so education has no unbiased run; the paper's
  Table 2 "No bias" column repeats Table 1's). Reference rows have drop 0; no reference (or a reference
  without an accuracy): empty; a reference accuracy of 0: `drop_rel` empty.

Rows are sorted by source, then bias (`BIAS_ORDER`, then other levels by name), then mitigation
(`MITIGATION_ORDER`, then others by name). Pure: no Django.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType

import numpy as np
import pandas as pd
from statsmodels.stats.proportion import proportion_confint

from datasets.factors import REFERENCE_LEVEL

CORRECT, WRONG, NON_RESPONSE = "correct", "wrong", "non_response"
OUTCOMES = (CORRECT, WRONG, NON_RESPONSE)
GROUP = ["source", "bias", "mitigation"]
ACCURACY_COLUMNS = [
    *GROUP,
    *["n", "correct", "non_response", "accuracy", "ci_low", "ci_high", "non_response_rate", "drop_abs", "drop_rel"],
]
CONFIDENCE = 0.95
NONE = REFERENCE_LEVEL  # of both factors: no bias injected, no mitigation
REFERENCE_LEVELS: Mapping[str, str] = MappingProxyType({"bias": NONE, "mitigation": NONE})
BIAS_ORDER = [
    *[NONE, "self_diagnosis", "recency", "confirmation", "frequency", "cultural", "status_quo", "false_consensus"],
]
MITIGATION_ORDER = [NONE, "education", "one-shot", "few-shot"]


def wilson_interval(
    successes: np.ndarray, totals: np.ndarray, *, confidence: float = CONFIDENCE
) -> tuple[np.ndarray, np.ndarray]:
    """The Wilson score interval of k successes in n trials (Wilson 1927), NaN where n == 0.

    With p = k/n and z the normal quantile: (p + z²/2n ± z sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n), computed by
    `statsmodels.stats.proportion.proportion_confint(method="wilson")`. Why Wilson: each cell is a binomial
    proportion with n up to ~1,300 and accuracies from near 0 (0.07) to 0.77. Its coverage stays close to the
    nominal level across n and p where the Wald interval's collapses near 0 and 1 (Brown, Cai & DasGupta 2001,
    "Interval estimation for a binomial proportion"), its bounds never leave [0, 1], and it is closed-form: no
    resampling, the same numbers on every run.
    """
    k = np.asarray(successes, dtype=float)
    n = np.asarray(totals, dtype=float)
    low, high = np.full(k.shape, np.nan), np.full(k.shape, np.nan)
    has = n > 0
    if has.any():
        found_low, found_high = proportion_confint(k[has], n[has], alpha=1 - confidence, method="wilson")
        low[has] = np.clip(found_low, 0.0, 1.0)
        high[has] = np.clip(found_high, 0.0, 1.0)
        # Exactly 0 and 1 there (rounding leaves 1e-17 either side, e.g. a bound above an accuracy of 0).
        low[has & (k == 0)] = 0.0
        high[has & (k == n)] = 1.0
    return low, high


def ordered_levels(values: Iterable[str], known: Sequence[str]) -> list[str]:
    """The distinct values: those in `known` in its order, then the others by name (BIAS_ORDER, MITIGATION_ORDER)."""
    present = set(values)
    return [value for value in known if value in present] + sorted(present - set(known))


def _rank(values: Iterable[str], known: Sequence[str]) -> dict[str, int]:
    return {value: index for index, value in enumerate(ordered_levels(values, known))}


def _counts(outcomes: pd.DataFrame) -> pd.DataFrame:
    missing = [column for column in [*GROUP, "outcome"] if column not in outcomes.columns]
    if missing:
        raise ValueError(f"outcomes lack the column(s) {', '.join(missing)}")
    unknown = sorted(set(outcomes["outcome"].astype(str)) - set(OUTCOMES))
    if unknown:
        raise ValueError(f"unknown outcome(s) {', '.join(map(repr, unknown))}; expected one of {', '.join(OUTCOMES)}")
    frame = pd.DataFrame({column: outcomes[column].astype(str) for column in GROUP})
    frame["correct"] = (outcomes["outcome"] == CORRECT).to_numpy(dtype=np.int64)
    frame["non_response"] = (outcomes["outcome"] == NON_RESPONSE).to_numpy(dtype=np.int64)
    grouped = frame.groupby(GROUP, sort=False, observed=True)
    counts = grouped.size().rename("n").to_frame().join(grouped[["correct", "non_response"]].sum())
    return counts.reset_index().astype({"n": "int64", "correct": "int64", "non_response": "int64"})


def _reference_accuracy(table: pd.DataFrame, reference_levels: Mapping[str, str]) -> np.ndarray:
    """Per row, the accuracy of its reference row (see the module docstring); NaN when there is none."""
    bias_none, mitigation_none = reference_levels["bias"], reference_levels["mitigation"]
    unbiased = table[table["bias"] == bias_none].set_index(["source", "mitigation"])["accuracy"]
    keys = pd.MultiIndex.from_arrays([table["source"], table["mitigation"]])
    fallback = pd.MultiIndex.from_arrays([table["source"], np.full(len(table), mitigation_none, dtype=object)])
    same = unbiased.reindex(keys).to_numpy(dtype=float)
    run = keys.isin(unbiased.index)
    plain = unbiased.reindex(fallback).to_numpy(dtype=float)
    return np.where(run, same, plain)


def accuracy_table(outcomes: pd.DataFrame, *, reference_levels: Mapping[str, str] = REFERENCE_LEVELS) -> pd.DataFrame:
    """The `accuracy.csv` table of scored answers (columns `ACCURACY_COLUMNS`; see the module docstring)."""
    if outcomes.empty:
        return pd.DataFrame({column: pd.Series(dtype=_DTYPES.get(column, float)) for column in ACCURACY_COLUMNS})
    table = _counts(outcomes)
    bias_rank = _rank(table["bias"], BIAS_ORDER)
    mitigation_rank = _rank(table["mitigation"], MITIGATION_ORDER)
    table = (
        table.assign(_bias=table["bias"].map(bias_rank), _mitigation=table["mitigation"].map(mitigation_rank))
        .sort_values(["source", "_bias", "_mitigation"], kind="stable")
        .drop(columns=["_bias", "_mitigation"])
        .reset_index(drop=True)
    )
    n = table["n"].to_numpy(dtype=float)
    answered = n - table["non_response"].to_numpy(dtype=float)
    correct = table["correct"].to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        table["accuracy"] = np.where(answered > 0, correct / answered, np.nan)
    table["ci_low"], table["ci_high"] = wilson_interval(correct, answered)
    table["non_response_rate"] = table["non_response"].to_numpy(dtype=float) / n
    reference = _reference_accuracy(table, reference_levels)
    accuracy = table["accuracy"].to_numpy(dtype=float)
    is_reference = (table["bias"] == reference_levels["bias"]).to_numpy()
    drop = np.where(is_reference & ~np.isnan(accuracy), 0.0, reference - accuracy)
    table["drop_abs"] = drop
    with np.errstate(divide="ignore", invalid="ignore"):
        table["drop_rel"] = np.where(reference > 0, drop / reference, np.nan)
    return table[ACCURACY_COLUMNS]


_DTYPES: dict[str, type] = {
    **{column: object for column in GROUP},
    **{column: np.int64 for column in ("n", "correct", "non_response")},
}
