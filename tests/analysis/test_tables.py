"""The report's tables (analysis.tables) against direct pandas computations over the exported CSV files."""

from pathlib import Path

import krippendorff
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from analysis import outcomes, tables
from analysis.bootstrap import ALL_EQUAL, proportion_cis
from studies import release
from tests.analysis.conftest import (
    CC_MANUAL,
    CONSUMER,
    CONTENT,
    DIMENSIONS,
    EHAI,
    EXPERT,
    HEALTHSEARCHQA,
    MED_PALM,
    MED_PALM_2,
    MIXED,
    OMAQ,
    PHYSICIAN,
    SIMILAR,
    counterfactual_row,
    independent_row,
    pairwise_row,
    release_frame,
    write_and_read,
)

SPEC_RATES = ["rubric", "dataset", "rater_type", "aggregation", "outcome", "source", "n", "estimate", "ci_low",
              "ci_high", "note"]  # fmt: skip
SPEC_RELIABILITY = ["rubric", "dataset", "rater_type", "outcome", "metric", "n_items", "n_raters", "estimate",
                    "ci_low", "ci_high", "note"]  # fmt: skip
SPEC_CROSSTAB = ["dataset", "rater_type", "ideal_answers_differ", "answers_differ_how", "n", "bias_rate", "ci_low",
                 "ci_high"]  # fmt: skip
SPEC_REGRESSION = ["predictor", "level", "reference_level", "odds_ratio", "ci_low", "ci_high", "p_value", "n"]
KEYS = ["rubric", "dataset", "rater_type", "answer_source", "aggregation", "outcome", "source"]


NUMBERS = ["n", "estimate", "ci_low", "ci_high", "n_items", "n_raters", "bias_rate", "odds_ratio", "p_value"]


def report_files(frames: dict[str, pd.DataFrame], directory: Path, **options) -> dict[str, pd.DataFrame]:
    """build_report + write_report, the four files read back: text columns with "" for empty cells, numbers
    as floats (NaN where empty)."""
    tables.write_report(tables.build_report(frames, **options), directory)
    files = {name: pd.read_csv(directory / f"{name}.csv", keep_default_na=False) for name in tables.TABLES}
    for frame in files.values():
        for column in set(NUMBERS) & set(frame.columns):
            frame[column] = pd.to_numeric(frame[column].replace("", np.nan))
    return files


def rate(files: dict[str, pd.DataFrame], **key: str) -> pd.Series:
    rates = files["rates"]
    found = rates[np.logical_and.reduce([rates[column].astype(str) == value for column, value in key.items()])]
    assert len(found) == 1, (key, found)
    return found.iloc[0]


def with_union(frame: pd.DataFrame) -> pd.DataFrame:
    """The notebook's way: EquityMedQA rows again, relabelled."""
    union = frame[frame["dataset"].isin(tables.EQUITYMEDQA_SETS)].assign(dataset="EquityMedQA")
    return pd.concat([frame, union], ignore_index=True)


def aggregated(frame: pd.DataFrame, group: list[str], item: list[str], column: str) -> pd.DataFrame:
    """Direct pooled / majority / any rates of a 0/1 column: means over ratings, then over per-item votes."""
    pooled = frame.groupby(group)[column].agg(["size", "mean"])
    votes = frame.groupby(group + item)[column].agg(["size", "sum"])
    votes["majority"] = votes["sum"] > votes["size"] / 2
    votes["any"] = votes["sum"] > 0
    per_item = votes.groupby(level=list(range(len(group))))[["majority", "any"]].agg(["size", "mean"])
    parts = [pooled.assign(aggregation="pooled")]
    for name in ("majority", "any"):
        parts.append(per_item[name].assign(aggregation=name))
    return pd.concat(parts).reset_index().rename(columns={"size": "n", "mean": "estimate"})


def expected_independent(path: Path) -> pd.DataFrame:
    ratings = with_union(pd.read_csv(path))
    ratings["bias_presence"] = ratings["bias_presence"] != "No bias"
    group = ["dataset", "rater_type", "answer_source"]
    parts = [aggregated(ratings, group, ["question_id"], column).assign(outcome=column)
             for column in ["bias_presence", *DIMENSIONS]]  # fmt: skip
    return pd.concat(parts).assign(rubric="independent", source="")


def preferred_source(row: pd.Series) -> str:
    """The source whose answer was *not* judged more biased, if either was."""
    filled = {column[: -len("_answer_more_bias")]: value for column, value in row.items()
              if str(column).endswith("_answer_more_bias") and not pd.isna(value)}  # fmt: skip
    if not any(filled.values()):
        return "No preference"
    return next(source for source, value in filled.items() if not value)


def expected_pairwise(path: Path) -> pd.DataFrame:
    ratings = with_union(pd.read_csv(path))
    ratings["preferred"] = ratings.apply(preferred_source, axis=1)
    pair = ratings.apply(lambda row: sorted([row["answer_1_source"], row["answer_2_source"]]), axis=1)
    ratings["answer_source"] = pair.map(" vs ".join)
    group = ["dataset", "rater_type", "answer_source"]
    parts = []
    for outcome in ["bias_presence", *DIMENSIONS]:
        marked = ratings["preferred"] != "No preference"
        if outcome != "bias_presence":
            marked &= ratings[outcome]
        for side in (0, 1):
            chosen = ratings.assign(value=marked & (ratings["preferred"] == pair.str[side]), source=pair.str[side])
            parts.append(aggregated(chosen, [*group, "source"], ["question_id"], "value").assign(outcome=outcome))
        neither = ratings.assign(value=~marked, source="No preference")
        parts.append(aggregated(neither, [*group, "source"], ["question_id"], "value").assign(outcome=outcome))
    return pd.concat(parts).assign(rubric="pairwise")


def expected_counterfactual(path: Path) -> pd.DataFrame:
    ratings = with_union(pd.read_csv(path)).rename(
        columns={"omits_systemic_explanations": "omits_systemic_explanation"}
    )
    ratings["answer_source"] = ratings["answer_1_source"]  # both answers from one source here
    group = ["dataset", "rater_type", "answer_source"]
    parts = [aggregated(ratings, group, ["question_1_id", "question_2_id"], column).assign(outcome=column)
             for column in ["bias_presence", *DIMENSIONS]]  # fmt: skip
    return pd.concat(parts).assign(rubric="counterfactual", source="")


def test_every_rate_equals_a_direct_pandas_computation_over_the_exported_csv_files(study_csv, read_frames, tmp_path):
    files = report_files(read_frames(study_csv), tmp_path / "report")

    expected = pd.concat([
        expected_independent(study_csv / "ratings_independent.csv"),
        expected_pairwise(study_csv / "ratings_pairwise.csv"),
        expected_counterfactual(study_csv / "ratings_counterfactual.csv"),
    ])  # fmt: skip
    got = files["rates"]
    got = got[~got["outcome"].isin(tables.ANSWER_OUTCOMES)]
    merged = got.merge(expected.astype({"n": "int64"}), on=KEYS, how="outer", suffixes=("", "_direct"), indicator=True)
    assert (merged["_merge"] == "both").all(), merged[merged["_merge"] != "both"][KEYS + ["_merge"]]
    assert len(got) == len(expected) > 500
    assert (merged["n"] == merged["n_direct"]).all()
    np.testing.assert_allclose(merged["estimate"].astype(float), merged["estimate_direct"].astype(float), atol=1e-12)


def test_rates_report_the_seven_equitymedqa_sets_again_as_their_union(tmp_path):
    rows = [
        independent_row("o1", OMAQ, PHYSICIAN, "a", "Minor bias"),
        independent_row("o2", OMAQ, PHYSICIAN, "a", "No bias"),
        independent_row("e1", EHAI, PHYSICIAN, "b", "Severe bias"),
        independent_row("e2", CC_MANUAL, PHYSICIAN, "b", "Severe bias"),
        independent_row("h1", HEALTHSEARCHQA, PHYSICIAN, "c", "Minor bias"),
        independent_row("h2", MIXED, PHYSICIAN, "c", "No bias"),
    ]
    files = report_files({"independent": write_and_read(tmp_path, "independent", rows)}, tmp_path / "report")

    union = rate(files, dataset="EquityMedQA", aggregation="pooled", outcome="bias_presence")
    assert (union["n"], union["estimate"]) == (4, 0.75)
    datasets = set(files["rates"]["dataset"])
    assert datasets == {OMAQ, EHAI, CC_MANUAL, HEALTHSEARCHQA, MIXED, "EquityMedQA"}

    without = report_files({"independent": release_frame("independent", rows[4:])}, tmp_path / "other")
    assert "EquityMedQA" not in set(without["rates"]["dataset"])


def test_majority_and_any_votes_over_a_triple_rated_set_by_hand(tmp_path):
    votes = {"q1": ["Minor bias", "Severe bias", "No bias"],  # 2 of 3: majority and any
             "q2": ["Minor bias", "No bias", "No bias"],  # 1 of 3: any only
             "q3": ["No bias", "No bias", "No bias"],
             "q4": ["Minor bias", "No bias"]}  # a tie is no majority  # fmt: skip
    rows = [independent_row(q, MIXED, PHYSICIAN, f"r{i}", level, ["failure_to_challenge"] if level != "No bias" else [])
            for q, levels in votes.items() for i, level in enumerate(levels)]  # fmt: skip
    files = report_files({"independent": write_and_read(tmp_path, "independent", rows)}, tmp_path / "report")

    def estimate(aggregation: str, outcome: str = "bias_presence") -> tuple[int, float]:
        found = rate(files, dataset=MIXED, aggregation=aggregation, outcome=outcome)
        return int(found["n"]), float(found["estimate"])

    assert estimate("pooled") == (11, 4 / 11)
    assert estimate("majority") == (4, 1 / 4)
    assert estimate("any") == (4, 3 / 4)
    assert estimate("majority", "failure_to_challenge") == (4, 1 / 4)
    assert estimate("any", "inaccuracy_for_some_axes") == (4, 0.0)


def test_pairwise_preference_is_for_the_answer_not_judged_more_biased(tmp_path):
    rows = [
        pairwise_row("q1", OMAQ, PHYSICIAN, "a", more_bias=MED_PALM, dimensions=["other_bias"]),
        pairwise_row("q1", OMAQ, PHYSICIAN, "b", more_bias=MED_PALM, dimensions=[]),
        pairwise_row("q1", OMAQ, PHYSICIAN, "c", more_bias=MED_PALM_2, dimensions=["other_bias"]),
        pairwise_row("q2", OMAQ, PHYSICIAN, "a", more_bias=None),
    ]
    files = report_files({"pairwise": write_and_read(tmp_path, "pairwise", rows)}, tmp_path / "report")

    def estimate(aggregation: str, outcome: str, source: str) -> float:
        return float(rate(files, dataset=OMAQ, aggregation=aggregation, outcome=outcome, source=source)["estimate"])

    assert estimate("pooled", "bias_presence", MED_PALM_2) == 2 / 4
    assert estimate("pooled", "bias_presence", MED_PALM) == 1 / 4
    assert estimate("pooled", "bias_presence", "No preference") == 1 / 4
    assert estimate("pooled", "other_bias", MED_PALM_2) == 1 / 4  # preferred and marked
    assert estimate("pooled", "other_bias", "No preference") == 2 / 4
    assert estimate("majority", "bias_presence", MED_PALM_2) == 1 / 2  # q1: 2 of 3 prefer Med-PaLM 2
    assert estimate("any", "bias_presence", MED_PALM) == 1 / 2
    assert set(files["rates"]["answer_source"]) == {"Med-PaLM vs Med-PaLM-2"}


def test_pairwise_comparisons_are_reported_apart(study_csv, read_frames, tmp_path):
    files = report_files(read_frames(study_csv), tmp_path / "report")

    cells = files["rates"][(files["rates"]["rubric"] == "pairwise") & (files["rates"]["dataset"] == HEALTHSEARCHQA)]
    by_comparison = cells.groupby("answer_source")["source"].agg(lambda sources: sorted(set(sources)))
    assert by_comparison.to_dict() == {
        "Med-PaLM vs Med-PaLM-2": ["Med-PaLM", "Med-PaLM-2", "No preference"],
        "Med-PaLM-2 vs Physician-written": ["Med-PaLM-2", "No preference", "Physician-written"],
    }


def test_a_pairwise_row_must_name_exactly_two_sources():
    frame = release_frame("pairwise", [pairwise_row("q1", OMAQ, PHYSICIAN, "a", more_bias=MED_PALM)])
    frame[release.source_column(MED_PALM)] = np.nan

    with pytest.raises(ValueError, match="exactly two"):
        outcomes.outcomes_pairwise(frame)


def answer_rows(question: str, levels: list[str], source: str = MED_PALM_2, pool: str = PHYSICIAN) -> list:
    return [independent_row(question, CC_MANUAL, pool, f"r{i}", level, answer_source=source)
            for i, level in enumerate(levels)]  # fmt: skip


def test_counterfactual_pairs_from_the_independent_ratings_of_their_answers_by_hand(tmp_path):
    independent = [
        *answer_rows("a1", ["Minor bias", "No bias", "Severe bias"]),  # 2 of 3 biased
        *answer_rows("a2", ["No bias", "No bias", "Minor bias"]),  # 1 of 3
        *answer_rows("b1", ["No bias"]),
        *answer_rows("b2", ["No bias"]),
        *answer_rows("c1", ["Minor bias"]),  # pair c has no ratings of c2: left out
        *answer_rows("a1", ["No bias"] * 3, source=MED_PALM),  # another source's answers: not these pairs'
    ]
    counterfactual = [
        counterfactual_row("a1", "a2", CC_MANUAL, PHYSICIAN, "x", bias=True),
        counterfactual_row("a1", "a2", CC_MANUAL, PHYSICIAN, "y", bias=False),
        counterfactual_row("b1", "b2", CC_MANUAL, PHYSICIAN, "x"),
        counterfactual_row("c1", "c2", CC_MANUAL, PHYSICIAN, "x"),
    ]
    frames = {"independent": write_and_read(tmp_path, "independent", independent),
              "counterfactual": write_and_read(tmp_path, "counterfactual", counterfactual)}  # fmt: skip
    files = report_files(frames, tmp_path / "report")

    def estimate(aggregation: str, outcome: str) -> tuple[int, float]:
        found = rate(files, dataset=CC_MANUAL, rubric="counterfactual", aggregation=aggregation, outcome=outcome)
        return int(found["n"]), float(found["estimate"])

    # pooled: every rating of one answer with every rating of the other (pair a: 9 combinations, pair b: 1)
    assert estimate("pooled", "one_answer_biased") == (10, (2 * 2 + 1 * 1) / 10)
    assert estimate("pooled", "at_least_one_answer_biased") == (10, (9 - 1 * 2) / 10)
    assert estimate("pooled", "both_answers_biased") == (10, 2 / 10)
    # majority: a1 biased, a2 not -> exactly one; any: both biased
    assert estimate("majority", "one_answer_biased") == (2, 1 / 2)
    assert estimate("majority", "both_answers_biased") == (2, 0.0)
    assert estimate("any", "one_answer_biased") == (2, 0.0)
    assert estimate("any", "at_least_one_answer_biased") == (2, 1 / 2)
    assert estimate("any", "both_answers_biased") == (2, 1 / 2)
    assert estimate("pooled", "bias_presence") == (4, 1 / 4)  # the counterfactual rubric's own verdict
    derived = files["rates"][files["rates"]["outcome"].isin(tables.ANSWER_OUTCOMES)]
    assert set(derived["resampled"]) == {"pairs"}  # every aggregation of these rows resamples pairs


def test_counterfactual_answer_counts_have_a_row_per_pair():
    independent = [*answer_rows("a1", ["Minor bias", "No bias", "Severe bias"]), *answer_rows("a2", ["No bias"] * 2),
                   *answer_rows("b1", ["No bias"]), *answer_rows("b2", ["Minor bias"])]  # fmt: skip
    counterfactual = [counterfactual_row("a1", "a2", CC_MANUAL, PHYSICIAN, "x"),
                      counterfactual_row("a1", "a2", CC_MANUAL, PHYSICIAN, "y"),  # the same pair rated again
                      counterfactual_row("b1", "b2", CC_MANUAL, PHYSICIAN, "x")]  # fmt: skip

    counts = tables.counterfactual_answer_counts(release_frame("independent", independent),
                                                 release_frame("counterfactual", counterfactual))  # fmt: skip

    pooled = counts[(counts["aggregation"] == "pooled") & (counts["outcome"] == "one_answer_biased")]
    # pair a: 3 x 2 combinations, 2 of them with answer 1 biased (answer 2 never); pair b: answer 2 biased
    assert sorted(zip(pooled["dataset"], pooled["n"], pooled["k"], strict=True)) == [
        (CC_MANUAL, 1, 1), (CC_MANUAL, 6, 4), ("EquityMedQA", 1, 1), ("EquityMedQA", 6, 4)
    ]  # fmt: skip
    assert (counts[counts["aggregation"] != "pooled"]["n"] == 1).all()


def test_counterfactual_pairs_join_on_question_ids_alone_when_sources_are_not_given(tmp_path):
    independent = release_frame("independent", [*answer_rows("a1", ["Minor bias"]), *answer_rows("a2", ["No bias"])])
    counterfactual = release_frame("counterfactual", [counterfactual_row("a1", "a2", CC_MANUAL, PHYSICIAN, "x")])
    frames = {"independent": independent.drop(columns="answer_source"),
              "counterfactual": counterfactual.drop(columns=["answer_1_source", "answer_2_source"])}  # fmt: skip

    counts = tables.counterfactual_answer_counts(frames["independent"], frames["counterfactual"])

    one = counts[(counts["dataset"] == CC_MANUAL) & (counts["outcome"] == "one_answer_biased")]
    assert one.groupby("aggregation")["k"].sum().to_dict() == {"any": 1, "majority": 1, "pooled": 1}


def test_the_counterfactual_crosstab_counts_ratings_per_judgement(tmp_path):
    rows = [
        counterfactual_row("a1", "a2", CC_MANUAL, PHYSICIAN, "x", bias=True, ideal="No", how=CONTENT),
        counterfactual_row("a1", "a2", CC_MANUAL, PHYSICIAN, "y", bias=False, ideal="No", how=CONTENT),
        counterfactual_row("b1", "b2", CC_MANUAL, PHYSICIAN, "x", bias=False, ideal="No", how=CONTENT),
        counterfactual_row("b1", "b2", CC_MANUAL, PHYSICIAN, "y", bias=True, ideal="Yes", how=SIMILAR),
        counterfactual_row("b1", "b2", CC_MANUAL, EXPERT, "z", bias=False, ideal="No", how=SIMILAR),
    ]
    files = report_files({"counterfactual": write_and_read(tmp_path, "counterfactual", rows)}, tmp_path / "report")

    crosstab = files["counterfactual_crosstab"]
    direct = (
        with_union(release_frame("counterfactual", rows))
        .groupby(["dataset", "rater_type", "ideal_answers_differ", "answers_differ_how"])["bias_presence"]
        .agg(["size", "mean"])
    )
    got = crosstab.set_index(["dataset", "rater_type", "ideal_answers_differ", "answers_differ_how"])
    assert got.index.sort_values().equals(direct.index.sort_values())
    assert (got["n"] == direct.loc[got.index, "size"]).all()
    np.testing.assert_allclose(got["bias_rate"], direct.loc[got.index, "mean"])
    no_content = got.loc[(CC_MANUAL, PHYSICIAN, "No", CONTENT)]
    assert (no_content["n"], no_content["bias_rate"]) == (3, 1 / 3)
    assert got.loc[(CC_MANUAL, EXPERT, "No", SIMILAR), "note"] == "not estimable: one rating"


def test_output_files_have_the_spec_columns_first(study_csv, read_frames, tmp_path):
    report = tables.build_report(read_frames(study_csv))

    written = tables.write_report(report, tmp_path)

    headers = {name: (tmp_path / f"{name}.csv").read_text().splitlines()[0].split(",") for name in written}
    assert headers["rates"][: len(SPEC_RATES)] == SPEC_RATES
    assert headers["reliability"][: len(SPEC_RELIABILITY)] == SPEC_RELIABILITY
    assert headers["counterfactual_crosstab"][: len(SPEC_CROSSTAB)] == SPEC_CROSSTAB
    assert headers["consumer_regression"][: len(SPEC_REGRESSION)] == SPEC_REGRESSION
    assert written == {name: len(getattr(report, name)) for name in written}
    assert min(written.values()) > 0


def test_no_ratings_give_empty_tables_with_their_columns(tmp_path):
    written = tables.write_report(tables.build_report({"pairwise": pd.DataFrame()}), tmp_path)

    assert written == {"rates": 0, "reliability": 0, "counterfactual_crosstab": 0, "consumer_regression": 0}
    assert (tmp_path / "rates.csv").read_text().splitlines() == [",".join(tables.RATES_COLUMNS)]


def test_degenerate_cells_get_a_note_instead_of_nan(tmp_path):
    rows = [
        independent_row("q1", OMAQ, PHYSICIAN, "a", "Minor bias"),  # one rating
        *(independent_row(f"q{i}", EHAI, PHYSICIAN, "a", "No bias") for i in range(3)),  # all equal
        independent_row("m1", MIXED, EXPERT, "a", "No bias"),  # one item rated twice: reliability not estimable
        independent_row("m1", MIXED, EXPERT, "b", "Minor bias"),
    ]
    files = report_files({"independent": write_and_read(tmp_path, "independent", rows)}, tmp_path / "report")

    single = rate(files, dataset=OMAQ, aggregation="pooled", outcome="bias_presence")
    assert np.isnan(single["ci_low"]) and np.isnan(single["ci_high"])
    assert (single["estimate"], single["note"]) == (1.0, "not estimable: one rating")
    equal = rate(files, dataset=EHAI, aggregation="any", outcome="bias_presence")
    assert np.isnan(equal["ci_low"]) and (equal["estimate"], equal["note"]) == (0.0, ALL_EQUAL)
    for name in ("rates", "reliability"):
        assert "nan" not in (tmp_path / "report" / f"{name}.csv").read_text().lower()
    reliability = files["reliability"]
    assert set(reliability["dataset"]) == {MIXED}  # only cells with items rated twice
    assert reliability["estimate"].isna().all() and reliability["note"].str.startswith("not estimable").all()


def triple_rated(pool: str = PHYSICIAN) -> list:
    levels = [["Minor bias", "Minor bias", "No bias"], ["No bias"] * 3, ["Severe bias", "Minor bias", "Minor bias"],
              ["No bias", "Minor bias", "No bias"], ["No bias", "No bias", "Severe bias"], ["No bias"] * 3]  # fmt: skip
    return [independent_row(f"q{q}", MIXED, pool, f"{pool}-{(q + i) % 4}", level)
            for q, item in enumerate(levels) for i, level in enumerate(item)]  # fmt: skip


def test_reliability_of_a_triple_rated_set_matches_the_formulas(tmp_path):
    rows = triple_rated() + [independent_row("h1", HEALTHSEARCHQA, PHYSICIAN, "x", "No bias")]
    files = report_files({"independent": write_and_read(tmp_path, "independent", rows)}, tmp_path / "report")

    reliability = files["reliability"].set_index(["dataset", "outcome", "metric"])
    biased = np.array([[1, 1, 0], [0, 0, 0], [1, 1, 1], [0, 1, 0], [0, 0, 1], [0, 0, 0]], dtype=float)
    agreement = np.mean([(sum(row) * (sum(row) - 1) + (3 - sum(row)) * (2 - sum(row))) / 6 for row in biased])
    randolph = reliability.loc[(MIXED, "bias_presence", "randolph_kappa")]
    assert randolph["estimate"] == pytest.approx((agreement - 0.5) / 0.5)
    assert (randolph["n_items"], randolph["n_raters"]) == (6, 4)
    alpha = reliability.loc[(MIXED, "bias_presence", "krippendorff_alpha"), "estimate"]
    assert alpha == pytest.approx(krippendorff.alpha(biased.T, level_of_measurement="nominal"))
    three_levels = reliability.loc[(MIXED, "bias_presence_3", "krippendorff_alpha"), "estimate"]
    levels = np.array([[1, 1, 0], [0, 0, 0], [2, 1, 1], [0, 1, 0], [0, 0, 2], [0, 0, 0]], dtype=float)
    assert three_levels == pytest.approx(krippendorff.alpha(levels.T, level_of_measurement="nominal"))
    assert HEALTHSEARCHQA not in set(files["reliability"]["dataset"])  # singly rated
    assert "cohen_kappa" not in set(files["reliability"]["metric"])  # four raters


def test_cohen_kappa_when_two_raters_rated_every_item(tmp_path):
    first = ["Minor bias", "No bias", "No bias", "Severe bias", "No bias", "Minor bias"]
    second = ["Minor bias", "No bias", "Minor bias", "No bias", "No bias", "Minor bias"]
    rows = [independent_row(f"q{q}", MIXED, EXPERT, rater, level)
            for rater, levels in (("a", first), ("b", second)) for q, level in enumerate(levels)]  # fmt: skip
    files = report_files({"independent": write_and_read(tmp_path, "independent", rows)}, tmp_path / "report")

    cohen = files["reliability"].set_index(["outcome", "metric"]).loc[("bias_presence", "cohen_kappa")]
    a = np.array([level != "No bias" for level in first])
    b = np.array([level != "No bias" for level in second])
    observed = np.mean(a == b)
    chance = a.mean() * b.mean() + (1 - a.mean()) * (1 - b.mean())
    assert cohen["estimate"] == pytest.approx((observed - chance) / (1 - chance))
    assert (cohen["n_items"], cohen["n_raters"]) == (6, 2)


def test_pairwise_reliability_uses_three_categories(tmp_path):
    rows = [pairwise_row(f"q{q}", MIXED, PHYSICIAN, f"r{i}", more_bias=more)
            for q, item in enumerate([[MED_PALM, MED_PALM, None], [None, None, None], [MED_PALM_2, MED_PALM, None]])
            for i, more in enumerate(item)]  # fmt: skip
    files = report_files({"pairwise": write_and_read(tmp_path, "pairwise", rows)}, tmp_path / "report")

    randolph = files["reliability"].set_index(["outcome", "metric"]).loc[("bias_presence", "randolph_kappa")]
    agreement = np.mean([2 / 6, 6 / 6, 0 / 6])
    assert randolph["estimate"] == pytest.approx((agreement - 1 / 3) / (2 / 3))


def test_consumer_regression_fits_the_consumer_pool_with_the_chosen_reference_levels(study_csv, read_frames, tmp_path):
    files = report_files(read_frames(study_csv), tmp_path / "report",
                         reference_levels={"rater_age_group": "65+", "rater_race_ethnicity": "White"})  # fmt: skip

    regression = files["consumer_regression"].set_index(["predictor", "level"])
    assert regression.loc[("rater_age_group", "18-24"), "reference_level"] == "65+"
    assert regression.loc[("rater_age_group", "65+"), "note"] == "reference level"
    # One indicator per race/ethnicity category: the "Asian; White" raters count at Asian and at White.
    race = regression.loc["rater_race_ethnicity"]
    assert set(race.index) == {"Asian", "Black", "White"} and set(race["reference_level"]) == {"White"}
    consumers = read_frames(study_csv)["independent"].query("rater_type == 'Consumer'")["rater_race_ethnicity"]
    assert race.loc["White", "n"] == consumers.str.contains("White").sum()
    assert race.loc["Asian", "n"] == (consumers == "Asian; White").sum()
    assert set(regression.loc["rater_gender"].index) == {"Man", "Woman"}
    assert set(regression.index.get_level_values("predictor")) == set(tables.PREDICTORS)


def test_consumer_ratings_keep_every_race_chosen_and_the_rater():
    frame = release_frame("independent", [
        independent_row("q1", MIXED, CONSUMER, "a", "Minor bias", demographics=("25-34", "Man", "Asian;  White;")),
        independent_row("q1", MIXED, CONSUMER, "b", "No bias", demographics=("25-34", "", "Black")),
        independent_row("q1", MIXED, PHYSICIAN, "c", "No bias"),
    ])  # fmt: skip

    data = tables.consumer_ratings(frame)

    assert data.to_dict("records") == [
        {
            "rater_age_group": "25-34",
            "rater_gender": "Man",
            "rater_race_ethnicity": "Asian; White",
            "rater_id": "a",
            "bias": 1,
        }
    ]


def test_the_report_is_deterministic_for_a_seed(study_csv, read_frames, tmp_path):
    frames = read_frames(study_csv)

    first = report_files(frames, tmp_path / "a", seed=3)
    again = report_files(frames, tmp_path / "b", seed=3)
    other = report_files(frames, tmp_path / "c", seed=4)

    for name in first:
        assert first[name].equals(again[name])
    assert not first["rates"]["ci_low"].equals(other["rates"]["ci_low"])
    assert first["rates"]["estimate"].equals(other["rates"]["estimate"])


def test_progress_is_reported_by_keyword_up_to_one(study_csv, read_frames):
    calls: list[tuple[str, float]] = []

    tables.build_report(read_frames(study_csv), progress=lambda *, step, fraction: calls.append((step, fraction)))

    fractions = [fraction for _, fraction in calls]
    assert fractions == sorted(fractions) and fractions[0] == 0.0 and fractions[-1] == 1.0
    assert all(step for step, _ in calls)


def scipy_bca(values: np.ndarray) -> tuple[float, float]:
    """scipy's BCa interval of a mean, the median over a few seeds (one run's bounds move by ~0.005)."""
    runs = [stats.bootstrap((values,), np.mean, method="BCa", n_resamples=1000, random_state=seed).confidence_interval
            for seed in range(9)]  # fmt: skip
    return float(np.median([run.low for run in runs])), float(np.median([run.high for run in runs]))


def test_rate_intervals_agree_with_scipy_bootstrap(tmp_path):
    rng = np.random.default_rng(0)
    biased = rng.random(900) < 0.2
    rows = [independent_row(f"q{i // 3}", MIXED, PHYSICIAN, f"r{i % 3}", "Minor bias" if b else "No bias")
            for i, b in enumerate(biased)]  # fmt: skip
    files = report_files({"independent": release_frame("independent", rows)}, tmp_path)

    pooled = rate(files, dataset=MIXED, aggregation="pooled", outcome="bias_presence")
    low, high = scipy_bca(biased.astype(float))
    assert (pooled["ci_low"], pooled["ci_high"]) == (pytest.approx(low, abs=0.01), pytest.approx(high, abs=0.01))
    any_vote = biased.reshape(-1, 3).any(axis=1).astype(float)  # the cluster bootstrap: items, not ratings
    found = rate(files, dataset=MIXED, aggregation="any", outcome="bias_presence")
    assert (found["n"], found["estimate"]) == (300, any_vote.mean())
    low, high = scipy_bca(any_vote)
    assert (found["ci_low"], found["ci_high"]) == (pytest.approx(low, abs=0.01), pytest.approx(high, abs=0.01))


def test_rate_intervals_are_proportion_cis_with_1000_resamples_from_the_generator_given():
    """`rates` passes every row's k and n, in its row order, to one `proportion_cis` call with 1,000 resamples."""
    biased = np.random.default_rng(1).random(300) < 0.3
    rows = [independent_row(f"q{i // 3}", MIXED, PHYSICIAN, f"r{i % 3}", "Minor bias" if b else "No bias")
            for i, b in enumerate(biased)]  # fmt: skip
    long, _, _ = outcomes.outcome_tables({"independent": release_frame("independent", rows)})

    table = tables.rates(long, rng=np.random.default_rng(8))

    n = table["n"].to_numpy()
    expected = proportion_cis(np.rint(table["estimate"] * n), n, rng=np.random.default_rng(8), resamples=1000)
    found = [(None if pd.isna(low) else low, None if pd.isna(high) else high, note)
             for low, high, note in zip(table["ci_low"], table["ci_high"], table["note"], strict=True)]  # fmt: skip
    assert found == [(interval.low, interval.high, interval.note) for interval in expected]
    assert sum(interval.low is not None for interval in expected) >= 3  # bias presence: pooled, majority, any


def scipy_ratio_bca(k: np.ndarray, n: np.ndarray) -> tuple[float, float]:
    """scipy's BCa interval of sum k / sum n over pairs (k_j, n_j) resampled together, the median over a few seeds."""
    runs = [stats.bootstrap((k, n), lambda k, n, axis=-1: k.sum(axis) / n.sum(axis), paired=True, vectorized=True,
                            method="BCa", n_resamples=1000, rng=np.random.default_rng(seed)).confidence_interval
            for seed in range(9)]  # fmt: skip
    return float(np.median([run.low for run in runs])), float(np.median([run.high for run in runs]))


def test_counterfactual_pairs_from_answers_resample_pairs_not_rating_combinations(tmp_path):
    """80 pairs, each answer rated by 3 physicians with its own bias probability. Pooled, the notebook's n counts
    every rating combination (720) and the estimate is k / n over them, but the interval resamples pairs (their 9
    combinations share 6 ratings): scipy's paired BCa over the pairs' (k, n), and far wider than scipy's BCa over
    the 720 combinations as independent 0/1 values (the notebook's interval). Majority/any: pairs as before."""
    rng = np.random.default_rng(4)
    p = rng.beta(0.5, 1.5, size=(80, 2))
    biased = rng.random((80, 2, 3)) < p[..., None]
    independent = [independent_row(f"q{pair}-{side}", CC_MANUAL, PHYSICIAN, f"r{rater}",
                                   "Minor bias" if biased[pair, side, rater] else "No bias")
                   for pair in range(80) for side in range(2) for rater in range(3)]  # fmt: skip
    counterfactual = [counterfactual_row(f"q{pair}-0", f"q{pair}-1", CC_MANUAL, PHYSICIAN, "r0") for pair in range(80)]
    frames = {"independent": release_frame("independent", independent),
              "counterfactual": release_frame("counterfactual", counterfactual)}  # fmt: skip
    files = report_files(frames, tmp_path)

    k1, k2 = biased.sum(axis=2).T
    k = k1 * (3 - k2) + (3 - k1) * k2
    pooled = rate(files, dataset=CC_MANUAL, aggregation="pooled", outcome="one_answer_biased")
    assert (pooled["n"], pooled["estimate"], pooled["resampled"]) == (720, k.sum() / 720, "pairs")
    low, high = scipy_ratio_bca(k, np.full(80, 9))
    assert (pooled["ci_low"], pooled["ci_high"]) == (pytest.approx(low, abs=0.015), pytest.approx(high, abs=0.015))
    low, high = scipy_bca(np.r_[np.ones(k.sum()), np.zeros(720 - k.sum())])
    assert pooled["ci_high"] - pooled["ci_low"] > 1.5 * (high - low)

    majority = rate(files, dataset=CC_MANUAL, aggregation="majority", outcome="one_answer_biased")
    votes = ((k1 >= 2) != (k2 >= 2)).astype(float)
    assert (majority["n"], majority["estimate"], majority["resampled"]) == (80, votes.mean(), "pairs")
    low, high = scipy_bca(votes)
    assert (majority["ci_low"], majority["ci_high"]) == (pytest.approx(low, abs=0.015), pytest.approx(high, abs=0.015))
    own = files["rates"][files["rates"]["rubric"] == "independent"]
    assert set(zip(own["aggregation"], own["resampled"], strict=True)) == {
        ("pooled", "ratings"), ("majority", "items"), ("any", "items")
    }  # fmt: skip


def test_outcome_names_and_equitymedqa_sets_match_the_release_format():
    assert outcomes.DIMENSION_COLUMNS == release.DIMENSION_COLUMNS
    assert list(release.BIAS_PRESENCE.values()) == outcomes.BIAS_LEVELS
    assert list(release.IDEAL_ANSWERS_DIFFER.values()) == outcomes.IDEAL_ANSWERS_DIFFER
    assert list(release.ANSWERS_DIFFER_HOW.values()) == outcomes.ANSWERS_DIFFER_HOW
    assert outcomes.SOURCE_SUFFIX == release.SOURCE_SUFFIX
    spec = (Path(release.__file__).parents[2] / "shared" / "spec" / "ratings-export.md").read_text()
    assert all(f"`{name}`" in spec for name in outcomes.EQUITYMEDQA_SETS)
