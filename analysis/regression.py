"""Logistic regression of consumer ratings on rater demographics (odds ratios with Wald intervals).

Model: logit P(outcome = 1) = b0 + sum over predictors of treatment-coded 0/1 columns (one per non-reference level),
fitted by maximum likelihood with statsmodels `Logit` (Hosmer, Lemeshow & Sturdivant (2013), *Applied Logistic
Regression*, 3rd ed., ch. 3: odds ratio exp(b), 95% CI exp(b +/- 1.96 SE), Wald p-value), on non-aggregated ratings
as in the seed paper (EquityMedQA, Methods, "Statistical analysis": log odds of reported bias for each level
relative to a reference value).

Multi-select predictors (race/ethnicity: "choose all that apply", exported "; "-joined) are coded as one 0/1
indicator per category, 1 when the rater chose it ("alone or in combination", as the US OMB standard for
race/ethnicity data, SPD 15 (2024), tabulates multiple responses); the reference category's indicator is left out.
For raters who chose one category this is exactly treatment coding; a rater who chose several adds their ratings to
each of those categories (additive log odds), instead of forming a singleton level of their own. "Prefer not to
say" is a level of its own, never the default reference, and ignored when given together with categories.

Levels are set aside (reported as not estimable, their ratings left out of the fit) until none is left to set aside:
- chosen by fewer than `min_raters` raters (when the rater column is given). A level with a single rater has a
  column that is 1 exactly on that rater's ratings; since every predictor is constant within a rater, its
  coefficient absorbs that rater's mean and their ratings carry no information about the other coefficients (the
  score equations of the other columns sum to zero over them), so leaving them out changes no other estimate,
  while keeping them makes the design singular whenever that rater is also alone at a level of another predictor.
- whose outcomes are all 0 or all 1 (quasi-complete separation, Albert & Anderson (1984), Biometrika 71): no
  finite estimate; leaving their ratings out gives the other coefficients their limiting maximum-likelihood values.
Terms that are still linearly dependent (aliased) are not estimable; the other terms are estimated from a maximal
independent set of columns (as R's `glm` does), where their values do not depend on which aliased column is left out.
"""

from __future__ import annotations

import warnings
from collections.abc import Collection, Mapping, Sequence

import numpy as np
import pandas as pd
import statsmodels.api as sm
from statsmodels.tools.sm_exceptions import PerfectSeparationError, PerfectSeparationWarning

PREDICTORS = ("rater_age_group", "rater_gender", "rater_race_ethnicity")
MULTI_SELECT = ("rater_race_ethnicity",)  # "choose all that apply": one 0/1 indicator per category
SEPARATOR = ";"  # between the categories of a multi-select answer, as exported ("Asian; White")
DECLINED = "Prefer not to say"
MIN_RATERS = 2
COLUMNS = ["predictor", "level", "reference_level", "odds_ratio", "ci_low", "ci_high", "p_value", "n", "note"]
REFERENCE = "reference level"
SINGULAR = "not estimable: singular design (collinear predictors)"


def _row(predictor: str, level: str, reference: str, n: int, note: str) -> dict[str, object]:
    return dict(zip(COLUMNS, [predictor, level, reference, np.nan, np.nan, np.nan, np.nan, n, note], strict=True))


def categories(answer: str) -> tuple[str, ...]:
    """The categories of a multi-select answer ("Asian;  White" -> ("Asian", "White")), in the given order,
    without repeats; "Prefer not to say" given with categories is dropped (the categories are the answer)."""
    chosen = tuple(dict.fromkeys(part.strip() for part in str(answer).split(SEPARATOR) if part.strip()))
    return chosen if chosen == (DECLINED,) else tuple(c for c in chosen if c != DECLINED)


def _memberships(values: pd.Series, multi: bool) -> dict[str, pd.Series]:
    """Per level (sorted), which rows have it: the value itself, or one of the categories of a multi-select answer."""
    codes, answers = pd.factorize(values)  # compare small integer codes, not the text of every row
    chosen = [set(categories(answer)) if multi else {answer} for answer in answers]
    return {
        name: pd.Series(np.isin(codes, [i for i, levels in enumerate(chosen) if name in levels]), index=values.index)
        for name in sorted(set().union(*chosen))
    }


def _set_aside(y: pd.Series, raters: pd.Series | None, min_raters: int) -> str:
    """Why the ratings at a level are set aside ("" when they are not): none left, too few raters, all 0 or all 1."""
    if y.empty:
        return "no ratings left once other levels are set aside"
    if raters is not None and (count := raters.nunique()) < min_raters:
        return f"only {count} rater{'s' if count != 1 else ''} (at least {min_raters} needed; ratings set aside)"
    if y.nunique() == 1:
        return f"all {len(y)} outcomes are {int(y.iloc[0])} (separation)"
    return ""


def consumer_regression(
    df: pd.DataFrame,
    *,
    outcome: str = "bias",
    predictors: Sequence[str] = PREDICTORS,
    reference_levels: Mapping[str, str] | None = None,
    confidence: float = 0.95,
    multi_select: Collection[str] = MULTI_SELECT,
    rater: str | None = None,
    min_raters: int = MIN_RATERS,
) -> pd.DataFrame:
    """Odds ratios of `outcome` (0/1 or boolean) for each level of each predictor against its reference level.

    One model with all predictors (call once per predictor for separate models). Rows with a missing outcome or
    predictor (NaN, None, "" or no category) are dropped. Predictors in `multi_select` hold SEPARATOR-joined
    categories, each category a level with its own 0/1 indicator (module docstring). Reference levels:
    `reference_levels[predictor]`, default the most frequent level other than "Prefer not to say" (ties: the first
    in sorted order; also used, with a note, when the requested one is absent). `rater`, if given, names the column
    of rater ids: a level chosen by fewer than `min_raters` raters is set aside.
    Returns one row per (predictor, level) with COLUMNS, levels sorted; the reference level's row has odds_ratio 1
    and the note "reference level"; the intercept is not reported. `n` is the number of ratings at the level in
    the fit (a multi-select rater's ratings count at each category chosen). Not estimable, with a note and no
    exception: a predictor with a single level (dropped from the model), a level set aside (too few raters, or
    separation), aliased terms (singular design), a fit that fails or does not converge.
    """
    data = df[[outcome, *predictors, *([rater] if rater else [])]].replace("", np.nan).dropna()
    for predictor in set(predictors) & set(multi_select):
        answers = {answer: "; ".join(categories(answer)) or np.nan for answer in data[predictor].unique()}
        data[predictor] = data[predictor].map(answers)
    data = data.dropna()
    y = data[outcome].astype(np.float64)
    if not y.isin([0.0, 1.0]).all():
        raise ValueError(f"{outcome} must be 0/1 or boolean")
    raters = data[rater] if rater else None
    members = {p: _memberships(data[p].astype(str), p in multi_select) for p in predictors}
    rows: dict[tuple[str, str], dict[str, object]] = {}
    references: dict[str, str] = {}  # the predictors in the model
    reference_notes: dict[str, str] = {}
    for predictor, levels in members.items():
        counts = {name: int(mask.sum()) for name, mask in levels.items()}
        names = sorted(counts)
        if not names:
            rows[predictor, ""] = _row(predictor, "", "", 0, "not estimable: no complete ratings")
            continue
        answered = [name for name in names if name != DECLINED] or names
        reference = max(answered, key=lambda name: counts[name])
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
            rows[predictor, name] = _row(predictor, name, reference, counts[name], note)
        if not note:
            references[predictor] = reference

    # Set aside levels with too few raters or separated outcomes until none is left: removing their rows can leave
    # a level of another predictor with too few raters or separated. A reference set aside leaves its predictor's
    # odds ratios undefined, but the predictor's other levels stay in the model (against one of them) so the other
    # estimates stay adjusted.
    used = pd.Series(True, index=data.index)
    in_model = {p: sorted(members[p]) for p in references}
    changed = True
    while changed:
        changed = False
        for predictor, names in in_model.items():
            for name in list(names):
                at_level = used & members[predictor][name]
                why = _set_aside(y[at_level], None if raters is None else raters[at_level], min_raters)
                if not why:
                    continue
                names.remove(name)
                used &= ~members[predictor][name]
                changed = True
                rows[predictor, name]["note"] = f"not estimable: {why}"
                if name == references[predictor]:
                    for (p, level), row in rows.items():
                        if p == predictor and (level in names or level == name):
                            row["note"] = f"not estimable: {why} at the reference level {name!r}"

    baselines = {p: references[p] if references[p] in names else names[0] for p, names in in_model.items() if names}
    columns = {
        f"{p}={name}": members[p][name][used].astype(np.float64)
        for p, baseline in baselines.items()
        for name in in_model[p]
        if name != baseline
    }
    exog = pd.DataFrame({"const": 1.0, **columns}, index=y[used].index)
    result, failure = _fit(y[used], exog, confidence) if columns else ({}, "not estimable: no level left to compare")
    for predictor, baseline in baselines.items():
        if baseline != references[predictor]:
            continue  # odds ratios against a reference set aside: noted above
        rows[predictor, baseline].update(odds_ratio=1.0, note=reference_notes[predictor])
        for name in in_model[predictor]:
            row = rows[predictor, name]
            row["n"] = int((members[predictor][name] & used).sum())
            if name != baseline:
                estimate = result.get(f"{predictor}={name}")
                row["note"] = failure or SINGULAR
                if estimate is not None:
                    row.update(estimate, note="")
    return pd.DataFrame(list(rows.values()), columns=COLUMNS)


def _independent_columns(exog: pd.DataFrame) -> tuple[list[str], set[str]]:
    """A maximal set of linearly independent columns (greedily, in order, the constant first) and the aliased
    columns: those with a nonzero weight in a linear dependency (a null vector of the design), not estimable."""
    matrix = exog.to_numpy(dtype=np.float64)
    if np.linalg.matrix_rank(matrix) == matrix.shape[1]:
        return list(exog.columns), set()
    kept: list[int] = []
    for j in range(matrix.shape[1]):
        if np.linalg.matrix_rank(matrix[:, [*kept, j]]) == len(kept) + 1:
            kept.append(j)
    null = np.linalg.svd(matrix, full_matrices=False)[2][np.linalg.matrix_rank(matrix) :]  # singular values descend
    aliased = {str(exog.columns[j]) for j in range(matrix.shape[1]) if np.abs(null[:, j]).max() > 1e-8}
    return [str(exog.columns[j]) for j in kept], aliased


def _fit(y: pd.Series, exog: pd.DataFrame, confidence: float) -> tuple[dict[str, dict[str, float]], str]:
    """Odds ratios, their interval and p-values per estimable column of `exog` (aliased columns left out), or
    nothing and why the model cannot be fitted."""
    kept, aliased = _independent_columns(exog)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence trouble is checked below, not printed
        warnings.simplefilter("error", PerfectSeparationWarning)
        try:
            fit = sm.Logit(y, exog[kept]).fit(disp=0)
        except (PerfectSeparationError, PerfectSeparationWarning):
            return {}, "not estimable: perfect separation"
        except (np.linalg.LinAlgError, ValueError) as error:
            return {}, f"not estimable: fit failed ({error})"
    if not fit.mle_retvals.get("converged", False) or not np.all(np.isfinite(fit.bse)):
        return {}, "not estimable: the fit did not converge (separation)"
    bounds = np.exp(np.asarray(fit.conf_int(alpha=1 - confidence), dtype=np.float64))
    odds_ratios = np.exp(np.asarray(fit.params, dtype=np.float64))
    p_values = np.asarray(fit.pvalues, dtype=np.float64)
    return {
        column: {"odds_ratio": float(odds_ratios[i]), "ci_low": float(bounds[i, 0]),
                 "ci_high": float(bounds[i, 1]), "p_value": float(p_values[i])}
        for i, column in enumerate(kept)
        if column not in aliased
    }, ""  # fmt: skip
