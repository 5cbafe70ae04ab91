"""`analysis.paired`: paired t-tests over blocks and group means, checked against scipy and statsmodels directly."""

import io
import math
import warnings
from itertools import combinations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.multitest import multipletests

from analysis import paired
from analysis.paired import GROUP_COLUMNS, PAIRED_COLUMNS, group_means, heat_table, paired_tests
from tests.analysis.qpain_outputs import LEVEL_ORDER, deepseek_values

CONTRACT = ["study", "outcome", "factor", "level_a", "level_b", "n_blocks", "mean_a", "mean_b", "mean_diff", "ci_low",
            "ci_high", "ci_low_adjusted", "ci_high_adjusted", "t", "p_value", "p_adjusted", "correction"]  # fmt: skip
STATISTICS = ["mean_a", "mean_b", "mean_diff", "ci_low", "ci_high", "ci_low_adjusted", "ci_high_adjusted", "t",
              "p_value", "p_adjusted"]  # fmt: skip


def long_values(matrix: np.ndarray, levels: list[str], *, source: str = "m", blocks: list[object] | None = None):
    """Rows of a blocks x levels matrix (NaN: the block lacks the level), one family."""
    blocks = blocks if blocks is not None else [f"v{i:03d}" for i in range(matrix.shape[0])]
    rows = [
        {"study": "S", "outcome": "p_no", "source": source, "factor": "race x gender", "level": level,
         "block": block, "context": f"c{i % 3}", "value": matrix[i, j]}
        for i, block in enumerate(blocks) for j, level in enumerate(levels) if not np.isnan(matrix[i, j])
    ]  # fmt: skip
    return pd.DataFrame(rows, columns=[*paired.FAMILY, "level", "block", "context", "value"])


def random_matrix(seed: int, blocks: int = 40, levels: int = 8, missing: float = 0.08) -> np.ndarray:
    rng = np.random.default_rng(seed)
    base = rng.uniform(0.05, 0.6, size=(blocks, 1))  # a vignette effect, as Q-Pain's, shared by its levels
    matrix = np.clip(base + rng.normal(0, 0.03, size=(blocks, levels)) + np.linspace(0, 0.02, levels), 0, 1)
    matrix[rng.random(matrix.shape) < missing] = np.nan
    return matrix


def direct(matrix: np.ndarray, i: int, j: int, *, pairs: int) -> dict[str, float]:
    """One pair as an analyst computes it with scipy: blocks holding both, ttest_rel, t.interval."""
    both = ~np.isnan(matrix[:, i]) & ~np.isnan(matrix[:, j])
    a, b = matrix[both, i], matrix[both, j]
    d = a - b
    result = stats.ttest_rel(a, b)
    scale = d.std(ddof=1) / math.sqrt(len(d))
    low, high = stats.t.interval(0.95, len(d) - 1, loc=d.mean(), scale=scale)
    low_adj, high_adj = stats.t.interval(1 - 0.05 / pairs, len(d) - 1, loc=d.mean(), scale=scale)
    return {"n_blocks": len(d), "mean_a": a.mean(), "mean_b": b.mean(), "mean_diff": d.mean(), "t": result.statistic,
            "p_value": result.pvalue, "ci_low": low, "ci_high": high, "ci_low_adjusted": low_adj,
            "ci_high_adjusted": high_adj}  # fmt: skip


def test_the_table_has_the_contract_columns_first_even_when_empty():
    assert PAIRED_COLUMNS[:17] == CONTRACT
    assert PAIRED_COLUMNS[17:] == ["source", "n_dropped", "dropped_blocks", "significance"]
    table = paired_tests(long_values(random_matrix(1, blocks=5, levels=3), ["A", "B", "C"]))
    assert list(table.columns) == PAIRED_COLUMNS
    empty = paired_tests(pd.DataFrame(columns=["study", "outcome", "source", "factor", "level", "block", "value"]))
    assert list(empty.columns) == PAIRED_COLUMNS and empty.empty
    assert (
        list(group_means(pd.DataFrame(columns=[*paired.FAMILY, "level", "context", "value"])).columns) == GROUP_COLUMNS
    )


def test_every_pair_equals_scipy_ttest_rel_and_t_interval_over_the_blocks_holding_both():
    matrix = random_matrix(7)
    table = paired_tests(long_values(matrix, LEVEL_ORDER), level_order=LEVEL_ORDER)

    assert len(table) == 28
    for row in table.itertuples():
        i, j = LEVEL_ORDER.index(row.level_a), LEVEL_ORDER.index(row.level_b)
        expected = direct(matrix, i, j, pairs=28)
        assert row.n_blocks == expected["n_blocks"] < 40  # some blocks dropped
        for column, value in expected.items():
            assert getattr(row, column) == pytest.approx(value, rel=1e-12, abs=1e-15), column
        assert row.p_adjusted == pytest.approx(min(1.0, 28 * expected["p_value"]), rel=1e-12)
        assert row.correction == "bonferroni"


def test_the_28_pairs_follow_the_papers_order_women_first():
    table = paired_tests(long_values(random_matrix(3), LEVEL_ORDER), level_order=LEVEL_ORDER)

    assert list(zip(table["level_a"], table["level_b"], strict=True)) == list(combinations(LEVEL_ORDER, 2))
    assert (table["level_a"].iloc[0], table["level_b"].iloc[0]) == ("Asian woman", "Black woman")
    assert (table["level_a"].iloc[-1], table["level_b"].iloc[-1]) == ("Hispanic man", "White man")


def test_without_an_order_levels_are_sorted_and_unlisted_levels_follow_the_order():
    values = long_values(random_matrix(4, levels=3), ["b", "c", "a"])

    assert list(paired_tests(values)[["level_a", "level_b"]].itertuples(index=False, name=None)) == [
        ("a", "b"), ("a", "c"), ("b", "c")]  # fmt: skip
    assert list(paired_tests(values, level_order=["c"])[["level_a", "level_b"]].itertuples(index=False, name=None)) == [
        ("c", "a"), ("c", "b"), ("a", "b")]  # fmt: skip


def test_holm_equals_statsmodels_and_none_keeps_the_raw_p_values():
    values = long_values(random_matrix(11), LEVEL_ORDER)

    holm = paired_tests(values, level_order=LEVEL_ORDER, correction="holm")
    none = paired_tests(values, level_order=LEVEL_ORDER, correction="none")

    assert holm["p_adjusted"].to_numpy() == pytest.approx(multipletests(holm["p_value"], method="holm")[1], rel=1e-12)
    assert (holm["correction"] == "holm").all()
    assert holm[["ci_low_adjusted", "ci_high_adjusted"]].isna().all().all()
    assert none["p_adjusted"].tolist() == none["p_value"].tolist()
    assert none[["ci_low_adjusted", "ci_high_adjusted"]].isna().all().all()
    assert holm["ci_low"].tolist() == none["ci_low"].tolist()


def test_several_rows_of_a_block_and_level_are_averaged_before_pairing():
    rows = [("v1", "A", 0.2), ("v1", "A", 0.4), ("v1", "B", 0.1), ("v2", "A", 0.5), ("v2", "B", 0.3),
            ("v3", "A", 0.6), ("v3", "B", 0.2), ("v3", "B", 0.4)]  # fmt: skip
    values = pd.DataFrame(rows, columns=["block", "level", "value"]).assign(
        study="S", outcome="o", source="", factor="f"
    )

    row = paired_tests(values).iloc[0]

    a, b = np.array([0.3, 0.5, 0.6]), np.array([0.1, 0.3, 0.3])
    assert row["n_blocks"] == 3
    assert row["mean_a"] == pytest.approx(a.mean()) and row["mean_b"] == pytest.approx(b.mean())
    assert row["t"] == pytest.approx(stats.ttest_rel(a, b).statistic)


def test_blocks_lacking_a_level_are_dropped_from_that_pair_and_listed_in_natural_order():
    matrix = np.full((12, 3), 0.3) + np.arange(12)[:, None] * 0.01 + np.array([0.0, 0.01, 0.03])
    matrix[[0, 5, 7], 0] += [0.02, -0.01, 0.005]  # some spread in each pair's differences
    matrix[[2, 10], 1] = np.nan
    matrix[3, 2] = np.nan
    values = long_values(matrix, ["A", "B", "C"], blocks=list(range(12)))
    values.loc[len(values)] = {**values.iloc[0].to_dict(), "value": np.nan, "block": 11, "level": "C"}  # no score

    table = paired_tests(values).set_index(["level_a", "level_b"])

    assert table.loc[("A", "B"), ["n_blocks", "n_dropped", "dropped_blocks"]].tolist() == [10, 2, "2; 10"]
    assert table.loc[("A", "C"), ["n_blocks", "n_dropped", "dropped_blocks"]].tolist() == [11, 1, "3"]
    assert table.loc[("B", "C"), ["n_blocks", "n_dropped", "dropped_blocks"]].tolist() == [9, 3, "2; 3; 10"]


@pytest.mark.parametrize(
    "blocks, dtype",
    [
        ([1, 2, 3, 4], None),
        ([1, 2, 3, 4], "Int64"),
        (["v1", "v2", "v3", "v4"], None),
        (["v1", "v2", "v3", "v4"], "str"),
    ],
    ids=["numbers", "nullable integers", "text with None", "text column"],
)
def test_rows_without_a_block_are_left_out_whether_block_ids_are_numbers_or_text(blocks, dtype):
    """None, NaN or pd.NA as the block: no block to pair by, so not a block of its own ("None", "nan", "")."""
    matrix = np.array([[0.1, 0.2], [0.3, 0.35], [0.5, 0.5], [0.4, 0.6]])
    values = long_values(matrix, ["A", "B"], blocks=blocks)
    missing = (None, np.nan) if isinstance(blocks[0], int) and dtype is None else (None, np.nan, pd.NA)
    without = [{**values.iloc[0].to_dict(), "block": block, "level": level, "value": value}
               for block in missing for level, value in (("A", 0.9), ("B", 0.1))]  # fmt: skip
    without.append({**values.iloc[0].to_dict(), "block": None, "level": "A", "value": 0.7})  # B lacks it
    mixed = pd.concat([values, pd.DataFrame(without)], ignore_index=True)
    if dtype:
        mixed["block"] = mixed["block"].astype(dtype)
    assert mixed["block"].isna().sum() == len(without)

    row = paired_tests(mixed).iloc[0]

    assert row[["n_blocks", "n_dropped", "dropped_blocks"]].tolist() == [4, 0, ""]
    expected = stats.ttest_rel(matrix[:, 0], matrix[:, 1])
    assert (row["t"], row["p_value"]) == pytest.approx((expected.statistic, expected.pvalue), rel=1e-12)


def test_pairs_that_cannot_be_tested_have_empty_statistics_and_keep_m():
    # A: every block; B: only block 0 (n = 1); C = A + 0.05 exactly (zero variance, nonzero difference);
    # D = A (zero difference); E: blocks 5-9 (no block shared with B).
    a = np.array([0.1, 0.25, 0.4, 0.2, 0.3, 0.15, 0.35, 0.45, 0.05, 0.5])
    matrix = np.full((10, 5), np.nan)
    matrix[:, 0], matrix[0, 1], matrix[:, 2], matrix[:, 3] = a, 0.2, a + 0.05, a
    matrix[5:, 4] = a[5:] + np.array([0.01, -0.02, 0.03, 0.0, 0.02])
    values = long_values(matrix, ["A", "B", "C", "D", "E"])

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning from scipy or numpy either
        table = paired_tests(values, correction="holm").set_index(["level_a", "level_b"])

    one = table.loc[("A", "B")]
    assert one["n_blocks"] == 1 and one["mean_diff"] == pytest.approx(0.1 - 0.2)
    constant = table.loc[("A", "C")]
    assert constant["n_blocks"] == 10 and constant["mean_diff"] == pytest.approx(-0.05)
    assert table.loc[("A", "D"), "mean_diff"] == 0.0
    none = table.loc[("B", "E")]
    assert none["n_blocks"] == 0 and none["n_dropped"] == 10 and math.isnan(none["mean_a"])
    for pair in [("A", "B"), ("A", "C"), ("A", "D"), ("B", "C"), ("B", "D"), ("B", "E"), ("C", "D")]:
        assert table.loc[pair, ["t", "p_value", "p_adjusted", "ci_low", "ci_high"]].isna().all(), pair
        assert table.loc[pair, "significance"] == ""
    # Holm over all 10 pairs: the untested ones count in m, as p = 1.
    p = table["p_value"].to_numpy()
    expected = multipletests(np.where(np.isnan(p), 1.0, p), method="holm")[1]
    tested = ~np.isnan(p)
    assert tested.sum() == 3  # A-E, C-E, D-E
    assert table["p_adjusted"].to_numpy()[tested] == pytest.approx(expected[tested], rel=1e-12)


def test_bonferroni_intervals_use_all_pairs_of_the_family_even_untested_ones():
    matrix = random_matrix(5, blocks=20, levels=4, missing=0.0)
    matrix[1:, 3] = np.nan  # D is in one block only: its 3 pairs cannot be tested
    row = paired_tests(long_values(matrix, ["A", "B", "C", "D"])).iloc[0]

    expected = direct(matrix, 0, 1, pairs=6)
    assert (row["ci_low_adjusted"], row["ci_high_adjusted"]) == pytest.approx(
        (expected["ci_low_adjusted"], expected["ci_high_adjusted"]), rel=1e-12
    )
    assert row["p_adjusted"] == pytest.approx(min(1, 6 * expected["p_value"]), rel=1e-12)


def test_significance_flags_follow_the_papers_three_thresholds():
    flags = paired.significance(np.array([0.00005, 0.0015, 0.002, 0.03, 0.05, 0.2, np.nan]), alpha=0.05, pairs=28)

    assert flags == ["***", "**", "*", "*", "", "", ""]


def test_three_stars_need_p_below_one_in_ten_thousand_not_one_in_a_thousand():
    """Between 0.0001 and 0.001 (here below alpha/m = 0.05/28 = 0.00179) is "**"; 0.0001 itself is not below it."""
    p = np.array([0.00009999, 0.0001, 0.00010001, 0.0005, 0.000999, 0.001, 0.0017])
    assert paired.significance(p, alpha=0.05, pairs=28) == ["***", "**", "**", "**", "**", "**", "**"]
    assert paired.significance(np.array([0.0005, 0.00005]), alpha=0.05, pairs=1) == ["**", "***"]


def test_significance_boundaries_are_strict_at_alpha_and_alpha_over_m():
    assert paired.significance(np.array([0.05 / 28, 0.05]), alpha=0.05, pairs=28) == ["*", ""]


def test_families_are_tested_apart_and_extra_family_columns_are_kept():
    values = pd.concat(
        [
            long_values(random_matrix(1, levels=3), ["A", "B", "C"], source="gpt-2"),
            long_values(random_matrix(2, levels=3), ["A", "B", "C"], source="gpt-3"),
        ]
    ).assign(mitigation="none")

    table = paired_tests(values, family=("study", "outcome", "source", "factor", "mitigation"))

    assert table["source"].tolist() == ["gpt-2"] * 3 + ["gpt-3"] * 3
    assert list(table.columns) == [*PAIRED_COLUMNS, "mitigation"]
    only = paired_tests(values[values["source"] == "gpt-3"])
    assert table.iloc[3:][STATISTICS].reset_index(drop=True).equals(only[STATISTICS])


def test_bad_arguments_are_refused():
    values = long_values(random_matrix(1, levels=2), ["A", "B"])
    with pytest.raises(ValueError, match="bonferroni, holm, none"):
        paired_tests(values, correction="sidak")
    with pytest.raises(ValueError, match="lack the column"):
        paired_tests(values.drop(columns=["block"]))
    with pytest.raises(ValueError, match="alpha"):
        paired_tests(values, alpha=5)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(min_value=0, max_value=2**32 - 1),
    st.integers(min_value=0, max_value=12),
    st.sampled_from([0.0, 0.2, 0.6]),
)
def test_any_pattern_of_missing_blocks_matches_scipy_or_is_left_untested(seed, blocks, missing):
    matrix = random_matrix(seed, blocks=blocks, levels=3, missing=missing)
    if blocks:
        matrix = np.round(matrix, 2)  # ties and constant differences happen
    table = paired_tests(long_values(matrix, ["A", "B", "C"]), correction="none")

    for row in table.itertuples():
        i, j = "ABC".index(row.level_a), "ABC".index(row.level_b)
        both = ~np.isnan(matrix[:, i]) & ~np.isnan(matrix[:, j])
        d = matrix[both, i] - matrix[both, j]
        assert row.n_blocks == both.sum() and row.n_dropped + row.n_blocks == len(
            set(long_values(matrix, ["A", "B", "C"])["block"])
        )
        if len(d) < 2 or np.ptp(d) <= 1e-12:
            assert math.isnan(row.t) and math.isnan(row.ci_low)
        else:
            expected = direct(matrix, i, j, pairs=3)
            assert row.t == pytest.approx(expected["t"], rel=1e-9)
            assert row.p_value == pytest.approx(expected["p_value"], rel=1e-9, abs=1e-300)
            assert (row.ci_low, row.ci_high) == pytest.approx((expected["ci_low"], expected["ci_high"]), rel=1e-9)


# --- group means and the heat table ---------------------------------------------------------------------------


def test_group_means_equal_numpy_and_scipy_overall_and_per_stratum():
    values = long_values(random_matrix(9, blocks=30, levels=3), ["A", "B", "C"])

    table = group_means(values, level_order=["C", "A", "B"])

    assert table["level"].unique().tolist() == ["C", "A", "B"]
    assert table[table["level"] == "C"]["stratum"].tolist() == ["all", "c0", "c1", "c2"]
    assert table[table["level"] == "C"]["stratum_factor"].tolist() == ["", "context", "context", "context"]
    for row in table.itertuples():
        mine = values[values["level"] == row.level]
        if row.stratum != "all":
            mine = mine[mine["context"] == row.stratum]
        x = mine["value"].to_numpy()
        low, high = stats.t.interval(0.95, len(x) - 1, loc=x.mean(), scale=x.std(ddof=1) / math.sqrt(len(x)))
        assert (row.n, row.mean, row.sd) == pytest.approx((len(x), x.mean(), x.std(ddof=1)), rel=1e-12)
        assert (row.ci_low, row.ci_high) == pytest.approx((low, high), rel=1e-12)


def test_group_means_without_an_interval_for_one_observation_or_no_spread():
    values = pd.DataFrame(
        {"level": ["A", "B", "B", "C", "C"], "value": [0.3, 0.2, 0.2, 0.1, np.nan], "context": ["x"] * 5}
    ).assign(study="S", outcome="said_no", source="m", factor="f")

    table = group_means(values).set_index(["level", "stratum"])

    assert table.loc[("A", "all"), "n"] == 1 and table.loc[("C", "all"), "n"] == 1  # NaN is no observation
    assert table.loc[("B", "all"), ["mean", "sd"]].tolist() == [0.2, 0.0]
    assert table[["ci_low", "ci_high"]].isna().all().all()


def test_group_means_of_two_observations_have_scipys_t_interval():
    values = pd.DataFrame(
        {"level": ["A", "A", "B", "B", "B"], "value": [0.2, 0.5, 0.1, 0.4, 0.3], "context": ["x", "x", "x", "x", "y"]}
    ).assign(study="S", outcome="o", source="m", factor="f")

    table = group_means(values).set_index(["level", "stratum"])

    for key, x in [(("A", "all"), [0.2, 0.5]), (("B", "x"), [0.1, 0.4])]:
        x = np.array(x)
        low, high = stats.t.interval(0.95, 1, loc=x.mean(), scale=x.std(ddof=1) / math.sqrt(2))
        assert table.loc[key, "n"] == 2
        assert table.loc[key, ["ci_low", "ci_high"]].tolist() == pytest.approx([low, high], rel=1e-12)
    assert table.loc[("B", "y"), ["ci_low", "ci_high"]].isna().all()  # n = 1


def test_the_heat_table_has_the_papers_rows_and_columns(shared_datasets):
    values = deepseek_values(shared_datasets)
    means = group_means(values, level_order=LEVEL_ORDER)

    table = heat_table(means, outcome="p_no")

    assert list(table.columns) == ["Average", "acute_cancer", "acute_non_cancer", "chronic_cancer",
                                   "chronic_non_cancer", "post_op"]  # fmt: skip
    assert list(table.index) == [*LEVEL_ORDER, "Asian", "Black", "Hispanic", "White", "woman", "man", "All"]
    scored = values.dropna(subset=["value"])
    for label in table.index:
        if label == "All":
            rows = scored
        elif " " in label:
            rows = scored[scored["level"] == label]
        else:  # a race or a gender: every observation of its levels
            rows = scored[scored["level"].str.split(" ").apply(lambda parts, label=label: label in parts)]
        assert table.loc[label, "Average"] == pytest.approx(rows["value"].mean(), rel=1e-12)
        by_context = rows.groupby("context")["value"].mean()
        assert table.loc[label].drop("Average").to_numpy() == pytest.approx(by_context[table.columns[1:]], rel=1e-12)


def test_the_heat_table_reads_its_csv_back_and_asks_which_source(shared_datasets):
    values = deepseek_values(shared_datasets)
    means = group_means(pd.concat([values, values.assign(source="other")]), level_order=LEVEL_ORDER)
    read_back = pd.read_csv(io.StringIO(means.to_csv(index=False)))

    with pytest.raises(ValueError, match="several source"):
        heat_table(read_back, outcome="p_no")
    assert heat_table(read_back, outcome="p_no", source="deepseek-32k").equals(
        heat_table(means, outcome="p_no", source="deepseek-32k")
    )
    assert heat_table(read_back, outcome="no_such_outcome", source="other").empty


def test_levels_that_are_not_a_race_gender_grid_get_only_an_all_row():
    matrix = random_matrix(2, blocks=9, levels=3)
    means = group_means(long_values(matrix, ["10 years", "20 years", "30 years"]))
    assert list(heat_table(means, outcome="p_no").index) == ["10 years", "20 years", "30 years", "All"]
    assert paired.race_gender_grid(["Black woman", "White woman", "Black man"]) is None  # not a full grid
    assert paired.race_gender_grid(["Native American woman", "Native American man", "Black woman", "Black man"]) == (
        ["Native American", "Black"], ["woman", "man"])  # fmt: skip


# --- the deepseek-32k outputs: the check, pure ---------------------------------------------------------


def test_the_deepseek_outputs_give_scipys_28_tests_and_list_the_blocks_dropped(shared_datasets):
    values = deepseek_values(shared_datasets)
    matrix = values.pivot(index="block", columns="level", values="value")[LEVEL_ORDER].to_numpy()
    assert np.isnan(matrix).sum() == 44

    table = paired_tests(values, level_order=LEVEL_ORDER)

    assert len(table) == 28 and (table["n_blocks"] + table["n_dropped"] == 50).all()
    blocks = sorted(values["block"].unique())
    for row in table.itertuples():
        i, j = LEVEL_ORDER.index(row.level_a), LEVEL_ORDER.index(row.level_b)
        expected = direct(matrix, i, j, pairs=28)
        for column, value in expected.items():
            assert getattr(row, column) == pytest.approx(value, rel=1e-12, abs=1e-15), column
        lacking = [blocks[k] for k in np.flatnonzero(np.isnan(matrix[:, i]) | np.isnan(matrix[:, j]))]
        assert row.dropped_blocks == "; ".join(lacking)


def test_one_family_needs_no_family_columns_and_rows_without_a_level_are_left_out():
    values = pd.DataFrame(
        {"level": ["A", "B", "A", "B", None, "A", "B"], "block": [1, 1, 2, 2, 2, 3, 3],
         "value": [0.1, 0.2, 0.3, 0.35, 0.9, 0.5, 0.5], "context": list("xxyyyxx")}
    )  # fmt: skip

    row = paired_tests(values, family=()).iloc[0]
    means = group_means(values, family=())

    expected = stats.ttest_rel([0.1, 0.3, 0.5], [0.2, 0.35, 0.5])
    assert (row["level_a"], row["level_b"], row["n_blocks"]) == ("A", "B", 3)
    assert (row["t"], row["p_value"]) == pytest.approx((expected.statistic, expected.pvalue), rel=1e-12)
    assert row[["study", "outcome", "source", "factor"]].tolist() == ["", "", "", ""]
    assert sorted(set(means["level"])) == ["A", "B"]
