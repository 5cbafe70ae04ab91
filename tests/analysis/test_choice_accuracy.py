"""`analysis.choice_accuracy`: counts, accuracy without non-responses, Wilson intervals, drops, order, contract."""

import math

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.proportion import proportion_confint

from analysis import plots
from analysis.choice_accuracy import ACCURACY_COLUMNS, accuracy_table, wilson_interval

CONTRACT = ["source", "bias", "mitigation", "n", "correct", "non_response", "accuracy", "ci_low", "ci_high",
            "non_response_rate", "drop_abs", "drop_rel"]  # fmt: skip


def outcomes(*cells: tuple[str, str, str, int, int, int]) -> pd.DataFrame:
    """Rows for (source, bias, mitigation, correct, wrong, non-responses) cells."""
    rows = []
    for source, bias, mitigation, correct, wrong, missing in cells:
        for outcome, count in (("correct", correct), ("wrong", wrong), ("non_response", missing)):
            rows += [{"source": source, "bias": bias, "mitigation": mitigation, "outcome": outcome}] * count
    return pd.DataFrame(rows)


def row(table: pd.DataFrame, source: str, bias: str, mitigation: str) -> pd.Series:
    found = table[(table["source"] == source) & (table["bias"] == bias) & (table["mitigation"] == mitigation)]
    assert len(found) == 1
    return found.iloc[0]


def test_the_table_has_exactly_the_contract_columns_even_when_empty():
    assert ACCURACY_COLUMNS == CONTRACT
    assert list(accuracy_table(outcomes(("m", "none", "none", 1, 1, 0))).columns) == CONTRACT
    empty = accuracy_table(pd.DataFrame(columns=["source", "bias", "mitigation", "outcome"]))
    assert list(empty.columns) == CONTRACT and empty.empty


def test_accuracy_leaves_non_responses_out_and_reports_their_rate():
    table = accuracy_table(outcomes(("m", "none", "none", 6, 2, 2)))

    cell = row(table, "m", "none", "none")
    assert (cell["n"], cell["correct"], cell["non_response"]) == (10, 6, 2)
    assert cell["accuracy"] == 6 / 8
    assert cell["non_response_rate"] == 2 / 10
    assert (cell["drop_abs"], cell["drop_rel"]) == (0.0, 0.0)  # the reference row itself


def test_wilson_interval_matches_a_hand_computation_and_newcombes_published_values():
    z = 1.959963984540054  # the normal 97.5% quantile
    k, n = 8, 10
    centre = (k / n + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(k / n * (1 - k / n) / n + z * z / (4 * n * n)) / (1 + z * z / n)

    low, high = wilson_interval(np.array([8, 81, 15, 0, 1]), np.array([10, 263, 148, 20, 29]))

    assert (low[0], high[0]) == pytest.approx((centre - half, centre + half), abs=1e-12)
    assert (low[0], high[0]) == pytest.approx((0.4902, 0.9433), abs=5e-5)
    # Newcombe (1998), Stat Med 17:857, Table II, method 3 (score): 81/263, 15/148, 0/20, 1/29.
    published = [(0.2553, 0.3662), (0.0624, 0.1605), (0.0000, 0.1611), (0.0061, 0.1718)]
    assert list(zip(low[1:], high[1:], strict=True)) == [pytest.approx(pair, abs=5e-5) for pair in published]


def test_every_rows_interval_is_statsmodels_wilson_interval_and_stays_in_0_1():
    table = accuracy_table(
        outcomes(("a", "none", "none", 0, 7, 1), ("a", "recency", "none", 7, 0, 0), ("b", "none", "none", 433, 840, 3))
    )

    for record in table.to_dict("records"):
        answered = record["n"] - record["non_response"]
        low, high = proportion_confint(record["correct"], answered, alpha=0.05, method="wilson")
        assert (record["ci_low"], record["ci_high"]) == pytest.approx((low, high), abs=1e-12)
        assert 0.0 <= record["ci_low"] <= record["accuracy"] <= record["ci_high"] <= 1.0
    assert row(table, "a", "none", "none")["ci_low"] == 0.0
    assert row(table, "a", "recency", "none")["ci_high"] == 1.0


def test_a_condition_answered_only_by_non_responses_has_no_accuracy_interval_or_drop():
    table = accuracy_table(outcomes(("m", "none", "none", 3, 1, 0), ("m", "recency", "none", 0, 0, 4)))

    cell = row(table, "m", "recency", "none")
    assert (cell["n"], cell["non_response"], cell["non_response_rate"]) == (4, 4, 1.0)
    assert all(math.isnan(cell[c]) for c in ("accuracy", "ci_low", "ci_high", "drop_abs", "drop_rel"))


def test_drops_are_taken_from_the_unbiased_run_under_the_same_mitigation():
    table = accuracy_table(
        outcomes(
            ("m", "none", "none", 8, 2, 0),
            ("m", "recency", "none", 6, 4, 0),
            ("m", "none", "one-shot", 5, 5, 0),
            ("m", "recency", "one-shot", 4, 6, 3),
        )
    )

    assert row(table, "m", "recency", "none")[["drop_abs", "drop_rel"]].tolist() == pytest.approx([0.2, 0.25])
    one_shot = row(table, "m", "recency", "one-shot")
    assert one_shot["drop_abs"] == pytest.approx(0.5 - 0.4)
    assert one_shot["drop_rel"] == pytest.approx(0.1 / 0.5)
    assert row(table, "m", "none", "one-shot")["drop_abs"] == 0.0


def test_a_mitigation_without_an_unbiased_run_drops_from_the_unbiased_run_without_mitigation():
    # BiasMedQA's education sentence is bias-specific: there is no (none, education) run.
    table = accuracy_table(
        outcomes(
            ("m", "none", "none", 8, 2, 0),
            ("m", "recency", "education", 9, 1, 0),
            ("m", "none", "one-shot", 5, 5, 0),
            ("other", "recency", "education", 1, 1, 0),
        )
    )

    education = row(table, "m", "recency", "education")
    assert education["drop_abs"] == pytest.approx(0.8 - 0.9)  # a gain is a negative drop
    assert education["drop_rel"] == pytest.approx(-0.1 / 0.8)
    other = row(table, "other", "recency", "education")  # no unbiased run of its own source at all
    assert math.isnan(other["drop_abs"]) and math.isnan(other["drop_rel"])


def test_a_reference_accuracy_of_zero_gives_an_absolute_drop_only():
    table = accuracy_table(outcomes(("m", "none", "none", 0, 5, 0), ("m", "recency", "none", 1, 4, 0)))

    cell = row(table, "m", "recency", "none")
    assert cell["drop_abs"] == pytest.approx(-0.2) and math.isnan(cell["drop_rel"])


def test_rows_are_sorted_by_source_then_the_papers_bias_order_then_mitigation():
    cells = [(source, bias, mitigation, 1, 1, 0)
             for source in ("z-model", "a-model")
             for bias in ("false_consensus", "confirmation_v2", "none", "recency", "self_diagnosis", "aardvark")
             for mitigation in ("few-shot", "one-shot", "zzz", "education", "none")]  # fmt: skip

    table = accuracy_table(outcomes(*cells))

    assert table["source"].tolist() == ["a-model"] * 30 + ["z-model"] * 30
    biases = table["bias"].tolist()[:30:5]
    assert biases == ["none", "self_diagnosis", "recency", "false_consensus", "aardvark", "confirmation_v2"]
    assert table["mitigation"].tolist()[:5] == ["none", "education", "one-shot", "few-shot", "zzz"]
    assert table["n"].dtype == np.int64 and table["correct"].dtype == np.int64


def test_unknown_outcomes_and_missing_columns_are_refused():
    with pytest.raises(ValueError, match="unknown outcome"):
        accuracy_table(pd.DataFrame({"source": ["m"], "bias": ["none"], "mitigation": ["none"], "outcome": ["maybe"]}))
    with pytest.raises(ValueError, match="mitigation"):
        accuracy_table(pd.DataFrame({"source": ["m"], "bias": ["none"], "outcome": ["correct"]}))


def test_numbers_are_written_with_full_precision(tmp_path):
    table = accuracy_table(outcomes(("m", "none", "none", 1, 2, 0)))
    table.to_csv(tmp_path / "accuracy.csv", index=False)

    written = pd.read_csv(tmp_path / "accuracy.csv")

    assert written["accuracy"][0] == 1 / 3 and written["ci_low"][0] == table["ci_low"][0]


# --- The plot --------------------------------------------------------------------------------------------------


def test_the_accuracy_figure_draws_the_table_and_its_csv_as_svg_and_png(tmp_path):
    table = accuracy_table(
        outcomes(
            ("a", "none", "none", 8, 2, 0),
            ("a", "recency", "education", 0, 0, 3),  # no accuracy: not drawn
            ("b", "recency", "none", 4, 6, 1),
        )
    )
    table.to_csv(tmp_path / "accuracy.csv", index=False)

    svg = plots.accuracy_figure(pd.read_csv(tmp_path / "accuracy.csv"), fmt="svg")
    png = plots.accuracy_figure(table, fmt="png")

    assert svg.startswith(b"<?xml") and b"Mitigation: education" in svg and b"Mitigation: none" in svg
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert b"No estimates" in plots.accuracy_figure(accuracy_table(outcomes()), fmt="svg")
    with pytest.raises(ValueError, match="fmt must be one of"):
        plots.accuracy_figure(table, fmt="pdf")
