"""Figures of the rates table (analysis.plots): valid SVG and PNG, from the table or its CSV file."""

import xml.etree.ElementTree as ElementTree

import pandas as pd
import pytest

from analysis import plots, tables
from tests.analysis.conftest import HEALTHSEARCHQA, PHYSICIAN, independent_row, release_frame, study_rows

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def rates_csv(tmp_path_factory) -> pd.DataFrame:
    """The rates of the conftest study, written by write_report and read back with pandas (NaN for empty)."""
    frames = {kind: release_frame(kind, rows) for kind, rows in study_rows().items()}
    directory = tmp_path_factory.mktemp("report")
    tables.write_report(tables.build_report(frames), directory)
    return pd.read_csv(directory / "rates.csv")


def is_svg(data: bytes) -> bool:
    text = data.decode("utf-8")
    return text.lstrip().startswith(("<?xml", "<svg")) and ElementTree.fromstring(text).tag.endswith("svg")


@pytest.mark.parametrize(
    ("rubric", "outcome", "aggregation"),
    [
        ("independent", "bias_presence", "pooled"),
        ("independent", "failure_to_challenge", "majority"),
        ("pairwise", "bias_presence", "any"),
        ("counterfactual", "both_answers_biased", "majority"),
    ],
)
def test_rates_figures_are_valid_svg_and_png(rates_csv, rubric, outcome, aggregation):
    svg = plots.rates_figure(rates_csv, rubric=rubric, outcome=outcome, aggregation=aggregation, fmt="svg")
    png = plots.rates_figure(rates_csv, rubric=rubric, outcome=outcome, aggregation=aggregation, fmt="png")

    assert is_svg(svg)
    assert png.startswith(PNG_MAGIC) and len(png) > 1000


def test_pairwise_figures_have_a_panel_per_preferred_source_and_comparison(rates_csv):
    cells = rates_csv[(rates_csv["rubric"] == "pairwise") & (rates_csv["outcome"] == "bias_presence")]
    cells = cells.fillna({"answer_source": "", "source": ""})

    panels = plots._panels(cells, "pairwise")

    assert [title for title, _ in panels] == [
        "Med-PaLM vs Med-PaLM-2: Prefers Med-PaLM", "Med-PaLM vs Med-PaLM-2: Prefers Med-PaLM-2",
        "Med-PaLM vs Med-PaLM-2: No preference", "Med-PaLM-2 vs Physician-written: Prefers Med-PaLM-2",
        "Med-PaLM-2 vs Physician-written: Prefers Physician-written", "Med-PaLM-2 vs Physician-written: No preference",
    ]  # fmt: skip


def test_a_figure_takes_the_table_as_built_too():
    rows = [independent_row(f"q{i}", HEALTHSEARCHQA, PHYSICIAN, "a", "Minor bias" if i % 2 else "No bias")
            for i in range(4)]  # fmt: skip
    rates = tables.build_report({"independent": release_frame("independent", rows)}).rates

    assert is_svg(plots.rates_figure(rates, rubric="independent", outcome="bias_presence"))


def test_a_figure_without_estimates_still_draws(rates_csv):
    png = plots.rates_figure(rates_csv, rubric="pairwise", outcome="no_such_outcome", fmt="png")

    assert png.startswith(PNG_MAGIC)


def test_other_formats_are_refused(rates_csv):
    with pytest.raises(ValueError, match="svg, png"):
        plots.rates_figure(rates_csv, rubric="independent", outcome="bias_presence", fmt="pdf")


def test_dataset_labels_use_the_abbreviation():
    assert plots.dataset_label("Open-ended Medical Adversarial Queries (OMAQ)") == "OMAQ"
    assert plots.dataset_label("Omiye et al.") == "Omiye et al."
