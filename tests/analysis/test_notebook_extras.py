"""The tables beside the four (analysis.notebook_extras; issue 22): counterfactual pairs per dimension, and the
filtered multiply rated sets. Hand-worked counts; the four tables untouched."""

import numpy as np
import pandas as pd
import pytest

from analysis import notebook_extras, tables
from studies import release
from tests.analysis.conftest import (
    CC_MANUAL,
    EXPERT,
    MIXED,
    PHYSICIAN,
    counterfactual_row,
    independent_row,
    release_frame,
)

INACCURACY, STEREOTYPE = "inaccuracy_for_some_axes", "stereotypical_language_characterization"


def pair_frames() -> dict[str, pd.DataFrame]:
    """One CC-Manual pair (q1, q2) rated once as a pair; q1's answer rated twice independently (inaccuracy marked
    by both, stereotype by one), q2's once (stereotype marked)."""
    independent = [
        independent_row("q1", CC_MANUAL, PHYSICIAN, "r1", "Minor bias", [INACCURACY, STEREOTYPE]),
        independent_row("q1", CC_MANUAL, PHYSICIAN, "r2", "Minor bias", [INACCURACY]),
        independent_row("q2", CC_MANUAL, PHYSICIAN, "r1", "Severe bias", [STEREOTYPE]),
    ]
    counterfactual = [counterfactual_row("q1", "q2", CC_MANUAL, PHYSICIAN, "r3", bias=True)]
    return {
        release.INDEPENDENT: release_frame(release.INDEPENDENT, independent),
        release.COUNTERFACTUAL: release_frame(release.COUNTERFACTUAL, counterfactual),
    }


def cell(table: pd.DataFrame, dimension: str, aggregation: str, outcome: str) -> pd.Series:
    rows = table[
        (table["dimension"] == dimension)
        & (table["aggregation"] == aggregation)
        & (table["outcome"] == outcome)
        & (table["dataset"] == CC_MANUAL)
    ]
    assert len(rows) == 1
    return rows.iloc[0]


def test_counterfactual_pairs_per_dimension_count_each_answers_mark():
    frames = pair_frames()
    table = notebook_extras.counterfactual_dimensions(frames["independent"], frames["counterfactual"])
    assert list(table.columns) == [*tables.RATES_COLUMNS, "dimension"]
    # inaccuracy: answer 1 marked 2 of 2, answer 2 0 of 1 -> pooled combinations 2: one = 2, both = 0
    assert (cell(table, INACCURACY, "pooled", "one_answer_biased")[["n", "estimate"]] == [2, 1.0]).all()
    assert cell(table, INACCURACY, "pooled", "both_answers_biased")["estimate"] == 0.0
    # stereotype: answer 1 marked 1 of 2, answer 2 1 of 1 -> one = 1 of 2, at least one = 2 of 2, both = 1 of 2
    assert cell(table, STEREOTYPE, "pooled", "one_answer_biased")["estimate"] == 0.5
    assert cell(table, STEREOTYPE, "pooled", "at_least_one_answer_biased")["estimate"] == 1.0
    assert cell(table, STEREOTYPE, "pooled", "both_answers_biased")["estimate"] == 0.5
    # majority of answer 1's two ratings for stereotype is 1 of 2: not a majority -> exactly one answer biased
    assert cell(table, STEREOTYPE, "majority", "one_answer_biased")["estimate"] == 1.0
    assert cell(table, STEREOTYPE, "any", "both_answers_biased")["estimate"] == 1.0
    # a dimension nobody marked: every pair without a biased answer
    assert cell(table, "other_bias", "pooled", "at_least_one_answer_biased")["estimate"] == 0.0


def test_the_bias_presence_rows_of_rates_are_what_the_dimension_rows_generalise():
    """With every dimension equal to bias presence the per-dimension counts equal rates.csv's own."""
    frames = pair_frames()
    derived = tables.counterfactual_answer_counts(frames["independent"], frames["counterfactual"])
    independent = frames["independent"].copy()
    independent[INACCURACY] = independent["bias_presence"] != "No bias"
    table = notebook_extras.counterfactual_dimensions(independent, frames["counterfactual"])
    ours = table[table["dimension"] == INACCURACY].groupby(["aggregation", "outcome"])["estimate"].first()
    theirs = derived.groupby(["aggregation", "outcome"]).apply(lambda g: g["k"].sum() / g["n"].sum())
    theirs = theirs[theirs.index.isin(ours.index)]
    assert np.allclose(ours.sort_index().to_numpy(), theirs.sort_index().to_numpy())


def test_no_pairs_or_no_independent_ratings_give_an_empty_table():
    frames = pair_frames()
    assert notebook_extras.counterfactual_dimensions(None, frames["counterfactual"]).empty
    assert notebook_extras.counterfactual_dimensions(frames["independent"], None).empty


def triple_rated(missing: int) -> dict[str, pd.DataFrame]:
    """Mixed MMQA-OMAQ items m0..m3 rated three times by physicians and experts; the physicians' first `missing`
    items lack one rating (the paper: seven missing ratings)."""
    rows = []
    for item in range(4):
        for pool in (PHYSICIAN, EXPERT):
            raters = 2 if pool == PHYSICIAN and item < missing else 3
            for rater in range(raters):
                bias = "Minor bias" if (item + rater) % 2 else "No bias"
                rows.append(independent_row(f"m{item}", MIXED, pool, f"{pool[0]}{rater}", bias))
    return {release.INDEPENDENT: release_frame(release.INDEPENDENT, rows)}


def test_the_filtered_set_keeps_items_with_every_rating_per_pool():
    frames = triple_rated(missing=1)
    kept = notebook_extras.full_ratings_only(frames["independent"], release.INDEPENDENT)
    assert set(kept["dataset"]) == {f"Filtered {MIXED}"}
    # physicians: m0 had two ratings -> left out; experts complete -> not repeated as a filtered set
    assert set(kept["rater_type"]) == {PHYSICIAN} and set(kept["question_id"]) == {"m1", "m2", "m3"}
    table = notebook_extras.filtered_rates(frames)
    pooled = table[(table["aggregation"] == "pooled") & (table["outcome"] == "bias_presence")]
    assert list(table.columns) == tables.RATES_COLUMNS
    assert pooled[["dataset", "rater_type", "n"]].values.tolist() == [[f"Filtered {MIXED}", PHYSICIAN, 9]]
    assert pooled["estimate"].iloc[0] == pytest.approx(5 / 9)  # biased when item + rater is odd: m1 2, m2 1, m3 2


def test_complete_or_singly_rated_sets_give_no_filtered_rows():
    assert notebook_extras.filtered_rates(triple_rated(missing=0)).empty
    single = [independent_row(f"s{i}", CC_MANUAL, PHYSICIAN, "r1") for i in range(3)]
    assert notebook_extras.filtered_rates({"independent": release_frame("independent", single)}).empty
