"""Judge-vs-people statistics against published tables, statsmodels and hand computations (no database)."""

from itertools import combinations

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.inter_rater import cohens_kappa as sm_cohens_kappa

from analysis.judge_agreement import (
    AGREEMENT_COLUMNS,
    CONSISTENCY_COLUMNS,
    FEW_LEVEL_ITEMS,
    PLACE_COLUMNS,
    agreement_table,
    classes_of,
    consistency_table,
    equity_audit,
    judge_place,
    judge_place_table,
    judge_vs_judge,
    judge_vs_people,
    kappa,
    label_matrix,
    macro_f1,
    people_vs_people,
    percent_agreement,
    position_consistency,
    repeat_consistency,
)
from analysis.reliability import cohen_kappa as reliability_kappa

# Wikipedia, "Cohen's kappa", worked example: 50 grant proposals read by two readers, A (rows) and B (columns),
# Yes/No: 20 both Yes, 5 A Yes B No, 10 A No B Yes, 15 both No. Published: p_o = 0.7, p_e = 0.5, kappa = 0.4.
WIKIPEDIA_PROPOSALS = np.array([[20, 5], [10, 15]])
# The same article's "same percentages, different kappa" pair: p_o = 0.60 in both; kappa 0.1304 and 0.2593.
WIKIPEDIA_SAME_AGREEMENT = [np.array([[45, 15], [25, 15]]), np.array([[25, 35], [5, 35]])]
PUBLISHED_KAPPA = [0.4, 0.1304, 0.2593]


def labels_from_table(table: np.ndarray, classes=(1, 0)) -> tuple[list[int], list[int]]:
    """Two raters' labels whose confusion table (rows: first rater, columns: second) is `table`."""
    first, second = [], []
    for i, a in enumerate(classes):
        for j, b in enumerate(classes):
            first += [a] * int(table[i, j])
            second += [b] * int(table[i, j])
    return first, second


def frame(judge: dict[str, list], people: dict[str, list], pool: str = "Physician", **levels: list) -> pd.DataFrame:
    """Long rows: one list of labels per rater over items i0, i1, ... (None = not rated)."""
    rows = []
    for kind, raters in (("judge", judge), ("human", people)):
        for rater, labels in raters.items():
            for i, value in enumerate(labels):
                if value is None:
                    continue
                row = {"item": f"i{i}", "rater": rater, "rater_kind": kind, "pool": pool if kind == "human" else ""}
                row |= {"value": value} | {factor: values[i] for factor, values in levels.items()}
                rows.append(row)
    return pd.DataFrame(rows)


def hand_kappa(first: list, second: list) -> float:
    n = len(first)
    observed = sum(a == b for a, b in zip(first, second, strict=True)) / n
    chance = sum((first.count(c) / n) * (second.count(c) / n) for c in set(first) | set(second))
    return (observed - chance) / (1 - chance)


def hand_macro_f1(first: list, second: list) -> float:
    """Mean over classes of the harmonic mean of precision (over the first's labels) and recall."""
    scores = []
    for c in sorted(set(first) | set(second)):
        tp = sum(a == c and b == c for a, b in zip(first, second, strict=True))
        precision = tp / first.count(c)
        recall = tp / second.count(c)
        scores.append(0.0 if tp == 0 else 2 * precision * recall / (precision + recall))
    return sum(scores) / len(scores)


@pytest.mark.parametrize(
    ("table", "published"), list(zip([WIKIPEDIA_PROPOSALS, *WIKIPEDIA_SAME_AGREEMENT], PUBLISHED_KAPPA, strict=True))
)
def test_kappa_equals_statsmodels_hand_and_published(table, published):
    first, second = labels_from_table(table)
    expected = sm_cohens_kappa(table).kappa
    assert kappa(first, second) == pytest.approx(expected, abs=1e-12)
    assert kappa(first, second) == pytest.approx(hand_kappa(first, second), abs=1e-12)
    assert kappa(first, second) == pytest.approx(reliability_kappa(first, second), abs=1e-12)
    assert kappa(first, second) == pytest.approx(published, abs=5e-5)
    ratings = frame({"judge": first}, {"ann": second})
    result = judge_vs_people(ratings, judge="judge", pool="Physician", rng=np.random.default_rng(0), resamples=50)
    assert result["cohen_kappa"].estimate == pytest.approx(expected, abs=1e-12)


def test_percent_agreement_and_macro_f1_equal_hand_computations():
    first, second = labels_from_table(WIKIPEDIA_PROPOSALS)
    assert percent_agreement(first, second) == pytest.approx(0.7)
    # Yes: precision 20/25, recall 20/30 -> F1 8/11; No: precision 15/25, recall 15/20 -> F1 2/3.
    assert macro_f1(first, second) == pytest.approx((8 / 11 + 2 / 3) / 2, abs=1e-12)
    assert macro_f1(first, second) == pytest.approx(hand_macro_f1(first, second), abs=1e-12)
    for table in WIKIPEDIA_SAME_AGREEMENT:
        a, b = labels_from_table(table)
        assert percent_agreement(a, b) == pytest.approx(0.6)
        assert macro_f1(a, b) == pytest.approx(hand_macro_f1(a, b), abs=1e-12)
    # Three categories (a True/False/NR auto-evaluator): macro over the three.
    a = ["True", "False", "NR", "True", "True", "False", "NR", "False"]
    b = ["True", "True", "NR", "True", "False", "False", "False", "False"]
    assert macro_f1(a, b) == pytest.approx(hand_macro_f1(a, b), abs=1e-12)
    assert kappa(a, b) == pytest.approx(hand_kappa(a, b), abs=1e-12)


def test_judge_vs_each_person_is_averaged_over_people_and_pooled_as_healthbench():
    judge = [1, 1, 0, 0, 1, 0, 1, 0, 0, 1]
    ann = [1, 0, 0, 0, 1, 0, 1, 1, 0, 1]
    bob = [1, 1, 1, 0, None, 0, 0, 0, 0, None]
    ratings = frame({"j": judge}, {"ann": ann, "bob": bob})
    rng = np.random.default_rng(0)
    mean = judge_vs_people(ratings, judge="j", pool="Physician", rng=rng, resamples=20)
    pairs = [
        ([j for j, p in zip(judge, person, strict=True) if p is not None], [p for p in person if p is not None])
        for person in (ann, bob)
    ]
    for metric, hand in (
        ("percent_agreement", percent_agreement),
        ("cohen_kappa", hand_kappa),
        ("macro_f1", hand_macro_f1),
    ):
        assert mean[metric].estimate == pytest.approx(np.mean([hand(a, b) for a, b in pairs]), abs=1e-12)
    assert (mean["macro_f1"].n_items, mean["macro_f1"].n_pairs) == (10, 2)

    # HealthBench (simple-evals healthbench_meta_eval.py): precision of class c over every (grader, physician)
    # pair with grader label c, recall over every pair with physician label c, F1 per class, their mean.
    grader = pairs[0][0] + pairs[1][0]
    physician = pairs[0][1] + pairs[1][1]
    pooled = judge_vs_people(ratings, judge="j", pool="Physician", rng=rng, resamples=20, pairing="pooled")
    assert pooled["macro_f1"].estimate == pytest.approx(hand_macro_f1(grader, physician), abs=1e-12)
    assert pooled["percent_agreement"].estimate == pytest.approx(percent_agreement(grader, physician))


def test_people_vs_people_averages_every_pair_over_its_common_items():
    ann = [1, 0, 0, 1, 1, 0, None, 1]
    bob = [1, 1, 0, 1, None, 0, 0, 1]
    cat = [None, 0, 0, 1, 1, 1, 0, 0]
    dan = [None] * 8  # rated nothing in common: no pair
    ratings = frame({}, {"ann": ann, "bob": bob, "cat": cat, "dan": dan})
    result = people_vs_people(ratings, pool="Physician", rng=np.random.default_rng(0), resamples=20)
    common = []
    for x, y in combinations((ann, bob, cat), 2):
        both = [(a, b) for a, b in zip(x, y, strict=True) if a is not None and b is not None]
        common.append(([a for a, _ in both], [b for _, b in both]))
    assert result["percent_agreement"].estimate == pytest.approx(np.mean([percent_agreement(*p) for p in common]))
    assert result["cohen_kappa"].estimate == pytest.approx(np.mean([hand_kappa(*p) for p in common]))
    assert result["macro_f1"].estimate == pytest.approx(np.mean([hand_macro_f1(*p) for p in common]))
    assert result["percent_agreement"].n_pairs == 3


def test_bootstrap_is_reproducible_covers_the_estimate_and_equals_a_plain_resampling_loop():
    rng = np.random.default_rng(5)
    truth = rng.random(60) < 0.4
    people = {f"p{k}": list(np.where(rng.random(60) < 0.85, truth, ~truth).astype(int)) for k in range(2)}
    judge = list(np.where(rng.random(60) < 0.8, truth, ~truth).astype(int))
    ratings = frame({"j": judge}, people)
    first = judge_vs_people(ratings, judge="j", pool="Physician", rng=np.random.default_rng(42), resamples=400)
    again = judge_vs_people(ratings, judge="j", pool="Physician", rng=np.random.default_rng(42), resamples=400)
    assert first == again
    for result in first.values():
        assert result.ci_low < result.estimate < result.ci_high

    # The same draws (rng.integers(0, n, (B, n))) resampled item by item give the same percentile interval.
    draws = np.random.default_rng(42).integers(0, 60, (400, 60))
    judge_a, people_a = np.array(judge), [np.array(v) for v in people.values()]
    values = [np.mean([percent_agreement(judge_a[d], p[d]) for p in people_a]) for d in draws]
    assert (first["percent_agreement"].ci_low, first["percent_agreement"].ci_high) == pytest.approx(
        tuple(np.quantile(values, [0.025, 0.975])), abs=1e-12
    )
    kappas = [np.mean([hand_kappa(list(judge_a[d]), list(p[d])) for p in people_a]) for d in draws]
    assert (first["cohen_kappa"].ci_low, first["cohen_kappa"].ci_high) == pytest.approx(
        tuple(np.quantile(kappas, [0.025, 0.975])), abs=1e-12
    )


def test_judge_vs_judge_collapses_repeats_and_equals_kappa():
    a, b = labels_from_table(WIKIPEDIA_PROPOSALS)
    ratings = frame({"j1": a, "j2": b}, {})
    # A second repeat of j1 on item 0 with the other label: a tie, so the first value seen (1) stays.
    ratings = pd.concat(
        [ratings, pd.DataFrame([{"item": "i0", "rater": "j1", "rater_kind": "judge", "pool": "", "value": 0}])]
    )
    result = judge_vs_judge(ratings, judge_a="j1", judge_b="j2", rng=np.random.default_rng(0), resamples=50)
    assert result["cohen_kappa"].estimate == pytest.approx(0.4)
    matrix = label_matrix(ratings, ["j1"], ["i0"], classes_of(ratings["value"]))
    assert matrix.tolist() == [[1]]


def test_the_judge_is_ranked_among_people_against_the_leave_one_out_majority():
    # Six items, four people, a judge. Each person's others' majority (ties left out), worked by hand below.
    ann = [1, 1, 0, 0, 1, 0]
    bob = [1, 1, 0, 1, 1, 0]
    cat = [1, 0, 0, 0, 1, 1]
    dan = [0, 1, 0, 0, 0, 0]
    judge = [1, 1, 0, 0, 1, 0]
    place = judge_place(
        frame({"j": judge}, {"ann": ann, "bob": bob, "cat": cat, "dan": dan}), judge="j", pool="Physician"
    )
    people = place.people.set_index("rater")
    # Every person's others have the majority 1,1,0,0,1,0 (no ties with three others and two classes):
    # ann agrees on all 6, bob on 5 (item 3), cat on 4 (items 1, 5), dan on 4 (items 0, 4); the judge on all 6.
    assert people["person"].tolist() == pytest.approx([1, 5 / 6, 4 / 6, 4 / 6])
    assert people["judge"].tolist() == pytest.approx([1, 1, 1, 1])
    assert place.judge_score == 1.0 and place.rank == 1
    assert place.percentile == pytest.approx(100 * (3 + 0.5) / 4)
    assert place.share_matched == 1.0

    # Ties of the others are left out and counted; the judge is scored on each person's untied items.
    a, b, c = [1, 1, 0], [1, 0, 0], [0, 0, 0]
    place = judge_place(frame({"j": [1, 1, 1]}, {"a": a, "b": b, "c": c}), judge="j", pool="Physician")
    people = place.people.set_index("rater")
    # a's others (b, c): tie, 0, 0 -> a 1/2, judge 0/2. b's (a, c): tie, tie, 0 -> b 1/1, judge 0/1.
    # c's (a, b): 1, tie, 0 -> c 1/2, judge 1/2.
    assert people["n_items"].tolist() == [2, 1, 2] and people["n_ties"].tolist() == [1, 2, 1]
    assert people["person"].tolist() == pytest.approx([0.5, 1.0, 0.5])
    assert people["judge"].tolist() == pytest.approx([0.0, 0.0, 0.5])
    assert place.judge_score == pytest.approx(1 / 6) and place.rank == 4 and place.percentile == 0.0
    assert place.share_matched == pytest.approx(1 / 3)


def test_the_place_table_summarises_the_judge_among_each_pools_people():
    ann = [1, 1, 0, 0, 1, 0]
    bob = [1, 1, 0, 1, 1, 0]
    cat = [1, 0, 0, 0, 1, 1]
    dan = [0, 1, 0, 0, 0, 0]
    ratings = frame({"j": [1, 1, 0, 0, 1, 0]}, {"ann": ann, "bob": bob, "cat": cat, "dan": dan})
    table = judge_place_table(ratings.assign(field="bias"), study="S")
    assert list(table.columns) == PLACE_COLUMNS
    assert table["metric"].tolist() == ["percent_agreement", "cohen_kappa", "macro_f1"]
    row = table.set_index("metric").loc["percent_agreement"]
    # The hand-worked case above: people 1, 5/6, 4/6, 4/6 against the others' majority; the judge 1 on all.
    assert (row["study"], row["field"], row["judge"], row["pool"]) == ("S", "bias", "j", "Physician")
    assert row["n_people"] == 4 and row["n_items"] == 24 and row["judge_score"] == 1.0
    assert row["people_mean"] == pytest.approx((1 + 5 / 6 + 4 / 6 + 4 / 6) / 4)
    assert (row["people_min"], row["people_max"]) == pytest.approx((4 / 6, 1.0))
    assert row["rank"] == 1 and row["percentile"] == pytest.approx(87.5) and row["share_matched"] == 1.0

    alone = judge_place_table(frame({"j": [1, 0]}, {"ann": [1, 0]}), study="S")  # nobody else to form a majority
    assert alone["n_people"].tolist() == [0, 0, 0] and alone["judge_score"].isna().all() and alone["rank"].isna().all()


def test_the_consistency_table_compares_repeats_within_an_order_and_verdicts_across_orders():
    rows = [
        # item, judge, swapped (shown second first), value naming the item's own answer (already turned back)
        ("q1", "J", False, "answer_1"),
        ("q1", "J", False, "answer_1"),  # q1 first order: repeats agree
        ("q1", "J", True, "answer_1"),
        ("q1", "J", True, "answer_1"),  # q1 swapped: repeats agree, the same answer: consistent across orders
        ("q2", "J", False, "answer_1"),
        ("q2", "J", False, "answer_2"),  # q2 first order: repeats differ
        ("q2", "J", True, "answer_2"),
        ("q2", "J", True, "answer_2"),  # swapped: answer 2 (shown first) both times
    ]
    ratings = pd.DataFrame(rows, columns=["item", "rater", "swapped", "value"])
    ratings = ratings.assign(rater_kind="judge", pool="", field="preference")
    table = consistency_table(ratings, study="S")
    assert list(table.columns) == CONSISTENCY_COLUMNS
    by_check = table.set_index("check")
    # Repeats within one order: (q1, first), (q1, swapped), (q2, swapped) agree, (q2, first) does not: 3 of 4.
    assert by_check.loc["repeats", "n_items"] == 4 and by_check.loc["repeats", "share"] == pytest.approx(0.75)
    assert by_check.loc["repeats", "mean_pairwise_agreement"] == pytest.approx(0.75)
    # Orders: q1 answer 1 both; q2's first order ties 1:1 (the first seen, answer 1, wins) vs answer 2: 1 of 2.
    assert by_check.loc["display_order", "n_items"] == 2 and by_check.loc["display_order", "share"] == 0.5
    # As shown: q1 answer_1, answer_1, answer_2 x2 (swapped back); q2 answer_1, answer_2, answer_1 x2: 5 of 8 first.
    assert by_check.loc["display_order", "first_shown_share"] == pytest.approx(5 / 8)

    one_order = consistency_table(ratings[~ratings["swapped"]].drop(columns="swapped"), study="S")
    assert one_order["check"].tolist() == ["repeats"]


def test_position_consistency_maps_swapped_verdicts_back_to_the_answer_named():
    rows = [
        # item, judge, swap, verdict naming the position shown
        ("q1", "J", False, "answer_1"),
        ("q1", "J", True, "answer_2"),  # answer 1 both times: consistent
        ("q2", "J", False, "answer_1"),
        ("q2", "J", True, "answer_1"),  # always the first shown: inconsistent
        ("q3", "J", False, "tie"),
        ("q3", "J", True, "tie"),  # a tie survives the swap
        ("q4", "J", False, "answer_2"),
        ("q4", "J", True, "answer_1"),  # answer 2 both times: consistent
        ("q5", "J", False, "answer_2"),  # one order only: not counted
        ("q1", "K", False, "answer_1"),
        ("q1", "K", True, "answer_1"),
    ]
    verdicts = pd.DataFrame(rows, columns=["item", "rater", "swap", "value"])
    result = position_consistency(verdicts).set_index("rater")
    assert result.loc["J", "n_items"] == 4 and result.loc["J", "consistent"] == 3
    assert result.loc["J", "share"] == pytest.approx(0.75)
    # J's positional verdicts: answer_1 x4, answer_2 x3 (raw, as shown) -> first shown 4/7.
    assert result.loc["J", "first_shown_share"] == pytest.approx(4 / 7)
    assert result.loc["K", "share"] == 0.0 and result.loc["K", "first_shown_share"] == 1.0


def test_repeat_consistency_counts_items_where_every_repeat_agrees():
    rows = [
        ("i1", "J", 1),
        ("i1", "J", 1),
        ("i1", "J", 1),  # all agree: pairwise 1
        ("i2", "J", 1),
        ("i2", "J", 0),
        ("i2", "J", 1),  # pairwise (2*1 + 0) / (3*2) = 1/3
        ("i3", "J", 0),
    ]  # one repeat: not counted
    result = repeat_consistency(pd.DataFrame(rows, columns=["item", "rater", "value"])).set_index("rater")
    assert result.loc["J", "n_items"] == 2
    assert result.loc["J", "all_agree_share"] == pytest.approx(0.5)
    assert result.loc["J", "mean_pairwise_agreement"] == pytest.approx((1 + 1 / 3) / 2)


def simulated_study(rng: np.random.Generator, accuracy: dict[str, float], items: int = 120) -> pd.DataFrame:
    """Three people who agree with a true label 90% of the time; a judge right `accuracy[level]` of the time."""
    level = np.array(list(accuracy))[np.arange(items) % len(accuracy)]
    truth = rng.random(items) < 0.4
    people = {f"p{k}": list(np.where(rng.random(items) < 0.9, truth, ~truth)) for k in range(3)}
    right = rng.random(items) < np.array([accuracy[x] for x in level])
    judge = list(np.where(right, truth, ~truth))
    return frame({"J": judge}, people, race=list(level))


def test_equity_audit_flags_a_group_dependent_judge_error():
    ratings = simulated_study(np.random.default_rng(1), {"A": 0.95, "B": 0.60}, items=200)
    audit = equity_audit(ratings, judge="J", pool="Physician", factors=["race"]).set_index("level")
    assert audit["flag"].all()
    assert audit.loc["B", "disagreement_rate"] > audit.loc["A", "disagreement_rate"]
    assert audit.loc["A", "p_adjusted"] < 0.001


def test_equity_audit_false_flags_near_the_nominal_rate_when_errors_do_not_depend_on_the_group():
    flags = 0
    simulations = 200
    for seed in range(simulations):
        ratings = simulated_study(np.random.default_rng(seed), {"A": 0.8, "B": 0.8}, items=200)
        audit = equity_audit(ratings, judge="J", pool="Physician", factors=["race"])
        flags += bool(audit["flag"].any())
    # Binomial(200, 0.05): mean 10, sd 3.1; a test that ignored the level would flag far more or never.
    assert 2 <= flags <= 20, flags


def test_equity_audit_holm_corrects_over_fields_and_notes_small_levels():
    rng = np.random.default_rng(3)
    biased = simulated_study(rng, {"A": 0.95, "B": 0.6}, items=200).assign(field="bias")
    fair = simulated_study(rng, {"A": 0.8, "B": 0.8}, items=200).assign(field="harm")
    small = frame({"J": [1] * 5}, {"p0": [1] * 5}, race=["C"] * 5).assign(field="harm", item=lambda f: "s" + f["item"])
    ratings = pd.concat([biased, fair, small])
    audit = equity_audit(ratings, judge="J", pool="Physician", factors=["race"])
    tested = audit.dropna(subset=["p_value"]).drop_duplicates("field")
    raw = sorted(tested["p_value"])
    # Holm with two tests: the smaller p doubled, the larger kept (at least the first adjusted).
    adjusted = sorted(tested["p_adjusted"])
    assert adjusted[0] == pytest.approx(min(1.0, 2 * raw[0]))
    assert adjusted[1] == pytest.approx(max(adjusted[0], raw[1]))
    assert audit.loc[audit["level"] == "C", "note"].tolist() == [FEW_LEVEL_ITEMS]


def test_agreement_table_has_the_contract_columns_and_p_values_on_level_rows():
    ratings = simulated_study(np.random.default_rng(1), {"A": 0.95, "B": 0.60}, items=100).assign(field="bias")
    table = agreement_table(ratings, study="demo", factors=["race"], seed=0, resamples=100)
    assert list(table.columns) == AGREEMENT_COLUMNS
    assert set(table["metric"]) == {"percent_agreement", "cohen_kappa", "macro_f1"}
    assert set(table["level"]) == {"", "race=A", "race=B"}
    judged = table[(table["rater_a_kind"] == "judge") & (table["level"] != "")]
    assert judged["flag"].tolist() == [True] * 6 and judged["p_value"].notna().all()
    assert table.loc[table["level"] == "", "p_value"].isna().all()
    humans = table[table["rater_a_kind"] == "human"]
    assert (humans["rater_a"] == "Physician").all() and (humans["rater_b_kind"] == "human").all()
    assert (table["ci_low"] <= table["estimate"]).all() and (table["estimate"] <= table["ci_high"]).all()
    again = agreement_table(ratings, study="demo", factors=["race"], seed=0, resamples=100)
    pd.testing.assert_frame_equal(table, again)
