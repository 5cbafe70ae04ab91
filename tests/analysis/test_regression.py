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


# --- Multi-select race/ethnicity, raters and aliasing (issue 10, finding 12) --------------------------------

PANEL_AGES = ["18-24", "25-34", "35-44", "45-54", "55-64", "65 or older"]  # raters/defaults.py, as the form offers
PANEL_RACES = ["Asian", "Black or African American", "Hispanic or Latino", "White"]
TWO_RACES = "Hispanic or Latino; White"
SINGULAR = "not estimable: singular design (collinear predictors)"


def consumers(n_raters: int, ratings_each: int, seed: int, answers: dict[int, tuple] | None = None,
              ages=PANEL_AGES, races=PANEL_RACES) -> pd.DataFrame:  # fmt: skip
    """Ratings of `n_raters` consumers (rater id, age group, gender, race/ethnicity as exported), `ratings_each` per
    rater, answers drawn from `ages` and `races`; `answers` overrides some raters' (age, gender, race) answers."""
    rng = np.random.default_rng(seed)
    rows = []
    for rater in range(n_raters):
        age, gender, race = rng.choice(ages), rng.choice(["Woman", "Man"]), rng.choice(races)
        age, gender, race = (answers or {}).get(rater, (age, gender, race))
        log_odds = -0.8 + 0.4 * (age == "18-24") + 0.5 * ("Black or African American" in race) + rng.normal(0, 0.3)
        for _ in range(ratings_each):
            biased = rng.random() < 1 / (1 + np.exp(-log_odds))
            rows.append({"rater_id": f"C{rater}", "bias": biased, "rater_age_group": age, "rater_gender": gender,
                         "rater_race_ethnicity": race})  # fmt: skip
    return pd.DataFrame(rows)


def indicator_fit(df: pd.DataFrame, references: dict[str, str], races: list[str]):
    """The direct statsmodels formula fit of the indicator design: treatment-coded age and gender, and one 0/1
    column per race/ethnicity category in `races` (1 when the rater chose it, alone or with others)."""
    data = df.assign(bias=df["bias"].astype(int))
    terms = []
    for i, race in enumerate(races):
        data[f"race{i}"] = data["rater_race_ethnicity"].str.split("; ").map(lambda chosen, r=race: int(r in chosen))
        terms.append(f"race{i}")
    formula = (
        f"bias ~ C(rater_age_group, Treatment(reference='{references['rater_age_group']}'))"
        f" + C(rater_gender, Treatment(reference='{references['rater_gender']}')) + {' + '.join(terms)}"
    )
    fit = smf.logit(formula, data).fit(disp=0)
    names = {f"race{i}": ("rater_race_ethnicity", race) for i, race in enumerate(races)}
    for name in fit.params.index[1:]:
        if name not in names:
            names[name] = (name.split(",")[0].removeprefix("C("), name.split("[T.")[1].rstrip("]"))
    return fit, names


def assert_equals_fit(result: pd.DataFrame, fit, names: dict[str, tuple[str, str]]) -> None:
    intervals = np.exp(fit.conf_int())
    for name, (predictor, level) in names.items():
        row = by_level(result, predictor).loc[level]
        assert row["note"] == "", (predictor, level, row["note"])
        assert row["odds_ratio"] == pytest.approx(np.exp(fit.params[name]), rel=1e-9)
        assert row["ci_low"] == pytest.approx(intervals.loc[name, 0], rel=1e-9)
        assert row["ci_high"] == pytest.approx(intervals.loc[name, 1], rel=1e-9)
        assert row["p_value"] == pytest.approx(fit.pvalues[name], rel=1e-7)


def test_a_participant_who_chose_two_races_counts_at_each_and_equals_a_direct_indicator_fit():
    """One indicator per category: the two-race participant adds their ratings to Hispanic or Latino and to White
    instead of forming a level of their own; the odds ratios are those of the formula fit on that design."""
    df = consumers(40, 12, seed=11, answers={5: ("25-34", "Man", TWO_RACES)})
    references = {"rater_age_group": "65 or older", "rater_gender": "Woman", "rater_race_ethnicity": "White"}

    result = consumer_regression(df, reference_levels=references)

    race = by_level(result, "rater_race_ethnicity")
    assert list(race.index) == sorted(PANEL_RACES)  # no "Hispanic or Latino; White" level
    assert race.loc["Hispanic or Latino", "n"] == (df["rater_race_ethnicity"].str.contains("Hispanic")).sum()
    assert race.loc["White", "n"] == (df["rater_race_ethnicity"].str.contains("White")).sum()
    assert race.loc["White", "note"] == REFERENCE
    fit, names = indicator_fit(df, references, ["Asian", "Black or African American", "Hispanic or Latino"])
    assert len(names) == 5 + 1 + 3
    assert_equals_fit(result, fit, names)


def test_the_all_studies_table_with_one_two_race_participant_is_estimable():
    """The reported collapse: simulated consumers plus one real participant who chose two races and is alone in
    their age group. Before, that participant's own race level and age level were the same column, so every row
    was "singular design". Now the lone age group is set aside (one rater says nothing about an age group) and
    the rest equals the direct indicator fit without that participant's ratings."""
    from analysis import tables  # the table the pages and `analyze` write

    others = [age for age in PANEL_AGES if age != "55-64"]
    df = consumers(25, 12, seed=12, answers={24: ("55-64", "Woman", TWO_RACES)}, ages=others)
    independent = df.assign(rater_type="Consumer", bias_presence=np.where(df["bias"], "Minor bias", "No bias"))
    references = {"rater_age_group": "65 or older", "rater_gender": "Woman", "rater_race_ethnicity": "White"}

    result = tables.consumer_regression_table(independent, reference_levels=references)

    assert not result["note"].str.contains("singular").any()
    age = by_level(result, "rater_age_group")
    assert age.loc["55-64", "note"] == "not estimable: only 1 rater (at least 2 needed; ratings set aside)"
    assert (result["note"] == "").sum() == 4 + 1 + 3
    rest = df[df["rater_id"] != "C24"]
    fit, names = indicator_fit(rest, references, ["Asian", "Black or African American", "Hispanic or Latino"])
    assert_equals_fit(result, fit, names)


def test_a_level_of_one_rater_is_set_aside_without_changing_the_other_estimates():
    """A lone rater's level column absorbs that rater's mean: leaving their ratings out changes nothing else."""
    df = consumers(32, 10, seed=13, answers={3: ("45-54", "Non-binary", "White")})
    references = {"rater_age_group": "65 or older", "rater_gender": "Woman", "rater_race_ethnicity": "White"}

    with_raters = consumer_regression(df, reference_levels=references, rater="rater_id")
    without_raters = consumer_regression(df, reference_levels=references)

    gender = by_level(with_raters, "rater_gender")
    assert gender.loc["Non-binary", "note"].startswith("not estimable: only 1 rater")
    assert gender.loc["Non-binary", "n"] == 10
    estimated = with_raters["note"] == ""
    assert estimated.sum() == 5 + 1 + 3
    columns = ["odds_ratio", "ci_low", "ci_high", "p_value"]
    pd.testing.assert_frame_equal(
        with_raters.loc[estimated, columns], without_raters.loc[estimated, columns], rtol=1e-6
    )
    assert by_level(without_raters, "rater_gender").loc["Non-binary", "note"] == ""  # fitted, as one rater's mean


def test_prefer_not_to_say_is_a_level_of_its_own_never_the_default_reference_and_dropped_beside_categories():
    answers = {r: ("25-34", "Woman", "Prefer not to say") for r in range(0, 40, 4)}  # the most frequent answer
    answers[1] = ("18-24", "Man", "Prefer not to say; Asian")  # the panel form refuses this; an import may not
    df = consumers(40, 10, seed=14, answers=answers)

    result = consumer_regression(df)

    race = by_level(result, "rater_race_ethnicity")
    assert set(race.index) == {"Prefer not to say", *PANEL_RACES}
    assert race.loc["Prefer not to say", "n"] == 100
    assert race.loc["Asian", "n"] == (df["rater_race_ethnicity"].str.contains("Asian")).sum()
    assert (race["reference_level"] != "Prefer not to say").all()
    assert race.loc["Prefer not to say", "note"] == ""


def test_aliased_levels_are_not_estimable_and_the_other_terms_are_still_estimated():
    """Two raters are the only 65-or-older ones and the only Asian ones: those two columns are the same, so only
    their log odds ratios are not identifiable; the others equal the fit without one of the two columns."""
    answers = {r: ("65 or older", "Woman" if r % 2 else "Man", "Asian") for r in (2, 3)}
    df = consumers(40, 10, seed=15, answers=answers, ages=PANEL_AGES[:-1], races=PANEL_RACES[1:])
    references = {"rater_age_group": "25-34", "rater_gender": "Woman", "rater_race_ethnicity": "White"}

    result = consumer_regression(df, reference_levels=references, rater="rater_id")

    assert by_level(result, "rater_age_group").loc["65 or older", "note"] == SINGULAR
    assert by_level(result, "rater_race_ethnicity").loc["Asian", "note"] == SINGULAR
    fit, names = indicator_fit(df, references, ["Black or African American", "Hispanic or Latino"])
    del names["C(rater_age_group, Treatment(reference='25-34'))[T.65 or older]"]
    assert len(names) == 4 + 1 + 2
    assert_equals_fit(result, fit, names)
