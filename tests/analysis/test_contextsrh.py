"""ContextSRH's statistics (analysis/contextsrh.py) on hand-worked results tables: no database."""

import json
import math

import krippendorff
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from analysis import contextsrh

SCORER = "minilm_cosine"


def score(source, base, attribute, group, value, version=1) -> dict:
    """A scorer row of a context answer, as the results table has it."""
    return dict(study="S", kind="scorer", field=SCORER, who=f"{SCORER} v{version}", source=source,
                question=f"{base}-{attribute}-{group}", base_question=base, levels=json.dumps({attribute: group}),
                value=value, answer=f"{source}/{base}/{attribute}/{group}", attention_check_passed=None)  # fmt: skip


def rating(source, question, who, groups, relevant="all", passed=None) -> list[dict]:
    """A person's rating of a source's original answer: the gate, then one row per group chosen."""
    common = dict(study="S", kind="human", source=source, question=question, base_question="", levels="{}",
                  who=who, answer=f"{source}/{question}", attention_check_passed=passed)  # fmt: skip
    return [{**common, "field": "relevant", "value": relevant}] + [
        {**common, "field": "correct_for", "value": group} for group in groups
    ]


def table(rows) -> pd.DataFrame:
    return pd.DataFrame(rows)


def sex_scores(values: dict[str, tuple]) -> list[dict]:
    return [
        score("gpt", base, "sex", group, value)
        for base, pair in values.items()
        for group, value in zip(("female", "male"), pair, strict=True)
    ]


# --- similarity.csv -----------------------------------------------------------------------------------------------


def test_pct_win_counts_a_tie_for_every_tied_group_and_a_missing_score_cannot_win():
    results = table(sex_scores({"q1": (0.9, 0.9), "q2": (0.8, 0.7), "q3": (0.5, 0.6), "q4": (0.4, "missing")}))

    similarity = contextsrh.similarity_table(contextsrh.similarity_frame(results), pd.DataFrame(
        columns=contextsrh.VERDICT_COLUMNS), study="S")  # fmt: skip

    assert list(similarity.columns) == contextsrh.SIMILARITY_COLUMNS
    female, male = similarity.to_dict("records")
    assert (female["group"], female["n_questions"], male["n_questions"]) == ("female", 4, 3)
    assert female["avg_similarity"] == pytest.approx((0.9 + 0.8 + 0.5 + 0.4) / 4)
    assert male["avg_similarity"] == pytest.approx((0.9 + 0.7 + 0.6) / 3)
    # q1 is a tie: a win for both; q4 has no male similarity: female wins it, and it is in both denominators.
    assert female["pct_win"] == pytest.approx(100 * 3 / 4) and male["pct_win"] == pytest.approx(100 * 2 / 4)
    assert math.isnan(female["pct_human"]) and math.isnan(male["pct_win_marked_correct"])  # no people's labels


def test_groups_come_in_the_papers_order_ages_by_number():
    ages = ["10", "15", "18", "21", "25", "30", "40", "50", "60", "70"]
    results = table(
        [score("m", "q1", "age", age, 0.5 + i / 100) for i, age in enumerate(reversed(ages))]
        + [score("m", "q2", "location", place, 0.5) for place in ("Wyoming", "Hawaii", "Idaho")]
    )

    similarity = contextsrh.contextsrh_tables(results, study="S")["similarity.csv"]

    assert similarity["group"].tolist() == [*ages, "Hawaii", "Idaho", "Wyoming"]
    assert similarity.loc[similarity["group"] == "10", "pct_win"].item() == 100.0  # the largest similarity
    assert similarity.loc[similarity["attribute"] == "location", "pct_win"].tolist() == [100.0] * 3  # a 3-way tie


def test_the_highest_version_of_a_score_counts():
    results = table([score("m", "q1", "sex", "female", 0.1, version=1), score("m", "q1", "sex", "female", 0.7, 2),
                     score("m", "q1", "sex", "male", 0.5)])  # fmt: skip

    frame = contextsrh.similarity_frame(results)

    assert frame["similarity"].tolist() == [0.7, 0.5]


# --- group_tests.csv ----------------------------------------------------------------------------------------------


def test_an_incomplete_block_is_dropped_and_counted_and_friedman_is_scipys():
    rng = np.random.default_rng(4)
    values = rng.random((6, 3))
    rows = [score("m", f"q{i}", "location", place, float(values[i, j]))
            for i in range(6) for j, place in enumerate(("Hawaii", "Idaho", "Vermont"))]  # fmt: skip
    rows = [row for row in rows if row["question"] != "q5-location-Idaho"]  # q5 lacks Idaho

    tests = contextsrh.group_tests(contextsrh.similarity_frame(table(rows)), study="S")

    assert list(tests.columns) == contextsrh.GROUP_TEST_COLUMNS
    (row,) = tests.to_dict("records")
    expected = stats.friedmanchisquare(*values[:5].T)
    assert (row["test"], row["n_blocks"], row["n_dropped"]) == ("friedman", 5, 1)
    assert row["statistic"] == pytest.approx(expected.statistic) and row["p_value"] == pytest.approx(expected.pvalue)


def test_two_groups_get_wilcoxon_and_too_few_blocks_a_nan_row():
    pairs = {"q1": (0.9, 0.5), "q2": (0.8, 0.75), "q3": (0.6, 0.61), "q4": (0.7, 0.2), "q5": (0.9, 0.3)}
    results = table([*sex_scores(pairs), score("gpt", "q9", "age", "10", 0.5), score("gpt", "q9", "age", "15", 0.4),
                     score("gpt", "q9", "age", "18", 0.3)])  # fmt: skip

    tests = contextsrh.group_tests(contextsrh.similarity_frame(results), study="S").set_index("attribute")

    female, male = np.array(list(pairs.values())).T
    expected = stats.wilcoxon(female, male)
    assert tests.loc["sex", "test"] == "wilcoxon" and tests.loc["sex", "n_blocks"] == 5
    assert tests.loc["sex", "statistic"] == expected.statistic and tests.loc["sex", "p_value"] == expected.pvalue
    assert tests.loc["age", "test"] == "friedman" and tests.loc["age", "n_blocks"] == 1
    assert math.isnan(tests.loc["age", "statistic"]) and math.isnan(tests.loc["age", "p_value"])


# --- people's labels ----------------------------------------------------------------------------------------------


def test_k_votes_decide_a_groups_verdict_default_a_majority():
    rows = sex_scores({"q1": (0.9, 0.8)})
    rows += rating("gpt", "q1", "r1", ["female", "male"]) + rating("gpt", "q1", "r2", ["female"])
    rows += rating("gpt", "q1", "r3", ["female", "male"])

    majority = contextsrh.contextsrh_report(table(rows), study="S")
    two = contextsrh.contextsrh_report(table(rows), study="S", k=3)

    assert majority.verdicts[["group", "votes", "raters", "correct"]].values.tolist() == [
        ["female", 3, 3, True], ["male", 2, 3, True]]  # fmt: skip
    assert two.verdicts["correct"].tolist() == [True, False]  # male has 2 votes of the 3 needed
    assert two.similarity["pct_human"].tolist() == [100.0, 0.0]
    with pytest.raises(ValueError, match="positive"):
        contextsrh.contextsrh_report(table(rows), study="S", k=0)


def test_two_raters_need_both_by_default_as_the_papers_groups_selected_by_both():
    rows = sex_scores({"q1": (0.9, 0.8)}) + rating("gpt", "q1", "r1", ["female", "male"])
    rows += rating("gpt", "q1", "r2", ["female"])

    verdicts = contextsrh.contextsrh_report(table(rows), study="S").verdicts

    assert verdicts["correct"].tolist() == [True, False]


def test_not_applicable_and_a_failed_gate_drop_the_rating_and_are_counted():
    rows = sex_scores({"q1": (0.9, 0.8), "q2": (0.5, 0.7), "q3": (0.6, 0.6)})
    rows += rating("gpt", "q1", "r1", ["female"]) + rating("gpt", "q1", "r2", ["female"])
    rows += rating("gpt", "q2", "r1", ["not_applicable"]) + rating("gpt", "q2", "r2", ["not_applicable"])
    rows += rating("gpt", "q3", "r1", ["female", "male"], passed=True)
    rows += rating("gpt", "q3", "r2", ["male"], relevant="some", passed=False)  # failed the attention check
    rows += rating("gpt", "q3", "r3", ["male"], relevant="some", passed="False")  # as read back from a CSV

    report = contextsrh.contextsrh_report(table(rows), study="S")

    dropped = report.labels.dropped
    assert dropped[["question", "who", "reason"]].values.tolist() == [
        ["q2", "r1", "not_applicable"], ["q2", "r2", "not_applicable"], ["q3", "r2", "failed_gate"],
        ["q3", "r3", "failed_gate"]]  # fmt: skip
    (agreement,) = report.agreement.to_dict("records")
    assert (agreement["n_not_applicable"], agreement["n_failed_gate"]) == (2, 2)
    assert (agreement["n_questions"], agreement["n_units"], agreement["n_raters"]) == (2, 4, 2)
    # q2 has no counted rating: out of the denominator; q3 has one rater (r1), a majority of one.
    female, male = report.similarity.to_dict("records")
    assert female["pct_human"] == 100.0 and male["pct_human"] == 50.0
    # female wins q1 and q3 (a tie), both marked correct for her; male wins q2 (no verdict) and q3 (correct).
    assert female["pct_win_marked_correct"] == 100.0 and male["pct_win_marked_correct"] == 100.0
    assert female["pct_win"] == pytest.approx(200 / 3) and male["pct_win"] == pytest.approx(200 / 3)


def test_pct_win_marked_correct_is_over_the_questions_a_group_wins():
    rows = sex_scores({"q1": (0.9, 0.8), "q2": (0.9, 0.7), "q3": (0.5, 0.7), "q4": (0.9, 0.1)})
    for question, groups in {"q1": ["female", "male"], "q2": ["male"], "q3": ["male"], "q4": ["female"]}.items():
        rows += rating("gpt", question, "r1", groups) + rating("gpt", question, "r2", groups)

    female, male = contextsrh.contextsrh_report(table(rows), study="S").similarity.to_dict("records")

    assert female["pct_human"] == 50.0 and male["pct_human"] == 75.0  # q1, q4 / q1, q2, q3 of 4
    assert female["pct_win_marked_correct"] == pytest.approx(200 / 3)  # wins q1, q2, q4; correct at q1, q4
    assert male["pct_win_marked_correct"] == 100.0  # wins q3, correct there


def test_a_question_of_two_attributes_is_labelled_for_both_groups_sets():
    rows = [score("m", "q1", "sex", "female", 0.9), score("m", "q1", "sex", "male", 0.8),
            score("m", "q1", "age", "10", 0.5), score("m", "q1", "age", "70", 0.6)]  # fmt: skip
    rows += rating("m", "q1", "r1", ["female", "70"]) + rating("m", "q1", "r2", ["female", "10", "70"])

    report = contextsrh.contextsrh_report(table(rows), study="S")

    marks = report.labels.marks
    assert sorted(marks["group"].unique()) == ["10", "70", "female", "male"]
    assert report.verdicts.loc[report.verdicts["correct"], "group"].tolist() == ["70", "female"]
    assert report.agreement["attribute"].tolist() == ["age", "sex"]


# --- agreement ------------------------------------------------------------------------------------------------


def test_cohens_kappa_on_a_hand_worked_two_rater_case():
    # Three sex questions x two groups = 6 binary units. r1: 1 1 | 1 0 | 1 1; r2: 1 0 | 1 0 | 1 1.
    # p_o = 5/6; r1 marks 5/6, r2 4/6: p_e = 5/6 * 4/6 + 1/6 * 2/6 = 22/36; kappa = (30 - 22) / (36 - 22) = 4/7.
    rows = sex_scores({"q1": (0.9, 0.8), "q2": (0.5, 0.7), "q3": (0.6, 0.6)})
    for question, first, second in [("q1", ["female", "male"], ["female"]), ("q2", ["female"], ["female"]),
                                    ("q3", ["female", "male"], ["female", "male"])]:  # fmt: skip
        rows += rating("gpt", question, "r1", first) + rating("gpt", question, "r2", second)

    (agreement,) = contextsrh.contextsrh_report(table(rows), study="S").agreement.to_dict("records")

    assert list(agreement) == contextsrh.AGREEMENT_COLUMNS
    assert agreement["cohen_kappa"] == pytest.approx(4 / 7)
    assert (agreement["n_questions"], agreement["n_units"], agreement["n_raters"]) == (3, 6, 2)
    matrix = np.array([[1, 1, 1, 0, 1, 1], [1, 0, 1, 0, 1, 1]], dtype=float)
    assert agreement["krippendorff_alpha"] == pytest.approx(krippendorff.alpha(matrix, level_of_measurement="nominal"))


def test_krippendorffs_alpha_with_three_raters_and_gaps_equals_the_package_and_kappa_is_empty():
    rows = sex_scores({f"q{i}": (0.5, 0.6) for i in range(4)})
    labels = {  # rater -> question -> groups; r3 skips q3
        "r1": {"q0": ["female"], "q1": ["female", "male"], "q2": ["male"], "q3": ["female"]},
        "r2": {"q0": ["female"], "q1": ["female"], "q2": ["male"], "q3": ["female", "male"]},
        "r3": {"q0": ["female", "male"], "q1": ["female", "male"], "q2": ["female"]},
    }
    for who, chosen in labels.items():
        for question, groups in chosen.items():
            rows += rating("gpt", question, who, groups)

    (agreement,) = contextsrh.contextsrh_report(table(rows), study="S").agreement.to_dict("records")

    units = [(f"q{i}", group) for i in range(4) for group in ("female", "male")]
    matrix = np.array([[float(group in labels[who][question]) if question in labels[who] else np.nan
                        for question, group in units] for who in ("r1", "r2", "r3")])  # fmt: skip
    assert agreement["krippendorff_alpha"] == pytest.approx(krippendorff.alpha(matrix, level_of_measurement="nominal"))
    assert math.isnan(agreement["cohen_kappa"]) and agreement["n_raters"] == 3


def test_no_people_no_agreement_rows_and_labels_in_one_category_give_nan():
    rows = sex_scores({"q1": (0.9, 0.8)})
    assert contextsrh.contextsrh_report(table(rows), study="S").agreement.empty
    rows += rating("gpt", "q1", "r1", ["female", "male"]) + rating("gpt", "q1", "r2", ["female", "male"])
    (agreement,) = contextsrh.contextsrh_report(table(rows), study="S").agreement.to_dict("records")
    assert math.isnan(agreement["cohen_kappa"]) and math.isnan(agreement["krippendorff_alpha"])
