"""MEDIC's statistics per (answering source, judge model) pair (Gourabathina et al., MEDIC; issue 20).

Input (`medic_observations` builds it from the results table): a long frame of judge observations, one row per
(answering `source`, `judge` model, `item` judged, `outcome`) with the float `value` (a count of hallucinations
or omissions, their mean harm, or 0/1 for a treatment category) and one column per factor (the item's level,
e.g. `style` = `8th grade, lack of details`; an empty string: the item has no level for that factor). A judge's
several rows on one item and outcome (its repeats, or two judges sharing a model) are averaged first, so each
(source, judge, item, outcome) counts once (`item_values`).

Statistics:
- `judge_means`: per (source, judge, outcome), over all items and per factor level, the mean of the items'
  values, the sample sd (ddof 1) and the 95% t-interval `scipy.stats.t.interval(0.95, n - 1, loc=mean,
  scale=sd / sqrt(n))`, as the paper does (its section 10.8: "t.interval from SciPy.stats"). n < 2: sd and
  interval NaN; sd == 0 (every item the same value): the interval is the point (scipy would give NaN).
- `level_tests`: per (source, judge, outcome, factor), every two levels a < b (sorted): Welch's t-test
  (`scipy.stats.ttest_ind(b, a, equal_var=False)`; Welch 1947), `difference` = mean(b) - mean(a), so t and the
  difference share their sign. A level with fewer than 2 items, or both levels without variance, gives a row with
  p NaN and a note, outside the correction. Holm's correction (Holm 1979, statsmodels `multipletests`) over the
  family of one (source, judge) pair: every test of its outcomes and factors; `significant`: adjusted p < 0.05.
- `judge_pair_agreement`: per treatment category and every two judge models (names sorted), over the items both
  judged (same source and item), the share of items with the same label (`percent_agreement`, a share in 0-1 as
  in `analysis/judge_agreement.py`) and Cohen's kappa (Cohen 1960; `judge_agreement.confusion_statistics`, which
  equals statsmodels' `cohens_kappa`). A judge's label is its majority over repeats (mean > 0.5 is yes, < 0.5
  no); a tie leaves the item out for that judge. A last row, category `mean` and judges `all`, carries the mean
  of the cells' kappas and percent agreements (the paper's Table 1 "average of 0.118" over its nine cells; cells
  with an undefined kappa are left out of the mean) and the sum of their items.
- `generalisation`: per effect (outcome, factor, level_a, level_b) across (source, judge) pairs: `n_pairs`
  tested, `n_significant` after Holm, `n_same_direction` = how many of the significant ones share the most
  common sign of the difference (n_significant == n_same_direction: every significant pair agrees on the
  direction); then `directions`, e.g. `+2 / -1` (significant pairs with b above a / below a).

Pure: numpy, pandas, scipy, statsmodels; no Django (analysis/DESIGN.md, "MEDIC statistics").
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats.multitest import multipletests

from analysis.judge_agreement import confusion_statistics

# --- the results table's judge rows ------------------------------------------------------------------------------
JUDGE_KIND = "judge"  # the results table's `kind` of a judge's row (analysis/results_frames.JUDGE; kept pure here)
HALLUCINATIONS_FIELD, OMISSIONS_FIELD = "hallucinations", "omissions"  # list fields: one row per element
HARM_KEY = "harm"  # an element's harm on MEDIC's 0-7 scale
LIST_OUTCOMES = {  # field -> (count outcome, mean harm outcome)
    HALLUCINATIONS_FIELD: ("hallucinations", "hallucination_harm"),
    OMISSIONS_FIELD: ("omissions", "omission_harm"),
}
CATEGORY_OUTCOMES = {"manage": "MANAGE", "visit": "VISIT", "resource": "RESOURCE"}  # yes/no field -> outcome
YES_NO = {"yes": 1.0, "no": 0.0}
CATEGORIES = tuple(CATEGORY_OUTCOMES.values())

# --- output columns ----------------------------------------------------------------------------------------------
OBSERVATION_COLUMNS = ["source", "judge", "item", "outcome", "value"]  # then one column per factor
MEANS_COLUMNS = ["study", "source", "judge", "outcome", "factor", "level", "n", "mean", "sd", "ci_low", "ci_high"]
TEST_COLUMNS = [
    *["source", "judge", "outcome", "factor", "level_a", "level_b", "n_a", "n_b", "mean_a", "mean_b"],
    *["difference", "t", "p_value", "p_adjusted", "significant", "note"],
]
PAIR_AGREEMENT_COLUMNS = ["study", "category", "judge_a", "judge_b", "n_items", "percent_agreement", "cohen_kappa"]
GENERALISATION_COLUMNS = [
    *["study", "outcome", "factor", "level_a", "level_b", "n_pairs", "n_significant", "n_same_direction"],
    "directions",
]
MEAN_CATEGORY, ALL_JUDGES = "mean", "all"
CONFIDENCE = 0.95
ALPHA = 0.05
MIN_ITEMS = 2  # a level with fewer items has no variance to test
FEW_ITEMS = "not tested: fewer than 2 items in a level"
NO_VARIANCE = "not tested: no variance in either level"
KEYS = ["source", "judge", "outcome"]


# --- the frame from the results table ----------------------------------------------------------------------------


def medic_observations(
    results: pd.DataFrame, *, judge_models: Mapping[str, str], factors: Sequence[str]
) -> pd.DataFrame:
    """The judge observations (`OBSERVATION_COLUMNS` + factors) from the results table's rows of kind `judge`.

    `judge_models` maps a judge's name (`who`) to its model: several judges (one per rubric part) may share one,
    and their rows become that model's. A list field (`hallucinations`, `omissions`) gives, per (item, judge,
    repeat), the count of its non-empty rows (0 when only the empty row: answered, none found) and the mean of
    its elements' `harm` (no row when there is no element). A yes/no field (`manage`, `visit`, `resource`) gives
    1/0 under `MANAGE`, `VISIT`, `RESOURCE`. Other fields and kinds are ignored; a judge missing from
    `judge_models`, a harm that is not a number or a category value other than yes/no is an error. One row per
    repeat: the statistics average them. Factor levels come from `levels` (JSON); absent: empty string.
    """
    rows = results[(results["kind"].astype(str) == JUDGE_KIND)]
    rows = rows[rows["field"].astype(str).isin([*LIST_OUTCOMES, *CATEGORY_OUTCOMES])]
    columns = [*OBSERVATION_COLUMNS, *factors]
    if rows.empty:
        return pd.DataFrame(columns=columns)
    unknown = sorted(set(rows["who"].astype(str)) - set(judge_models))
    if unknown:
        raise ValueError(f"judges without a model: {', '.join(unknown)}")
    repeat = rows["repeat"] if "repeat" in rows.columns else pd.Series(0, index=rows.index)
    value = rows["value"].astype(object).where(rows["value"].notna(), "").astype(str)
    frame = pd.DataFrame(
        {
            "source": rows["source"].astype(str),
            "judge": rows["who"].astype(str).map(judge_models),
            "who": rows["who"].astype(str),
            "item": rows["item"],
            "repeat": repeat.fillna(0).astype("int64"),
            "field": rows["field"].astype(str),
            "value": value,
            "levels": rows["levels"].astype(object).where(rows["levels"].notna(), "").astype(str),
        }
    )
    # Per judge (not model) and repeat: two judges of one model count apart, the statistics average them.
    keys = ["source", "judge", "who", "item", "repeat", "levels"]
    parts = [_list_outcomes(frame[frame["field"] == field], keys, *LIST_OUTCOMES[field]) for field in LIST_OUTCOMES]
    parts.append(_category_outcomes(frame[frame["field"].isin(list(CATEGORY_OUTCOMES))], keys))
    observations = pd.concat(parts, ignore_index=True)
    levels = {text: _levels(text) for text in observations["levels"].unique()}
    for factor in factors:
        observations[factor] = observations["levels"].map(
            {text: _level_text(parsed.get(factor)) for text, parsed in levels.items()}
        )
    return observations[columns].reset_index(drop=True)


def _levels(text: str) -> dict[str, object]:
    parsed = json.loads(text) if text else {}
    if not isinstance(parsed, dict):
        raise ValueError(f"levels are not a JSON object: {text!r}")
    return parsed


def _level_text(level: object) -> str:
    return "" if level is None else str(level)


def _harm(element: str) -> float:
    parsed = json.loads(element)
    harm = parsed.get(HARM_KEY) if isinstance(parsed, dict) else None
    try:
        if isinstance(harm, bool) or not isinstance(harm, int | float | str):
            raise TypeError
        return float(harm)
    except (TypeError, ValueError):
        raise ValueError(f"an element without a numeric {HARM_KEY!r}: {element!r}") from None


def _list_outcomes(rows: pd.DataFrame, keys: list[str], count: str, harm: str) -> pd.DataFrame:
    """Per (keys): the count of non-empty elements and, when there is one, their mean harm."""
    present = rows["value"] != ""
    counts = rows.assign(value=present.astype(float)).groupby(keys, sort=False, observed=True)["value"].sum()
    elements = rows[present]
    harm_values = elements.assign(value=elements["value"].map(_harm).astype(np.float64))
    harms = harm_values.groupby(keys, sort=False, observed=True)["value"]
    return pd.concat(
        [
            counts.reset_index().assign(outcome=count),
            harms.mean().reset_index().assign(outcome=harm),
        ],
        ignore_index=True,
    )


def _category_outcomes(rows: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    values = rows["value"].str.strip().str.lower()
    bad = sorted(set(values) - set(YES_NO))
    if bad:
        raise ValueError(f"a treatment category is not yes/no: {', '.join(map(repr, bad))}")
    return rows[keys].assign(outcome=rows["field"].map(CATEGORY_OUTCOMES), value=values.map(YES_NO).astype(float))


# --- one value per (source, judge, item, outcome) ----------------------------------------------------------------


def item_values(obs: pd.DataFrame, factors: Sequence[str] = ()) -> pd.DataFrame:
    """One row per (source, judge, outcome, item): the mean of its rows (repeats), each factor's first level."""
    keys = [*KEYS, "item"]
    grouped = obs.groupby(keys, sort=True, observed=True)
    values = grouped["value"].mean().rename("value")
    if not factors:
        return values.reset_index()
    levels = grouped[list(factors)].first().fillna("").astype(str)
    return pd.concat([values, levels], axis=1).reset_index()


def _describe(values: np.ndarray) -> tuple[int, float, float, float, float]:
    """n, mean, sd (ddof 1), and the 95% t-interval (NaN below 2 items; the point when sd is 0)."""
    n = len(values)
    mean = float(values.mean()) if n else math.nan
    if n < 2:
        return n, mean, math.nan, math.nan, math.nan
    sd = float(values.std(ddof=1))
    if sd == 0:
        return n, mean, sd, mean, mean
    low, high = stats.t.interval(CONFIDENCE, n - 1, loc=mean, scale=sd / math.sqrt(n))
    return n, mean, sd, float(low), float(high)


def judge_means(obs: pd.DataFrame, *, study: str, factors: Sequence[str]) -> pd.DataFrame:
    """The `judge_means.csv` rows (`MEANS_COLUMNS`): per (source, judge, outcome), all items then each level."""
    values = item_values(obs, factors)
    rows: list[dict[str, object]] = []
    for (source, judge, outcome), group in values.groupby(KEYS, sort=True, observed=True):
        subsets: list[tuple[str, str, pd.DataFrame]] = [("", "", group)]
        for factor in factors:
            for level, at_level in group[group[factor] != ""].groupby(factor, sort=True):
                subsets.append((factor, str(level), at_level))
        for factor, level, subset in subsets:
            n, mean, sd, low, high = _describe(subset["value"].to_numpy(dtype=np.float64))
            rows.append(dict(study=study, source=source, judge=judge, outcome=outcome, factor=factor, level=level,
                             n=n, mean=mean, sd=sd, ci_low=low, ci_high=high))  # fmt: skip
    return pd.DataFrame(rows, columns=MEANS_COLUMNS)


# --- level comparisons --------------------------------------------------------------------------------------------


def _welch(a: np.ndarray, b: np.ndarray) -> tuple[float, float, str]:
    """t and p of Welch's test of b against a, or NaN with the reason it was not made."""
    if len(a) < MIN_ITEMS or len(b) < MIN_ITEMS:
        return math.nan, math.nan, FEW_ITEMS
    if a.var() == 0 and b.var() == 0:
        return math.nan, math.nan, NO_VARIANCE
    result = stats.ttest_ind(b, a, equal_var=False)
    return float(result.statistic), float(result.pvalue), ""


def level_tests(obs: pd.DataFrame, *, factors: Sequence[str]) -> pd.DataFrame:
    """Welch's test of every two levels per (source, judge, outcome, factor), Holm per (source, judge) pair."""
    values = item_values(obs, factors)
    rows: list[dict[str, object]] = []
    for (source, judge, outcome), group in values.groupby(KEYS, sort=True, observed=True):
        for factor in factors:
            by_level = {
                str(level): at_level["value"].to_numpy(dtype=np.float64)
                for level, at_level in group[group[factor] != ""].groupby(factor, sort=True)
            }
            for level_a, level_b in combinations(sorted(by_level), 2):
                a, b = by_level[level_a], by_level[level_b]
                t, p, note = _welch(a, b)
                rows.append(dict(source=source, judge=judge, outcome=outcome, factor=factor, level_a=level_a,
                                 level_b=level_b, n_a=len(a), n_b=len(b), mean_a=float(a.mean()),
                                 mean_b=float(b.mean()), difference=float(b.mean() - a.mean()), t=t, p_value=p,
                                 p_adjusted=math.nan, significant=False, note=note))  # fmt: skip
    tests = pd.DataFrame(rows, columns=TEST_COLUMNS)
    for _, family in tests[tests["p_value"].notna()].groupby(["source", "judge"], sort=False):
        raw = family["p_value"].to_numpy(dtype=np.float64)
        adjusted = raw if len(raw) == 1 else multipletests(raw, alpha=ALPHA, method="holm")[1]
        tests.loc[family.index, "p_adjusted"] = adjusted
        tests.loc[family.index, "significant"] = adjusted < ALPHA
    return tests.astype({"significant": bool})


# --- judge against judge ------------------------------------------------------------------------------------------


def _labels(values: pd.DataFrame) -> pd.DataFrame:
    """(source, item) x judge: each judge's majority label over repeats (1, 0; NaN for a tie or no rating)."""
    means = values.pivot_table(index=["source", "item"], columns="judge", values="value", aggfunc="mean")
    return (means > 0.5).astype(np.float64).where(means.notna() & (means != 0.5))


def judge_pair_agreement(obs: pd.DataFrame, *, study: str, categories: Sequence[str] = CATEGORIES) -> pd.DataFrame:
    """The `judge_agreement.csv` rows (`PAIR_AGREEMENT_COLUMNS`): per category and two judge models, then `mean`."""
    values = item_values(obs[obs["outcome"].isin(list(categories))])
    rows: list[dict[str, object]] = []
    for category in categories:
        labels = _labels(values[values["outcome"] == category])
        for judge_a, judge_b in combinations(sorted(map(str, labels.columns)), 2):
            both = labels[[judge_a, judge_b]].dropna().to_numpy(dtype=np.float64).astype(np.int64)
            table = np.bincount(both[:, 0] * 2 + both[:, 1], minlength=4).reshape(2, 2).astype(np.float64)
            statistics = confusion_statistics(table[None, None])
            rows.append(dict(study=study, category=category, judge_a=judge_a, judge_b=judge_b, n_items=len(both),
                             percent_agreement=float(statistics["percent_agreement"][0]),
                             cohen_kappa=float(statistics["cohen_kappa"][0])))  # fmt: skip
    cells = pd.DataFrame(rows, columns=PAIR_AGREEMENT_COLUMNS)
    if not cells.empty:
        rows.append(dict(study=study, category=MEAN_CATEGORY, judge_a=ALL_JUDGES, judge_b=ALL_JUDGES,
                         n_items=int(cells["n_items"].sum()),
                         percent_agreement=float(cells["percent_agreement"].mean()),
                         cohen_kappa=float(cells["cohen_kappa"].mean())))  # fmt: skip
    return pd.DataFrame(rows, columns=PAIR_AGREEMENT_COLUMNS)


# --- does an effect generalise across pairs? ----------------------------------------------------------------------


def generalisation(tests: pd.DataFrame, *, study: str) -> pd.DataFrame:
    """The `generalisation.csv` rows (`GENERALISATION_COLUMNS`) from `level_tests`' rows, one per effect."""
    tested = tests[tests["p_value"].notna()]
    rows: list[dict[str, object]] = []
    effects = ["outcome", "factor", "level_a", "level_b"]
    for (outcome, factor, level_a, level_b), group in tested.groupby(effects, sort=True):
        significant = group[group["significant"].astype(bool)]
        up = int((significant["difference"] > 0).sum())
        down = int((significant["difference"] < 0).sum())
        rows.append(dict(study=study, outcome=outcome, factor=factor, level_a=level_a, level_b=level_b,
                         n_pairs=len(group), n_significant=len(significant), n_same_direction=max(up, down),
                         directions=f"+{up} / -{down}"))  # fmt: skip
    return pd.DataFrame(rows, columns=GENERALISATION_COLUMNS)


# --- the four tables at once --------------------------------------------------------------------------------------

TABLE_FILES = {"generalisation": "generalisation.csv", "means": "judge_means.csv", "agreement": "judge_agreement.csv"}


@dataclass(frozen=True)
class MedicReport:
    """A study's MEDIC tables: `means`, `tests` (`level_tests`), `agreement` and `generalisation`."""

    factors: tuple[str, ...]
    means: pd.DataFrame
    tests: pd.DataFrame
    agreement: pd.DataFrame
    generalisation: pd.DataFrame

    def tables(self) -> dict[str, pd.DataFrame]:
        """The tables `analyze --study` writes, by file name (`TABLE_FILES`)."""
        return {name: getattr(self, attribute) for attribute, name in TABLE_FILES.items()}


def present_factors(results: pd.DataFrame, factors: Sequence[str]) -> tuple[str, ...]:
    """The factors (in the given order) that some judged item's `levels` carry."""
    rows = results[results["kind"].astype(str) == JUDGE_KIND]
    keys: set[str] = set()
    for text in rows["levels"].dropna().astype(str).unique():
        keys.update(_levels(text))
    return tuple(factor for factor in factors if factor in keys)


def medic_report(
    results: pd.DataFrame, *, study: str, judge_models: Mapping[str, str], factors: Sequence[str]
) -> MedicReport:
    """Every MEDIC table from the results table, over the `factors` its judged items carry."""
    present = present_factors(results, factors)
    obs = medic_observations(results, judge_models=judge_models, factors=present)
    tests = level_tests(obs, factors=present)
    return MedicReport(
        factors=present,
        means=judge_means(obs, study=study, factors=present),
        tests=tests,
        agreement=judge_pair_agreement(obs, study=study),
        generalisation=generalisation(tests, study=study),
    )
