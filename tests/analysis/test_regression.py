"""Consumer regression: known odds ratios recovered, equality with a direct statsmodels fit, degenerate data."""

import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf

from analysis.regression import COLUMNS, REFERENCE, consumer_regression

AGES = ["18-29", "30-44", "45-64", "65+"]
GENDERS = ["Man", "Woman", "Non-binary"]
# True odds ratios against the references 65+ and Man (the paper's style: age groups against the oldest).
AGE_OR = {"18-29": 2.0, "30-44": 1.5, "45-64": 1.2, "65+": 1.0}
GENDER_OR = {"Man": 1.0, "Woman": 0.8, "Non-binary": 1.4}


def synthetic(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.choice(AGES, n, p=[0.2, 0.3, 0.3, 0.2])
    gender = rng.choice(GENDERS, n, p=[0.45, 0.47, 0.08])
    log_odds = -1.0 + np.log([AGE_OR[a] for a in age]) + np.log([GENDER_OR[g] for g in gender])
    bias = rng.random(n) < 1 / (1 + np.exp(-log_odds))
    race = rng.choice(["White", "Black", "Asian"], n)  # no effect
    return pd.DataFrame({"bias": bias, "rater_age_group": age, "rater_gender": gender, "rater_race_ethnicity": race})


def by_level(result: pd.DataFrame, predictor: str) -> pd.DataFrame:
    return result[result["predictor"] == predictor].set_index("level")


def test_known_odds_ratios_are_recovered():
    """n = 60,000: the standard error of a log odds ratio is about 0.03-0.06, so 0.15 is more than 2.5 SE."""
    result = consumer_regression(
        synthetic(60_000, 1), reference_levels={"rater_age_group": "65+", "rater_gender": "Man"}
    )
    assert list(result.columns) == COLUMNS
    for predictor, truth in [("rater_age_group", AGE_OR), ("rater_gender", GENDER_OR)]:
        rows = by_level(result, predictor)
        for level, odds_ratio in truth.items():
            assert abs(np.log(rows.loc[level, "odds_ratio"]) - np.log(odds_ratio)) < 0.15, (predictor, level)
        estimated = rows[rows["note"] == ""]
        assert (estimated["ci_low"] < estimated["odds_ratio"]).all()
        assert (estimated["odds_ratio"] < estimated["ci_high"]).all()
    race = by_level(result, "rater_race_ethnicity")
    assert (race["note"].isin(["", REFERENCE])).all()
    assert (np.abs(np.log(race["odds_ratio"])) < 0.1).all()


def test_equals_a_direct_statsmodels_formula_fit():
    df = synthetic(3000, 2)
    references = {"rater_age_group": "65+", "rater_gender": "Woman", "rater_race_ethnicity": "Black"}
    result = consumer_regression(df, reference_levels=references)
    fit = smf.logit(
        "bias ~ C(rater_age_group, Treatment(reference='65+')) + C(rater_gender, Treatment(reference='Woman'))"
        " + C(rater_race_ethnicity, Treatment(reference='Black'))",
        df.assign(bias=df["bias"].astype(int)),
    ).fit(disp=0)
    intervals = np.exp(fit.conf_int())
    checked = 0
    for name in fit.params.index[1:]:
        predictor = name.split(",")[0].removeprefix("C(")
        level = name.split("[T.")[1].rstrip("]")
        row = by_level(result, predictor).loc[level]
        assert row["odds_ratio"] == pytest.approx(np.exp(fit.params[name]), rel=1e-9)
        assert row["ci_low"] == pytest.approx(intervals.loc[name, 0], rel=1e-9)
        assert row["ci_high"] == pytest.approx(intervals.loc[name, 1], rel=1e-9)
        assert row["p_value"] == pytest.approx(fit.pvalues[name], rel=1e-7)
        checked += 1
    assert checked == 3 + 2 + 2


def test_default_reference_is_the_most_frequent_level_and_reference_rows_have_odds_ratio_one():
    df = synthetic(2000, 3)
    result = consumer_regression(df)
    for predictor in ["rater_age_group", "rater_gender", "rater_race_ethnicity"]:
        rows = by_level(result, predictor)
        most_frequent = df[predictor].value_counts().idxmax()
        assert (rows["reference_level"] == most_frequent).all()
        assert rows.loc[most_frequent, "odds_ratio"] == 1.0
        assert rows.loc[most_frequent, "note"] == REFERENCE
        assert list(rows.index) == sorted(rows.index)
        assert rows["n"].sum() == len(df)


def test_missing_values_drop_rows_and_n_reflects_it():
    df = synthetic(2000, 4)
    df.loc[:99, "rater_gender"] = np.nan
    df.loc[100:149, "rater_age_group"] = ""
    df["bias"] = df["bias"].astype(object)
    df.loc[150:159, "bias"] = None
    result = consumer_regression(df)
    for predictor in ["rater_age_group", "rater_gender", "rater_race_ethnicity"]:
        assert by_level(result, predictor)["n"].sum() == 2000 - 160
    complete = consumer_regression(df.iloc[160:].assign(bias=lambda d: d["bias"].astype(bool)))
    pd.testing.assert_frame_equal(result, complete)


def test_a_single_level_predictor_is_dropped_with_a_note():
    df = synthetic(2000, 5).assign(rater_race_ethnicity="White")
    result = consumer_regression(df)
    race = by_level(result, "rater_race_ethnicity")
    assert race.loc["White", "note"] == "not estimable: only one level ('White') in the data"
    assert np.isnan(race.loc["White", "odds_ratio"])
    without = consumer_regression(df, predictors=["rater_age_group", "rater_gender"])
    pd.testing.assert_frame_equal(result[result["predictor"] != "rater_race_ethnicity"], without)


def test_a_separated_level_is_not_estimable_and_the_rest_is_the_limiting_fit():
    """All Non-binary raters rated 0: that level's log odds ratio is -infinity (quasi-complete separation). The
    other estimates are the maximum-likelihood limit, the fit without those ratings."""
    df = synthetic(4000, 6)
    df.loc[df["rater_gender"] == "Non-binary", "bias"] = False
    references = {"rater_age_group": "65+", "rater_gender": "Man", "rater_race_ethnicity": "White"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = consumer_regression(df, reference_levels=references)
    gender = by_level(result, "rater_gender")
    n_separated = int((df["rater_gender"] == "Non-binary").sum())
    assert gender.loc["Non-binary", "note"] == f"not estimable: all {n_separated} outcomes are 0 (separation)"
    assert np.isnan(gender.loc["Non-binary", "odds_ratio"])

    rest = consumer_regression(df[df["rater_gender"] != "Non-binary"], reference_levels=references)
    estimated = result[result["note"].isin(["", REFERENCE])].reset_index(drop=True)
    pd.testing.assert_frame_equal(estimated, rest)


def test_a_separated_reference_level_leaves_its_predictor_not_estimable_but_in_the_model():
    df = synthetic(4000, 7)
    df.loc[df["rater_age_group"] == "65+", "bias"] = True
    references = {"rater_age_group": "65+", "rater_gender": "Man", "rater_race_ethnicity": "White"}
    result = consumer_regression(df, reference_levels=references)
    age = by_level(result, "rater_age_group")
    assert age["odds_ratio"].isna().all()
    assert age["note"].str.contains("at the reference level '65+'", regex=False).all()
    # Gender is still adjusted for age: the fit on the other age groups, against another age reference.
    rest = consumer_regression(
        df[df["rater_age_group"] != "65+"], reference_levels={**references, "rater_age_group": "18-29"}
    )
    pd.testing.assert_frame_equal(
        result[result["predictor"] != "rater_age_group"].reset_index(drop=True),
        rest[rest["predictor"] != "rater_age_group"].reset_index(drop=True),
    )


def test_complete_separation_gives_notes_not_exceptions():
    """y = 1 exactly when a + b >= 2 (a, b in 0..2): separable, so no odds ratio is finite."""
    a, b = np.repeat([0, 1, 2], 30), np.tile(np.repeat([0, 1, 2], 10), 3)
    df = pd.DataFrame({"y": a + b >= 2, "a": a.astype(str), "b": b.astype(str)})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = consumer_regression(df, outcome="y", predictors=["a", "b"])
    assert result["odds_ratio"].isna().all()
    assert result["note"].str.startswith("not estimable: ").all()


def test_collinear_predictors_give_a_singular_design_note():
    df = synthetic(1000, 8)
    df["age_again"] = df["rater_age_group"]
    result = consumer_regression(df, predictors=["rater_age_group", "age_again"])
    compared = result[result["note"] != REFERENCE]
    assert (compared["note"] == "not estimable: singular design (collinear predictors)").all()
    assert compared["odds_ratio"].isna().all()


def test_degenerate_outcomes_and_frames():
    df = synthetic(500, 9).assign(bias=False)
    result = consumer_regression(df)
    assert result["note"].str.startswith("not estimable: all 500 outcomes are 0").all()

    empty = consumer_regression(df.iloc[:0])
    assert list(empty["note"]) == ["not estimable: no complete ratings"] * 3

    df = synthetic(500, 10)
    absent = consumer_regression(df, reference_levels={"rater_gender": "Prefer not to say"})
    gender = by_level(absent, "rater_gender")
    assert (
        gender.loc[df["rater_gender"].value_counts().idxmax(), "note"]
        == "reference level (the requested 'Prefer not to say' is not in the data)"
    )

    with pytest.raises(ValueError):
        consumer_regression(df.assign(bias=2))
