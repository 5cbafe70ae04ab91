"""Logistic regression of consumer ratings on rater demographics (odds ratios with Wald intervals).

Model: logit P(outcome = 1) = b0 + sum over predictors of treatment-coded dummies (one per non-reference level),
fitted by maximum likelihood with statsmodels `Logit` (Hosmer, Lemeshow & Sturdivant (2013), *Applied Logistic
Regression*, 3rd ed., ch. 3: odds ratio exp(b), 95% CI exp(b +/- 1.96 SE), Wald p-value). Levels whose ratings
are all 0 or all 1 (quasi-complete separation, Albert & Anderson (1984), Biometrika 71) have no finite
estimate; they are reported as not estimable and their ratings set aside, which gives the other coefficients
their limiting maximum-likelihood values.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import statsmodels.api as sm
from statsmodels.tools.sm_exceptions import PerfectSeparationError, PerfectSeparationWarning

PREDICTORS = ("rater_age_group", "rater_gender", "rater_race_ethnicity")
COLUMNS = ["predictor", "level", "reference_level", "odds_ratio", "ci_low", "ci_high", "p_value", "n", "note"]
REFERENCE = "reference level"


def _row(predictor: str, level: str, reference: str, n: int, note: str) -> dict[str, object]:
    return dict(zip(COLUMNS, [predictor, level, reference, np.nan, np.nan, np.nan, np.nan, n, note], strict=True))


def _separated(outcomes: pd.Series) -> str:
    """Why the ratings at a level have no finite log odds ("" when they have): none left, or all 0 or all 1."""
    if outcomes.empty:
        return "no ratings left once separated levels are set aside"
    if outcomes.nunique() == 1:
        return f"all {len(outcomes)} outcomes are {int(outcomes.iloc[0])}"
    return ""


def consumer_regression(
    df: pd.DataFrame,
    *,
    outcome: str = "bias",
    predictors: Sequence[str] = PREDICTORS,
    reference_levels: Mapping[str, str] | None = None,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Odds ratios of `outcome` (0/1 or boolean) for each level of each predictor against its reference level.

    One model with all predictors (call once per predictor for separate models). Rows with a missing outcome or
    predictor (NaN, None or "") are dropped. Reference levels: `reference_levels[predictor]`, default the most
    frequent level (ties: the first in sorted order; also used, with a note, when the requested one is absent).
    Returns one row per (predictor, level) with COLUMNS, levels sorted; the reference level's row has odds_ratio 1
    and the note "reference level"; the intercept is not reported. `n` is the number of ratings at the level in
    the fit. Not estimable, with a note and no exception: a predictor with a single level (dropped from the
    model), a level whose outcomes are all 0 or all 1 (separation; its ratings are set aside), a singular design
    (collinear predictors), a fit that fails or does not converge.
    """
    data = df[[outcome, *predictors]].replace("", np.nan).dropna()
    y = data[outcome].astype(np.float64)
    if not y.isin([0.0, 1.0]).all():
        raise ValueError(f"{outcome} must be 0/1 or boolean")
    levels = {p: data[p].astype(str) for p in predictors}
    rows: dict[tuple[str, str], dict[str, object]] = {}
    references: dict[str, str] = {}  # the predictors in the model
    reference_notes: dict[str, str] = {}
    for predictor, values in levels.items():
        counts = values.value_counts()
        names = sorted(counts.index)
        if not names:
            rows[predictor, ""] = _row(predictor, "", "", 0, "not estimable: no complete ratings")
            continue
        reference = max(names, key=lambda name: counts[name])
        requested = (reference_levels or {}).get(predictor)
        reference_notes[predictor] = REFERENCE
        if requested in counts:
            reference = str(requested)
        elif requested is not None:
            reference_notes[predictor] = f"{REFERENCE} (the requested {requested!r} is not in the data)"
        note = ""
        if len(names) < 2:  # a constant column: dropping it leaves the other estimates unchanged
            note = f"not estimable: only one level ({names[0]!r}) in the data"
        elif y.nunique() < 2:
            note = f"not estimable: all {len(y)} outcomes are {int(y.iloc[0])}"
        for name in names:
            rows[predictor, name] = _row(predictor, name, reference, int(counts[name]), note)
        if not note:
            references[predictor] = reference

    # Set aside separated levels (all outcomes 0 or 1) until none is left: removing their rows can separate a
    # level of another predictor. A separated reference leaves its predictor's odds ratios undefined, but the
    # predictor's other levels stay in the model (against one of them) so the other estimates stay adjusted.
    used = pd.Series(True, index=data.index)
    in_model = {p: sorted(levels[p].unique()) for p in references}
    changed = True
    while changed:
        changed = False
        for predictor, names in in_model.items():
            for name in list(names):
                why = _separated(y[used & (levels[predictor] == name)])
                if not why:
                    continue
                names.remove(name)
                used &= levels[predictor] != name
                changed = True
                if name == references[predictor]:
                    why = f"{why} at the reference level {name!r}"
                    for (p, level), row in rows.items():
                        if p == predictor and level in names:
                            row["note"] = f"not estimable: {why}"
                rows[predictor, name]["note"] = f"not estimable: {why} (separation)"

    baselines = {p: references[p] if references[p] in names else names[0] for p, names in in_model.items() if names}
    columns = {
        f"{p}={name}": (levels[p][used] == name).astype(np.float64)
        for p, baseline in baselines.items()
        for name in in_model[p]
        if name != baseline
    }
    exog = pd.DataFrame({"const": 1.0, **columns}, index=y[used].index)
    result, failure = _fit(y[used], exog, confidence) if columns else (None, "not estimable: no level left to compare")
    for predictor, baseline in baselines.items():
        if baseline != references[predictor]:
            continue  # odds ratios against a separated reference: noted above
        rows[predictor, baseline].update(odds_ratio=1.0, note=reference_notes[predictor])
        for name in in_model[predictor]:
            row = rows[predictor, name]
            row["n"] = int((levels[predictor][used] == name).sum())
            if name != baseline:
                row["note"] = failure
                if result is not None:
                    row.update(result[f"{predictor}={name}"])
    return pd.DataFrame(list(rows.values()), columns=COLUMNS)


def _fit(y: pd.Series, exog: pd.DataFrame, confidence: float) -> tuple[dict[str, dict[str, float]] | None, str]:
    """Odds ratios, their interval and p-values per column of `exog`, or None and why the model cannot be fitted."""
    if np.linalg.matrix_rank(exog.to_numpy()) < exog.shape[1]:
        return None, "not estimable: singular design (collinear predictors)"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence trouble is checked below, not printed
        warnings.simplefilter("error", PerfectSeparationWarning)
        try:
            fit = sm.Logit(y, exog).fit(disp=0)
        except (PerfectSeparationError, PerfectSeparationWarning):
            return None, "not estimable: perfect separation"
        except (np.linalg.LinAlgError, ValueError) as error:
            return None, f"not estimable: fit failed ({error})"
    if not fit.mle_retvals.get("converged", False) or not np.all(np.isfinite(fit.bse)):
        return None, "not estimable: the fit did not converge (separation)"
    bounds = np.exp(np.asarray(fit.conf_int(alpha=1 - confidence), dtype=np.float64))
    odds_ratios = np.exp(np.asarray(fit.params, dtype=np.float64))
    p_values = np.asarray(fit.pvalues, dtype=np.float64)
    return {
        str(column): {"odds_ratio": float(odds_ratios[i]), "ci_low": float(bounds[i, 0]),
                      "ci_high": float(bounds[i, 1]), "p_value": float(p_values[i])}
        for i, column in enumerate(exog.columns)
    }, ""  # fmt: skip
