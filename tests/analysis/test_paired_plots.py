"""`analysis.paired_plots`: the forest (Figure 3) and heat (Figure 2a) figures render as SVG and PNG, from the tables
as built and read back from CSV, with NaN cells and with nothing at all; PNGs are kept for a look."""

import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis import paired_plots
from analysis.paired import group_means, paired_tests
from tests.analysis.qpain_outputs import LEVEL_ORDER, deepseek_values
from tests.analysis.test_plots import PNG_MAGIC, is_svg

SCREENSHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"


@pytest.fixture(scope="module")
def values(shared_datasets) -> pd.DataFrame:
    """deepseek-32k's P(No), and two made-up sources beside it (scaled copies), so panels repeat."""
    real = deepseek_values(shared_datasets)
    return pd.concat(
        [real, *(real.assign(source=name, value=real["value"] * k) for name, k in (("gpt-3", 1.1), ("gpt-2", 0.9)))]
    )


def read_back(table: pd.DataFrame) -> pd.DataFrame:
    return pd.read_csv(io.StringIO(table.to_csv(index=False)))


def test_the_forest_and_heat_figures_of_one_source_are_valid_and_kept_for_a_look(shared_datasets):
    values = deepseek_values(shared_datasets)
    tests, means = paired_tests(values, level_order=LEVEL_ORDER), group_means(values, level_order=LEVEL_ORDER)

    forest, heat = paired_plots.forest_figure(tests, fmt="png"), paired_plots.heat_figure(means, fmt="png")

    assert forest.startswith(PNG_MAGIC) and heat.startswith(PNG_MAGIC)
    assert is_svg(paired_plots.forest_figure(tests)) and is_svg(paired_plots.heat_figure(means))
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    (SCREENSHOTS / "qpain_forest.png").write_bytes(forest)
    (SCREENSHOTS / "qpain_heat.png").write_bytes(heat)


@pytest.mark.parametrize("fmt", ["svg", "png"])
def test_figures_of_several_sources_draw_from_the_csv_files(values, fmt):
    tests = read_back(paired_tests(values, level_order=LEVEL_ORDER, correction="holm"))
    means = read_back(group_means(values, level_order=LEVEL_ORDER))

    for figure in (paired_plots.forest_figure(tests, fmt=fmt), paired_plots.heat_figure(means, fmt=fmt)):
        assert is_svg(figure) if fmt == "svg" else figure.startswith(PNG_MAGIC)
    one = paired_plots.forest_figure(tests, fmt=fmt, source="gpt-2", outcome="p_no")
    assert is_svg(one) if fmt == "svg" else one.startswith(PNG_MAGIC)


def test_pairs_and_cells_without_estimates_still_draw(values):
    thin = values[values["block"].isin(["acute_cancer-00", "post_op-03"])].copy()  # 2 blocks: some pairs n < 2
    thin.loc[thin["level"] == "White man", "value"] = np.nan  # a level with no value at all: not in the pairs
    # Asian woman only in the first block, Black woman only in the second: their pair has no block.
    thin.loc[(thin["level"] == "Asian woman") & (thin["block"] == "post_op-03"), "value"] = np.nan
    thin.loc[(thin["level"] == "Black woman") & (thin["block"] == "acute_cancer-00"), "value"] = np.nan
    tests = paired_tests(thin, level_order=LEVEL_ORDER)
    assert tests["ci_low"].isna().any() and tests["mean_diff"].isna().any() and "White man" not in set(tests["level_b"])
    means = group_means(thin, level_order=LEVEL_ORDER)
    assert means["ci_low"].isna().any()

    assert paired_plots.forest_figure(tests, fmt="png").startswith(PNG_MAGIC)
    assert is_svg(paired_plots.heat_figure(means))


def test_empty_tables_draw_a_figure_that_says_so():
    empty_tests = paired_tests(
        pd.DataFrame(columns=["study", "outcome", "source", "factor", "level", "block", "value"])
    )
    empty_means = group_means(
        pd.DataFrame(columns=["study", "outcome", "source", "factor", "level", "context", "value"])
    )

    assert paired_plots.forest_figure(empty_tests, fmt="png").startswith(PNG_MAGIC)
    assert is_svg(paired_plots.heat_figure(empty_means))
    assert is_svg(paired_plots.forest_figure(read_back(empty_tests), outcome="no_such_outcome"))


def test_panels_are_source_by_outcome_and_the_title_says_when_some_are_left_out(values):
    many = pd.concat([values.assign(outcome=o, source=values["source"] + s) for o in ("p_no", "p_low") for s in "ab"])
    table = paired_tests(many, level_order=LEVEL_ORDER)

    keys, titles, common = paired_plots._panels(table, paired_plots.MAX_FOREST_PANELS)

    assert len(keys) == 6 and common == "Q-Pain, race x gender (first 6 of 12 panels)"
    assert titles[0] == "deepseek-32ka · p_low"
    assert paired_plots.forest_figure(table, fmt="png").startswith(PNG_MAGIC)


def test_other_formats_are_refused(values):
    with pytest.raises(ValueError, match="svg, png"):
        paired_plots.forest_figure(paired_tests(values), fmt="pdf")
    with pytest.raises(ValueError, match="svg, png"):
        paired_plots.heat_figure(group_means(values), fmt="jpg")
