"""MEDIC's statistics against scipy, statsmodels, hand computations and the paper's Table 1 (no database)."""

import itertools
import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from scipy.optimize import least_squares
from statsmodels.stats.inter_rater import cohens_kappa as sm_cohens_kappa
from statsmodels.stats.multitest import multipletests

from analysis.medic import (
    FEW_ITEMS,
    GENERALISATION_COLUMNS,
    MEANS_COLUMNS,
    PAIR_AGREEMENT_COLUMNS,
    generalisation,
    judge_means,
    judge_pair_agreement,
    level_tests,
    medic_observations,
)


def _obs(rows, factors=("style",)):
    columns = ["source", "judge", "item", "outcome", "value", *factors]
    return pd.DataFrame(rows, columns=columns)


def _t_interval(values):
    values = np.asarray(values, dtype=float)
    n = len(values)
    return stats.t.interval(0.95, n - 1, loc=values.mean(), scale=values.std(ddof=1) / math.sqrt(n))


# --- means and t-intervals --------------------------------------------------------------------------------------


def test_judge_means_and_t_intervals_equal_scipy_after_averaging_repeats():
    a_values = {1: 2.0, 2: 0.0, 3: 1.0}  # style A
    b_values = {4: 3.0, 5: 5.0, 6: 4.0, 7: 6.0}  # style B
    rows = [("m", "llama", item, "hallucinations", v, "A") for item, v in a_values.items()]
    rows += [("m", "llama", item, "hallucinations", v, "B") for item, v in b_values.items() if item != 7]
    rows += [("m", "llama", 7, "hallucinations", 5.0, "B"), ("m", "llama", 7, "hallucinations", 7.0, "B")]  # mean 6
    rows += [("m", "llama", 8, "hallucinations", 9.0, "")]  # no style: counted over all items only
    rows += [("m", "llama", 9, "MANAGE", 1.0, "A"), ("m", "llama", 10, "MANAGE", 1.0, "A")]  # sd 0
    rows += [("m", "llama", 11, "MANAGE", 0.0, "B")]  # one item
    means = judge_means(_obs(rows), study="medic", factors=["style"])
    assert list(means.columns) == MEANS_COLUMNS
    indexed = means.set_index(["outcome", "factor", "level"])

    every = [*a_values.values(), *b_values.values(), 9.0]
    for key, values in [(("hallucinations", "", ""), every), (("hallucinations", "style", "A"), a_values.values()),
                        (("hallucinations", "style", "B"), b_values.values())]:  # fmt: skip
        values = np.array(list(values))
        row = indexed.loc[key]
        assert row["n"] == len(values)
        assert row["mean"] == pytest.approx(values.mean())
        assert row["sd"] == pytest.approx(values.std(ddof=1))
        assert (row["ci_low"], row["ci_high"]) == pytest.approx(_t_interval(values))
        assert row["study"] == "medic" and row["source"] == "m" and row["judge"] == "llama"

    same = indexed.loc[("MANAGE", "style", "A")]  # sd 0: the interval is the point
    assert (same["n"], same["mean"], same["sd"], same["ci_low"], same["ci_high"]) == (2, 1.0, 0.0, 1.0, 1.0)
    single = indexed.loc[("MANAGE", "style", "B")]  # one item: no sd, no interval
    assert single["n"] == 1 and single["mean"] == 0.0
    assert math.isnan(single["sd"]) and math.isnan(single["ci_low"]) and math.isnan(single["ci_high"])
    assert indexed.loc[("MANAGE", "", "")]["mean"] == pytest.approx(2 / 3)


# --- level tests -----------------------------------------------------------------------------------------------


def _two_pairs_frame():
    rng = np.random.default_rng(20)
    rows = []
    item = 0
    for source, judge in [("llama", "olmo"), ("medgemma", "qwen")]:
        for outcome, shift in [("omissions", 0.8), ("VISIT", 0.0)]:
            for style, n in [("grade 6", 6), ("grade 8", 7), ("standard", 5), ("tiny", 1)]:
                for value in rng.normal(2.0 + shift * (style == "grade 8"), 1.0, size=n):
                    item += 1
                    rows.append((source, judge, item, outcome, float(value), style))
    return _obs(rows)


def test_level_tests_are_welch_with_b_minus_a_and_holm_within_each_source_judge_pair():
    obs = _two_pairs_frame()
    tests = level_tests(obs, factors=["style"])
    tested = tests[tests["p_value"].notna()]
    assert len(tested) == 2 * 2 * 3  # pairs x outcomes x the three pairs of tested levels
    for _, row in tested.iterrows():
        at = obs[(obs["source"] == row["source"]) & (obs["outcome"] == row["outcome"])]
        a = at[at["style"] == row["level_a"]]["value"].to_numpy()
        b = at[at["style"] == row["level_b"]]["value"].to_numpy()
        expected = stats.ttest_ind(b, a, equal_var=False)
        assert row["level_a"] < row["level_b"]
        assert row["t"] == pytest.approx(expected.statistic)
        assert row["p_value"] == pytest.approx(expected.pvalue)
        assert row["difference"] == pytest.approx(b.mean() - a.mean())
        assert (row["n_a"], row["n_b"]) == (len(a), len(b))
    for _, family in tested.groupby(["source", "judge"]):
        assert len(family) == 6  # both outcomes of the pair in one family
        holm = multipletests(family["p_value"].to_numpy(), method="holm")[1]
        assert family["p_adjusted"].to_numpy() == pytest.approx(holm)
        assert (family["significant"] == (holm < 0.05)).all()
    untested = tests[tests["p_value"].isna()]
    assert len(untested) == 2 * 2 * 3  # every pair of levels with "tiny"
    assert set(untested["note"]) == {FEW_ITEMS}
    assert untested["p_adjusted"].isna().all() and not untested["significant"].any()


# --- judge against judge ----------------------------------------------------------------------------------------


def _category_rows(labels, category="MANAGE", source="m"):
    """labels: {judge: sequence of 0/1 per item}."""
    return [(source, judge, item, category, float(v), "") for judge, values in labels.items()
            for item, v in enumerate(values)]  # fmt: skip


def test_pair_agreement_kappa_equals_statsmodels_and_agreement_by_hand():
    rng = np.random.default_rng(7)
    first = rng.integers(0, 2, size=200)
    second = np.where(rng.random(200) < 0.7, first, 1 - first)
    rows = _category_rows({"qwen": first, "olmo": second})
    rows = [r for r in rows if not (r[1] == "olmo" and r[2] == 0)]  # item 0 judged by one model only
    result = judge_pair_agreement(_obs(rows), study="medic", categories=["MANAGE"])
    assert list(result.columns) == PAIR_AGREEMENT_COLUMNS
    cell = result.iloc[0]
    assert (cell["category"], cell["judge_a"], cell["judge_b"], cell["n_items"]) == ("MANAGE", "olmo", "qwen", 199)
    a, b = second[1:], first[1:]
    table = np.array([[np.sum((a == i) & (b == j)) for j in (0, 1)] for i in (0, 1)])
    assert cell["cohen_kappa"] == pytest.approx(sm_cohens_kappa(table).kappa)
    assert cell["percent_agreement"] == pytest.approx(np.mean(a == b))
    mean = result.iloc[-1]
    assert (mean["category"], mean["judge_a"], mean["judge_b"]) == ("mean", "all", "all")
    assert mean["cohen_kappa"] == pytest.approx(cell["cohen_kappa"])


def test_pair_agreement_takes_the_majority_over_repeats_and_leaves_ties_out():
    rows = _category_rows({"olmo": [1, 0, 1, 0], "qwen": [1, 0, 0, 0]})
    rows += [("m", "olmo", 0, "MANAGE", 1.0, ""), ("m", "olmo", 0, "MANAGE", 0.0, "")]  # 2 of 3 yes: yes
    rows += [("m", "qwen", 3, "MANAGE", 1.0, "")]  # one yes, one no: a tie, item 3 left out
    cell = judge_pair_agreement(_obs(rows), study="s", categories=["MANAGE"]).iloc[0]
    assert cell["n_items"] == 3
    assert cell["percent_agreement"] == pytest.approx(2 / 3)


# MEDIC's Table 1 (seed 003, section 6): (percent agreement, kappa) of three judge models per category.
JUDGES = ("llama", "olmo", "qwen")
PAIRS = list(itertools.combinations(range(3), 2))  # llama-olmo, llama-qwen, olmo-qwen
TABLE_1 = {
    "MANAGE": [(31.08, 0.000), (24.68, 0.000), (79.00, 0.480)],
    "VISIT": [(29.97, 0.016), (16.42, 0.008), (72.50, 0.179)],
    "RESOURCE": [(97.58, 0.000), (96.22, 0.000), (96.24, 0.375)],
}
# 20,000 items: each item disagrees in 0 or 2 of the three pairs, so the three disagreement counts must sum to
# an even number, which VISIT's do not at 10,000 items (7,003 + 8,358 + 2,750).
N_ITEMS = 20_000


def _kappa(n_x, n_y, agree):
    p_x, p_y, observed = n_x / N_ITEMS, n_y / N_ITEMS, agree / N_ITEMS
    chance = p_x * p_y + (1 - p_x) * (1 - p_y)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (observed - chance) / (1 - chance)


def _three_judges(cells):
    """Yes counts of the three judges, their pairs' yes-yes counts and the all-yes count giving `cells`.

    Each pair's chance agreement follows from its agreement and kappa (p_e = (p_o - kappa) / (1 - kappa)); the
    three equations p_x p_y + (1 - p_x)(1 - p_y) = p_e give the three yes rates (least squares), then a search
    of the counts near them for ones whose kappas round to the published three decimals, the nearest to them (so
    their mean is the mean of the published kappas); a pair's agreement fixes its yes-yes count, and the all-yes
    count is any that leaves the eight cells non-negative.
    """
    agree = [round(percent * N_ITEMS / 100) for percent, _ in cells]
    chance = [(percent / 100 - kappa) / (1 - kappa) for percent, kappa in cells]

    def residuals(p):
        return [p[i] * p[j] + (1 - p[i]) * (1 - p[j]) - e for (i, j), e in zip(PAIRS, chance, strict=True)]

    steps = np.arange(-60, 61)
    for start in itertools.product([0.05, 0.95], repeat=3):
        rates = least_squares(residuals, start, bounds=(0, 1)).x
        grids = np.meshgrid(*[np.clip(round(r * N_ITEMS) + steps, 0, N_ITEMS) for r in rates], indexing="ij")
        yes = [g.ravel() for g in grids]
        ok = np.ones_like(yes[0], dtype=bool)
        both = []
        distance = np.zeros(len(yes[0]))
        for (i, j), agreed, (_, kappa) in zip(PAIRS, agree, cells, strict=True):
            twice = yes[i] + yes[j] - (N_ITEMS - agreed)  # disagreements = n_i + n_j - 2 n_ij
            ok &= (twice % 2 == 0) & (twice >= 0) & (twice // 2 <= np.minimum(yes[i], yes[j]))
            found = _kappa(yes[i], yes[j], agreed)
            ok &= np.round(found, 3) == kappa
            distance += np.abs(np.nan_to_num(found - kappa, nan=1.0))
            both.append(twice // 2)
        low = np.maximum.reduce([0 * yes[0], both[0] + both[1] - yes[0], both[0] + both[2] - yes[1],
                                 both[1] + both[2] - yes[2]])  # fmt: skip
        high = np.minimum.reduce([*both, N_ITEMS - sum(yes) + sum(both)])
        ok &= low <= high
        if ok.any():
            k = int(np.argmin(np.where(ok, distance, np.inf)))
            return [int(y[k]) for y in yes], [int(b[k]) for b in both], int(low[k])
    raise AssertionError("no table found")


def _labels_from_counts(yes, both, all_three):
    """Per judge a 0/1 vector over N_ITEMS items with these yes counts, pair yes-yes counts and all-yes count."""
    (llama, olmo, qwen), (lo, lq, oq), t = yes, both, all_three
    cells = {  # (llama, olmo, qwen) -> number of items
        (1, 1, 1): t, (1, 1, 0): lo - t, (1, 0, 1): lq - t, (0, 1, 1): oq - t,
        (1, 0, 0): llama - lo - lq + t, (0, 1, 0): olmo - lo - oq + t, (0, 0, 1): qwen - lq - oq + t,
    }  # fmt: skip
    cells[(0, 0, 0)] = N_ITEMS - sum(cells.values())
    assert min(cells.values()) >= 0
    pattern = np.repeat(np.array(list(cells)), list(cells.values()), axis=0)
    return {judge: pattern[:, column] for column, judge in enumerate(JUDGES)}


def test_medic_table_1_from_the_same_three_judges_and_its_mean_kappa():
    rows = []
    for category, cells in TABLE_1.items():
        labels = _labels_from_counts(*_three_judges(cells))
        rows += _category_rows(labels, category=category)
    result = judge_pair_agreement(_obs(rows), study="medic")
    cells_of = result.set_index(["category", "judge_a", "judge_b"])
    for category, cells in TABLE_1.items():
        for (i, j), (percent, kappa) in zip(PAIRS, cells, strict=True):
            cell = cells_of.loc[(category, JUDGES[i], JUDGES[j])]
            assert cell["n_items"] == N_ITEMS
            assert round(100 * cell["percent_agreement"], 2) == percent
            assert round(cell["cohen_kappa"], 3) == kappa
    mean = cells_of.loc[("mean", "all", "all")]
    # "an average of 0.118": the mean of the nine printed kappas is 0.11756 (the true ones may lie 0.0005 either
    # side of the printed ones, so the tables take the kappas nearest to them).
    assert round(mean["cohen_kappa"], 3) == 0.118
    assert mean["n_items"] == 9 * N_ITEMS
    assert list(result["category"]) == [*[c for c in TABLE_1 for _ in range(3)], "mean"]


# --- generalisation ---------------------------------------------------------------------------------------------


def test_generalisation_counts_significant_pairs_and_their_agreeing_direction():
    rows = []
    item = 0
    # (source, judge): the mean of "detailed" minus "terse": up, down, nothing.
    for (source, judge), shift in [(("llama", "olmo"), 3.0), (("llama", "qwen"), -3.0), (("medgemma", "olmo"), 0)]:
        for style, centre in [("detailed", shift), ("terse", 0.0)]:
            for noise in [-0.2, -0.1, 0.0, 0.1, 0.2, 0.15]:
                item += 1
                rows.append((source, judge, item, "VISIT", centre + noise + 0.01 * item * (shift == 0), style))
    tests = level_tests(_obs(rows), factors=["style"])
    assert list(tests["significant"]) == [True, True, False]
    assert np.sign(tests["difference"]).tolist()[:2] == [-1.0, 1.0]  # levels sorted: terse - detailed
    table = generalisation(tests, study="medic")
    assert list(table.columns) == GENERALISATION_COLUMNS
    expected = dict(study="medic", outcome="VISIT", factor="style", level_a="detailed", level_b="terse",
                    n_pairs=3, n_significant=2, n_same_direction=1, directions="+1 / -1")  # fmt: skip
    assert table.to_dict("records") == [expected]


def test_generalisation_leaves_untested_pairs_out_and_counts_agreeing_directions():
    tests = pd.DataFrame(
        {
            "source": ["a", "b", "c", "d"], "judge": ["j"] * 4, "outcome": ["omissions"] * 4,
            "factor": ["race"] * 4, "level_a": ["Asian"] * 4, "level_b": ["White"] * 4,
            "difference": [0.5, 0.7, -0.1, 0.4], "p_value": [0.001, 0.002, 0.5, math.nan],
            "p_adjusted": [0.003, 0.004, 0.5, math.nan], "significant": [True, True, False, False],
        }
    )  # fmt: skip
    row = generalisation(tests, study="s").iloc[0]
    assert (row["n_pairs"], row["n_significant"], row["n_same_direction"], row["directions"]) == (3, 2, 2, "+2 / -0")


# --- the frame from the results table ---------------------------------------------------------------------------


def _result(item, who, field, value, levels, source="llama-answers", kind="judge", repeat=0):
    return dict(study="medic", item=item, question="q", base_question="", levels=json.dumps(levels, sort_keys=True),
                condition="", source=source, who=who, kind=kind, pool="", field=field, value=value,
                repeat=repeat)  # fmt: skip


def _span(harm):
    return json.dumps({"confidence": 0.9, "explanation": "e", "harm": harm, "snippet": "s"}, sort_keys=True)


def test_medic_observations_counts_lists_means_harm_and_codes_categories():
    one = {"gender": "female", "style": "standard"}
    two = {"style": "grade 8"}
    results = pd.DataFrame(
        [
            _result(1, "olmo-hallucination", "hallucinations", _span(2), one),
            _result(1, "olmo-hallucination", "hallucinations", _span(5), one),
            _result(1, "olmo-omission", "omissions", "", one),  # answered, none found
            _result(1, "olmo-category", "manage", "yes", one),
            _result(1, "olmo-category", "visit", "no", one),
            _result(1, "olmo-category", "resource", "no", one),
            _result(1, "olmo-category", "comment", "free text", one),  # not a MEDIC outcome
            _result(2, "qwen-hallucination", "hallucinations", _span(1), two, source="medgemma-answers"),
            _result(2, "qwen-hallucination", "hallucinations", "", two, source="medgemma-answers", repeat=1),
            _result(2, "qwen-omission", "omissions", _span(7), two, source="medgemma-answers"),
            _result(2, "rater-1", "manage", "yes", two, kind="human"),
            _result(2, "word_overlap v1", "word_overlap", "0.5", two, kind="scorer"),
        ]
    )
    models = {"olmo-hallucination": "olmo", "olmo-omission": "olmo", "olmo-category": "olmo",
              "qwen-hallucination": "qwen", "qwen-omission": "qwen"}  # fmt: skip
    obs = medic_observations(results, judge_models=models, factors=["style", "gender"])
    assert list(obs.columns) == ["source", "judge", "item", "outcome", "value", "style", "gender"]
    got = sorted(obs.itertuples(index=False, name=None))
    assert got == sorted(
        [
            ("llama-answers", "olmo", 1, "hallucinations", 2.0, "standard", "female"),
            ("llama-answers", "olmo", 1, "hallucination_harm", 3.5, "standard", "female"),
            ("llama-answers", "olmo", 1, "omissions", 0.0, "standard", "female"),
            ("llama-answers", "olmo", 1, "MANAGE", 1.0, "standard", "female"),
            ("llama-answers", "olmo", 1, "VISIT", 0.0, "standard", "female"),
            ("llama-answers", "olmo", 1, "RESOURCE", 0.0, "standard", "female"),
            ("medgemma-answers", "qwen", 2, "hallucinations", 1.0, "grade 8", ""),  # repeat 0
            ("medgemma-answers", "qwen", 2, "hallucination_harm", 1.0, "grade 8", ""),
            ("medgemma-answers", "qwen", 2, "hallucinations", 0.0, "grade 8", ""),  # repeat 1: none, no harm row
            ("medgemma-answers", "qwen", 2, "omissions", 1.0, "grade 8", ""),
            ("medgemma-answers", "qwen", 2, "omission_harm", 7.0, "grade 8", ""),
        ]
    )
    # The repeats are averaged by the statistics: item 2's hallucination count is 0.5.
    means = judge_means(obs, study="medic", factors=["style"]).set_index(["source", "outcome", "level"])
    assert means.loc[("medgemma-answers", "hallucinations", ""), "mean"] == 0.5


def test_medic_observations_refuses_an_unmapped_judge_and_a_category_that_is_not_yes_or_no():
    results = pd.DataFrame([_result(1, "olmo-category", "manage", "maybe", {})])
    with pytest.raises(ValueError, match="olmo-category"):
        medic_observations(results, judge_models={}, factors=[])
    with pytest.raises(ValueError, match="maybe"):
        medic_observations(results, judge_models={"olmo-category": "olmo"}, factors=[])


def test_medic_observations_refuses_a_harm_that_is_not_a_number():
    results = pd.DataFrame([_result(1, "olmo-hallucination", "hallucinations", _span("severe"), {})])
    with pytest.raises(ValueError, match="numeric 'harm'"):
        medic_observations(results, judge_models={"olmo-hallucination": "olmo"}, factors=[])


def test_two_judges_of_one_model_are_averaged_not_summed():
    results = pd.DataFrame(
        [
            _result(1, "qwen-a", "omissions", _span(2), {}),
            _result(1, "qwen-a", "omissions", _span(4), {}),
            _result(1, "qwen-b", "omissions", "", {}),
        ]
    )
    obs = medic_observations(results, judge_models={"qwen-a": "qwen", "qwen-b": "qwen"}, factors=[])
    means = judge_means(obs, study="medic", factors=[]).set_index("outcome")
    assert means.loc["omissions", "mean"] == 1.0  # (2 + 0) / 2
    assert means.loc["omission_harm", "mean"] == 3.0  # only qwen-a found any
    assert (means["n"] == 1).all()
