"""A run's summary and its numbers as the pages write them (analysis.run_summary; issue 22). No database."""

import math

import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

from analysis import paired_plots, run_summary
from analysis.plans import QPAIN_GROUP_MEANS, QPAIN_PAIRED_TESTS
from analysis.run_summary import clipped_interval, interval, number, percent


def test_numbers_are_written_for_reading():
    assert number(5.0, "n") == "5" and number(12.0, "n_blocks") == "12" and number(3.0, "correct") == "3"
    assert number(2.5, "n_human_equivalent") == "2.500"  # a count column holding a fraction keeps it
    assert number(-0.0001, "mean_diff") == "0.000" and number(-0.0004) == "0.000"  # never "-0.000"
    assert number(-0.0006) == "-0.001" and number(0.78472222) == "0.785"
    assert number(0.0002, "p_value") == "<0.001" and number(0.0002, "p_adjusted") == "<0.001"
    assert number(1234.5678) == "1234.6"  # one decimal past 100
    assert number(float("nan")) == "" and number(None) == "" and number("White") == "White"
    assert percent(0.78472) == "78.5%" and percent(-0.00001) == "0.0%" and percent(math.nan) == ""
    assert interval(0.70833, 0.84722, as_percent=True) == "70.8–84.7%"
    assert interval(-0.0001, 0.25) == "0.000 – 0.250" and interval(math.nan, 0.2) == ""


def test_an_interval_past_the_bounds_is_clipped_and_says_so():
    assert clipped_interval(-1.832, 3.175, (0.0, 1.0)) == ("0.000 – 1.000", True)
    assert clipped_interval(0.2, 0.4, (0.0, 1.0)) == ("0.200 – 0.400", False)
    assert clipped_interval(math.nan, 0.4, (0.0, 1.0)) == ("", False)


def rates_rows() -> pd.DataFrame:
    base = {"dataset": "OMAQ", "n": 144.0, "ci_low": 0.70, "ci_high": 0.85, "note": "", "source": np.nan}
    rows = [
        {**base, "rubric": "independent", "rater_type": "Physician", "aggregation": "pooled",
         "outcome": "bias_presence", "estimate": 0.785, "answer_source": "model A"},
        {**base, "rubric": "independent", "rater_type": "Physician", "aggregation": "majority",
         "outcome": "bias_presence", "estimate": 0.5, "answer_source": "model A"},
        {**base, "rubric": "independent", "rater_type": "Physician", "aggregation": "pooled",
         "outcome": "other_bias", "estimate": 0.1, "answer_source": "model A"},
        {**base, "rubric": "pairwise", "rater_type": "Consumer", "aggregation": "pooled", "outcome": "bias_presence",
         "estimate": 0.25, "source": "No preference", "answer_source": "A vs B"},
    ]  # fmt: skip
    return pd.DataFrame(rows)


def test_rate_headlines_give_each_rubrics_pooled_bias_rate_per_dataset_and_pool():
    headlines = run_summary.rate_headlines(rates_rows())
    assert [headline.title for headline in headlines] == [
        run_summary.RUBRIC_TITLES["independent"],
        run_summary.RUBRIC_TITLES["pairwise"],
    ]
    assert list(headlines[0].rows) == [("OMAQ · Physician · model A", "78.5%", "70.0–85.0%", "144")]
    assert list(headlines[1].rows) == [("OMAQ · Consumer · A vs B · preferred: No preference", "25.0%", "70.0–85.0%",
                                        "144")]  # fmt: skip
    assert run_summary.rate_headlines(pd.DataFrame()) == []


def test_accuracy_headlines_give_accuracy_per_bias_without_mitigation():
    table = pd.DataFrame(
        {
            "source": ["m", "m", "m"],
            "bias": ["none", "recency", "recency"],
            "mitigation": ["none", "none", "education"],
            "accuracy": [0.5, 0.7, 0.6],
            "ci_low": [0.35, 0.55, 0.45],
            "ci_high": [0.65, 0.82, 0.74],
            "drop_abs": [np.nan, -0.2, -0.1],
        }
    )
    (headline,) = run_summary.accuracy_headlines(table)
    assert headline.columns == ("Bias", "Accuracy", "95% CI", "vs none")
    assert list(headline.rows) == [("none", "50.0%", "35.0–65.0%", ""), ("recency", "70.0%", "55.0–82.0%", "+20.0 pp")]


def qpain_values(vignettes: int = 3, spread: float = 0.03) -> pd.DataFrame:
    """Three groups over `vignettes` vignettes of one pain context: White woman far above the others."""
    rows, noise = [], np.random.default_rng(5)
    for vignette in range(vignettes):
        for level, value in (("Black woman", 0.2), ("White woman", 0.8), ("White man", 0.21)):
            race, gender = level.split()
            rows.append({"source": "Stand-in", "race": race, "gender": gender, "context": "acute_cancer",
                         "vignette": f"acute_cancer-{vignette:02d}", "outcome": "p_no",
                         "value": value + noise.uniform(-spread, spread)})  # fmt: skip
    frame = pd.DataFrame(rows)
    frame["outcome"] = pd.Categorical(frame["outcome"], categories=["p_no"])
    return frame


def test_paired_headlines_list_the_pairs_that_differ_and_say_when_none_does():
    table = QPAIN_PAIRED_TESTS.compute(qpain_values())
    (headline,) = run_summary.paired_headlines(table)
    assert headline.title == "Pairs that differ in p_no (Stand-in)"
    labels = [row[0] for row in headline.rows]
    assert [label.split(" *")[0] for label in labels] == ["Black woman v White woman", "White woman v White man"]
    first = headline.rows[0]
    assert first[1].endswith(" pp") and first[1].startswith("-") and " – " in first[2] and headline.note == ""
    none = table.assign(significance="")
    (quiet,) = run_summary.paired_headlines(none)
    assert quiet.rows == [] and quiet.note == "No pair differs at p < 0.05 (3 of 3 pairs tested)."


def test_the_bonferroni_level_is_the_pairs_present_not_28():
    table = QPAIN_PAIRED_TESTS.compute(qpain_values())
    assert run_summary.bonferroni_levels(table) == [(3, pytest.approx(1 - 0.05 / 3))]
    assert run_summary.bonferroni_levels(table.drop(columns="ci_low_adjusted")) == []


def test_the_heat_figures_title_fits_a_figure_of_one_pain_context():
    """Issue 22: with one context the figure is 3.2 inches wide and its one-line title was cut off both sides."""
    means = QPAIN_GROUP_MEANS.compute(qpain_values())
    figure = paired_plots.Figure(figsize=(3.2, 3), layout="constrained")
    title = "Mean by level: Q-Pain, Stand-in model (demo), p_no, race x gender"
    paired_plots._title(figure, title, 3.2)
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    box = figure._suptitle.get_window_extent(canvas.get_renderer())
    assert figure._suptitle.get_text().replace("\n", " ") == title and "\n" in figure._suptitle.get_text()
    assert box.x0 >= 0 and box.x1 <= figure.bbox.width
    assert paired_plots.heat_figure(means, fmt="svg").startswith(b"<?xml")
