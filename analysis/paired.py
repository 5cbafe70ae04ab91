"""Paired comparisons of a factor's levels over blocks, and group means (DESIGN.md, "Q-Pain on the platform").

Q-Pain's statistics (Logé et al. 2021, seed 002, section 4.2 and Figures 2-3), for any factor of any study: the
input is long, one row per scored observation, with the family columns (default study, outcome, source, factor),
the factor's `level` (e.g. `Black woman`), the `block` that pairs observations (Q-Pain: the vignette) and the
`value` in the outcome's own units (a probability: never a percentage). Rows whose value is missing (NaN) are not
observations: a record without log-probabilities has no P(No) and simply drops out of its pairs.

`paired_tests` -> `PAIRED_COLUMNS`, one row per (family, level_a, level_b), a before b in the level order:

- the blocks holding both levels (several rows of one block and level are averaged first): `n_blocks`, the means
  `mean_a`, `mean_b` over those blocks and `mean_diff` = mean(a - b) (positive: level a scores higher; for P(No),
  a is more often denied treatment);
- the two-sided paired t-test, t = mean(d) / (sd(d) / sqrt(n)) with n - 1 degrees of freedom (Student 1908;
  computed by `scipy.stats.ttest_rel`);
- `ci_low`, `ci_high`: the (1 - alpha) paired-t interval mean(d) ± t(1 - alpha/2, n - 1) sd(d) / sqrt(n)
  (`scipy.stats.t.interval`); `ci_*_adjusted`: the same at 1 - alpha/m, m = the pairs of the family (Bonferroni's
  simultaneous intervals: 1 - 0.05/28 for Q-Pain's 8 groups), only when `correction="bonferroni"`;
- `p_adjusted`: Bonferroni (min(1, m p)) or Holm's step-down (Holm 1979), by
  `statsmodels.stats.multitest.multipletests`; the raw p for `correction="none"`;
- `n_dropped`, `dropped_blocks`: the blocks of the family (every block its rows name, with a value or without)
  lacking a value at a or b ("; "-joined, in their natural order);
- `significance`, on the raw p as the paper's Figure 2b: "***" p < 0.0001 (and p < alpha/m), "**" p < alpha/m
  (significant after Bonferroni, whatever the correction column says), "*" p < alpha, "" otherwise or untested.

m counts every pair of the levels present in the family, tested or not: the correction is for the comparisons
made, and a pair that could not be tested does not loosen it for the others (untested pairs enter Holm's
ordering as p = 1, which changes no other adjusted value but keeps m).

Not tested (t, p, p_adjusted and the intervals empty; the means still given): fewer than 2 blocks, and zero
variance of the differences. With every difference equal to c != 0 scipy gives t = ±inf and p = 0; there is no
standard error to judge c by, so rather than claim p = 0 on two identical-looking vignettes the row reports the
difference and leaves the test empty (c = 0 is scipy's NaN anyway). "Zero" is a spread of at most 1e-12 of the
largest |d| (rounding in a - b).

`group_means` -> `GROUP_COLUMNS`: per family and level the mean over all its rows (stratum_factor "", stratum
"all") and per stratum (e.g. the pain context), with the 95% t-interval mean ± t(0.975, n - 1) sd / sqrt(n)
(`scipy.stats.t.interval`); empty for n < 2 and for sd = 0, as scipy gives. `heat_table` lays one outcome's group
means out as the paper's Figure 2a. Pure: no Django.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from itertools import combinations

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats.multitest import multipletests

FAMILY = ("study", "outcome", "source", "factor")
CONTRACT_COLUMNS = [
    *["study", "outcome", "factor", "level_a", "level_b", "n_blocks", "mean_a", "mean_b", "mean_diff"],
    *["ci_low", "ci_high", "ci_low_adjusted", "ci_high_adjusted", "t", "p_value", "p_adjusted", "correction"],
]
PAIRED_COLUMNS = [*CONTRACT_COLUMNS, "source", "n_dropped", "dropped_blocks", "significance"]
GROUP_COLUMNS = [
    *["study", "outcome", "source", "factor", "level", "stratum_factor", "stratum", "n", "mean", "sd"],
    *["ci_low", "ci_high"],
]
CORRECTIONS = ("bonferroni", "holm", "none")
ALPHA = 0.05
CONFIDENCE = 0.95
HIGHLY_SIGNIFICANT = 0.0001  # the paper's third threshold (Figure 2b)
ALL = "all"  # the stratum of a level's overall mean
AVERAGE, ALL_LEVELS = "Average", "All"  # heat_table's overall column and pooled row
SEPARATOR = "; "
ZERO_SPREAD = 1e-12

_INTEGER_COLUMNS = ("n_blocks", "n_dropped", "n")
_TEXT_COLUMNS = frozenset(
    [
        *FAMILY,
        "level_a",
        "level_b",
        "correction",
        "dropped_blocks",
        "significance",
        "level",
        "stratum_factor",
        "stratum",
    ]
)


def _text(values: pd.Series) -> pd.Series:
    """A column as text, missing cells (NaN, as CSV read back gives) as ""."""
    return values.astype(object).where(values.notna(), "").astype(str)


def _sorted(values: Iterable[Hashable]) -> list[Hashable]:
    """Distinct values in their natural order (numbers as numbers), by their text when they do not compare."""
    distinct = list(dict.fromkeys(values))
    try:
        return sorted(distinct)  # type: ignore[type-var]
    except TypeError:
        return sorted(distinct, key=str)


def ordered_levels(present: Iterable[str], level_order: Sequence[str] | None) -> list[str]:
    """The levels present: those of `level_order` in its order, then the others in their natural order."""
    found = list(dict.fromkeys(present))
    if level_order is None:
        return [str(level) for level in _sorted(found)]
    known = [level for level in dict.fromkeys(map(str, level_order)) if level in set(found)]
    return known + [str(level) for level in _sorted(set(found) - set(known))]


def _empty(columns: Sequence[str]) -> pd.DataFrame:
    def dtype(column: str) -> object:
        return np.int64 if column in _INTEGER_COLUMNS else object if column in _TEXT_COLUMNS else float

    return pd.DataFrame({column: pd.Series(dtype=dtype(column)) for column in columns})  # type: ignore[call-overload]


def _observations(
    values: pd.DataFrame, *, value: str, level: str, family: Sequence[str], extra: Sequence[str], keep: bool = False
) -> pd.DataFrame:
    """Family and level as text, the value as a float; rows without a level are dropped, and rows without a value
    are no observation (kept with NaN when `keep`, for the blocks they name)."""
    missing = [column for column in dict.fromkeys([*family, level, value, *extra]) if column not in values.columns]
    if missing:
        raise ValueError(f"values lack the column(s) {', '.join(missing)}")
    values = values.reset_index(drop=True)
    frame = pd.DataFrame({column: _text(values[column]) for column in family}, index=values.index)
    frame["_level"] = _text(values[level])
    frame["_value"] = pd.to_numeric(values[value], errors="coerce").astype(float)
    for column in extra:
        frame[column] = values[column]
    frame = frame[frame["_level"] != ""]
    return frame if keep else frame[frame["_value"].notna()]


def _family_columns(family: Sequence[str], contract: Sequence[str]) -> list[str]:
    """Family columns that are not in the contract are kept after it."""
    return [column for column in family if column not in contract]


def significance(p_values: np.ndarray, *, alpha: float, pairs: int) -> list[str]:
    """The paper's flags on raw p-values: "***" p < 0.0001, "**" p < alpha / pairs, "*" p < alpha, else ""."""
    corrected = alpha / max(pairs, 1)
    flags = []
    for p in p_values:
        if np.isnan(p) or p >= alpha:
            flags.append("")
        elif p < min(HIGHLY_SIGNIFICANT, corrected):
            flags.append("***")
        elif p < corrected:
            flags.append("**")
        else:
            flags.append("*")
    return flags


def adjusted_p_values(p_values: np.ndarray, *, correction: str, alpha: float = ALPHA) -> np.ndarray:
    """Bonferroni or Holm adjusted p-values (statsmodels); NaN (untested) counts in m as p = 1 and stays NaN."""
    p = np.asarray(p_values, dtype=float)
    if correction == "none" or p.size == 0:
        return p.copy()
    tested = ~np.isnan(p)
    adjusted = multipletests(np.where(tested, p, 1.0), alpha=alpha, method=correction)[1]
    return np.where(tested, adjusted, np.nan)


def _interval(confidence: float, n: int, centre: float, scale: float) -> tuple[float, float]:
    low, high = stats.t.interval(confidence, n - 1, loc=centre, scale=scale)
    return float(low), float(high)


def _pair_row(a: np.ndarray, b: np.ndarray, *, alpha: float, pairs: int, correction: str) -> dict[str, float]:
    """The statistics of one pair over the blocks holding both levels (module docstring)."""
    n = len(a)
    nan = float("nan")
    row = dict.fromkeys(["mean_a", "mean_b", "mean_diff", "t", "p_value", "ci_low", "ci_high"], nan)
    row |= dict.fromkeys(["ci_low_adjusted", "ci_high_adjusted"], nan)
    if n == 0:
        return row
    d = a - b
    row |= {"mean_a": float(a.mean()), "mean_b": float(b.mean()), "mean_diff": float(d.mean())}
    if n < 2 or np.ptp(d) <= ZERO_SPREAD * max(1.0, float(np.abs(d).max())):
        return row
    result = stats.ttest_rel(a, b)
    row |= {"t": float(result.statistic), "p_value": float(result.pvalue)}
    scale = float(d.std(ddof=1)) / np.sqrt(n)
    row["ci_low"], row["ci_high"] = _interval(1 - alpha, n, row["mean_diff"], scale)
    if correction == "bonferroni":
        row["ci_low_adjusted"], row["ci_high_adjusted"] = _interval(1 - alpha / pairs, n, row["mean_diff"], scale)
    return row


def paired_tests(
    values: pd.DataFrame,
    *,
    value: str = "value",
    level: str = "level",
    block: str = "block",
    family: Sequence[str] = FAMILY,
    level_order: Sequence[str] | None = None,
    correction: str = "bonferroni",
    alpha: float = ALPHA,
) -> pd.DataFrame:
    """Paired t-tests of every pair of levels over blocks (`PAIRED_COLUMNS`; see the module docstring)."""
    if correction not in CORRECTIONS:
        raise ValueError(f"correction must be one of {', '.join(CORRECTIONS)}, not {correction!r}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1, not {alpha}")
    family = list(family)
    columns = [*PAIRED_COLUMNS, *_family_columns(family, PAIRED_COLUMNS)]
    # Rows without a value still name their block: a vignette with no score at all is dropped from every pair.
    frame = _observations(values, value=value, level=level, family=family, extra=[block], keep=True)
    frame = frame[frame[block].notna()]
    if frame[block].dtype == object:  # mixed ids would not sort
        frame[block] = frame[block].astype(str)
    if not frame["_value"].notna().any():
        return _empty(columns)
    rows: list[dict[str, object]] = []
    groups = frame.groupby(family, sort=True) if family else [((), frame)]
    for key, members in groups:
        key = key if isinstance(key, tuple) else (key,)
        # Blocks x levels: one mean per (block, level), NaN where the block lacks the level (or its value).
        table = members.groupby([block, "_level"], sort=True)["_value"].mean().unstack("_level")
        levels = ordered_levels(table.columns[table.notna().any()], level_order)
        pairs = list(combinations(levels, 2))
        found = []
        for level_a, level_b in pairs:
            a, b = table[level_a].to_numpy(dtype=float), table[level_b].to_numpy(dtype=float)
            both = ~np.isnan(a) & ~np.isnan(b)
            dropped = [str(block_id) for block_id in _sorted(table.index[~both])]
            statistics = _pair_row(a[both], b[both], alpha=alpha, pairs=len(pairs), correction=correction)
            found.append(
                {
                    **dict(zip(family, key, strict=True)),
                    **{"level_a": level_a, "level_b": level_b, "n_blocks": int(both.sum()), **statistics},
                    **{"n_dropped": len(dropped), "dropped_blocks": SEPARATOR.join(dropped)},
                    "correction": correction,
                }
            )
        p = np.array([row["p_value"] for row in found], dtype=float)
        for row, adjusted, flag in zip(
            found,
            adjusted_p_values(p, correction=correction, alpha=alpha),
            significance(p, alpha=alpha, pairs=len(pairs)),
            strict=True,
        ):
            row["p_adjusted"], row["significance"] = float(adjusted), flag
        rows += found
    if not rows:
        return _empty(columns)
    result = pd.DataFrame(rows)
    for column in columns:
        if column not in result.columns:
            result[column] = ""
    return result[columns].astype({"n_blocks": np.int64, "n_dropped": np.int64}).reset_index(drop=True)


def group_means(
    values: pd.DataFrame,
    *,
    value: str = "value",
    level: str = "level",
    strata: Sequence[str] = ("context",),
    family: Sequence[str] = FAMILY,
    level_order: Sequence[str] | None = None,
    confidence: float = CONFIDENCE,
) -> pd.DataFrame:
    """Mean, sd and t-interval per family and level, overall and per stratum (`GROUP_COLUMNS`; module docstring).

    Rows: by family, then level (in `level_order`), then the overall row, then each stratum factor's strata in
    their natural order. Rows with a missing stratum count in the overall mean only.
    """
    family = list(family)
    columns = [*GROUP_COLUMNS, *_family_columns(family, GROUP_COLUMNS)]
    frame = _observations(values, value=value, level=level, family=family, extra=list(strata))
    if frame.empty:
        return _empty(columns)
    keys = [*family, "_level"]
    parts = [_summary(frame, keys).assign(stratum_factor="", stratum=ALL)]
    for factor in strata:
        known = frame[frame[factor].notna()]
        known = known.assign(stratum=_text(known[factor]))
        parts.append(_summary(known, [*keys, "stratum"]).assign(stratum_factor=factor))
    table = pd.concat(parts, ignore_index=True).rename(columns={"_level": "level"})
    n, mean, sd = (table[column].to_numpy(dtype=float) for column in ("n", "mean", "sd"))
    table["ci_low"], table["ci_high"] = t_intervals(mean, sd, n, confidence=confidence)
    rank = {level: index for index, level in enumerate(ordered_levels(table["level"], level_order))}
    factor_rank = {factor: index for index, factor in enumerate(["", *strata])}
    stratum_rank = {stratum: index for index, stratum in enumerate([ALL, *_sorted(table["stratum"])])}
    table = table.assign(
        _level=table["level"].map(rank),
        _factor=table["stratum_factor"].map(factor_rank),
        _stratum=table["stratum"].map(stratum_rank),
    ).sort_values([*family, "_level", "_factor", "_stratum"], kind="stable")
    for column in columns:
        if column not in table.columns:
            table[column] = ""
    return table[columns].astype({"n": np.int64}).reset_index(drop=True)


def _summary(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    grouped = frame.groupby(keys, sort=True)["_value"]
    return grouped.agg(n="count", mean="mean", sd="std").reset_index()


def t_intervals(
    mean: np.ndarray, sd: np.ndarray, n: np.ndarray, *, confidence: float = CONFIDENCE
) -> tuple[np.ndarray, np.ndarray]:
    """mean ± t((1 + confidence)/2, n - 1) sd / sqrt(n) (`scipy.stats.t.interval`), NaN for n < 2 or sd = 0."""
    low, high = np.full(mean.shape, np.nan), np.full(mean.shape, np.nan)
    has = (n >= 2) & (sd > 0)
    if has.any():
        low[has], high[has] = stats.t.interval(confidence, n[has] - 1, loc=mean[has], scale=sd[has] / np.sqrt(n[has]))
    return low, high


# --- The paper's Figure 2a: mean per level (rows) and stratum (columns) ---------------------------------------


def race_gender_grid(levels: Sequence[str]) -> tuple[list[str], list[str]] | None:
    """(races, genders) when every level reads "Race gender" and they form a full grid of >= 2 x >= 2, else None.

    The race is everything before the last space ("Native American woman" -> "Native American", "woman"), so the
    margins of any two-factor level written that way come out; a full grid keeps other factors' levels that merely
    contain a space (e.g. "10 years") from being taken apart.
    """
    parts = [level.rsplit(" ", 1) for level in levels]
    if not parts or any(len(part) != 2 for part in parts):
        return None
    races = list(dict.fromkeys(part[0] for part in parts))
    genders = list(dict.fromkeys(part[1] for part in parts))
    complete = {(race, gender) for race in races for gender in genders} == {(p[0], p[1]) for p in parts}
    return (races, genders) if len(races) >= 2 and len(genders) >= 2 and complete else None


def _choose(frame: pd.DataFrame, column: str, chosen: str | None) -> pd.DataFrame:
    if chosen is not None:
        return frame[frame[column] == chosen]
    found = list(dict.fromkeys(frame[column]))
    if len(found) > 1:
        raise ValueError(f"the group means hold several {column} values ({', '.join(found)}): pass {column}=")
    return frame


def heat_table(
    group_means_frame: pd.DataFrame,
    *,
    outcome: str,
    source: str | None = None,
    study: str | None = None,
    factor: str | None = None,
    level_order: Sequence[str] | None = None,
) -> pd.DataFrame:
    """One outcome's means as the paper's Figure 2a: a row per level, columns "Average" then each stratum.

    Cells are means in the outcome's units (probabilities). Rows: the levels (in `level_order`, else in the
    table's order), then, when the levels are "Race gender" (`race_gender_grid`), one row per race ("Asian": both
    genders) and per gender ("woman": every race), then "All" (every level). Those pooled rows are means over
    every observation of their levels (the levels' means weighted by n), so "woman" is the mean P(No) of all
    women's records, as the paper's "All" rows with equal counts. With several stratum factors the columns are
    named "factor: stratum". `source`, `study`, `factor` pick one when the frame holds several (else an error
    says which). Works on `group_means` output and on `group_means.csv` read back with pandas.
    """
    frame = group_means_frame.copy()
    for column in ("study", "outcome", "source", "factor", "level", "stratum_factor", "stratum"):
        frame[column] = _text(frame[column]) if column in frame.columns else ""
    frame = frame[frame["outcome"] == outcome]
    for column, chosen in (("source", source), ("study", study), ("factor", factor)):
        frame = _choose(frame, column, chosen)
    if frame.empty:
        return pd.DataFrame(columns=[AVERAGE], index=pd.Index([], name="level"), dtype=float)
    several = frame.loc[frame["stratum_factor"] != "", "stratum_factor"].nunique() > 1
    frame["column"] = [
        AVERAGE if not factor_name else f"{factor_name}: {stratum}" if several else stratum
        for factor_name, stratum in zip(frame["stratum_factor"], frame["stratum"], strict=True)
    ]
    columns = [AVERAGE, *[c for c in dict.fromkeys(frame["column"]) if c != AVERAGE]]
    levels = ordered_levels(frame["level"], level_order) if level_order else list(dict.fromkeys(frame["level"]))
    n = pd.to_numeric(frame["n"], errors="coerce").fillna(0).to_numpy(dtype=float)
    mean = pd.to_numeric(frame["mean"], errors="coerce").to_numpy(dtype=float)
    known = ~np.isnan(mean) & (n > 0)
    frame["_n"], frame["_sum"] = np.where(known, n, 0.0), np.where(known, n * mean, 0.0)
    weights, totals = (
        frame.pivot_table(index="level", columns="column", values=name, aggfunc="sum").reindex(
            index=levels, columns=columns
        )
        for name in ("_n", "_sum")
    )
    groups: dict[str, list[str]] = {level: [level] for level in levels}
    grid = race_gender_grid(levels)
    if grid is not None:
        races, genders = grid
        groups |= {race: [f"{race} {gender}" for gender in genders] for race in races}
        groups |= {gender: [f"{race} {gender}" for race in races] for gender in genders}
    groups[ALL_LEVELS] = levels
    table = pd.DataFrame({label: _pooled(totals, weights, members) for label, members in groups.items()}).T
    table.index.name, table.columns.name = "level", None
    return table[columns].astype(float)


def _pooled(totals: pd.DataFrame, weights: pd.DataFrame, members: list[str]) -> pd.Series:
    total, weight = totals.loc[members].sum(), weights.loc[members].sum()
    return (total / weight).where(weight > 0)
