"""Q-Pain's statistics from the released deepseek-32k outputs, through the README's commands: `import_qpain_outputs`
then `analyze --out DIR`. Every mean and each of the 28 paired tests must equal a direct scipy computation over the
same vignette blocks, read straight from the file (tests/analysis/qpain_outputs.py), and the dropped blocks must be
listed."""

import io
import itertools
import math

import numpy as np
import pandas as pd
import pytest
from django.core.management import call_command
from scipy import stats

from analysis.paired import CONTRACT_COLUMNS
from scoring.models import Score
from tests.analysis.qpain_outputs import LEVEL_ORDER, deepseek_values

pytestmark = pytest.mark.django_db

OUTPUTS = "qpain/model_outputs/deepseek-32k_qpain_outputs.jsonl"


@pytest.fixture
def written(shared_datasets, tmp_path):
    out = io.StringIO()
    call_command("import_qpain_outputs", str(shared_datasets / OUTPUTS), stdout=out)
    call_command("analyze", out=tmp_path, plan=["qpain-paired-tests", "qpain-group-means"], stdout=io.StringIO())
    return tmp_path


def _direct(shared_datasets) -> pd.DataFrame:
    """Blocks x levels of P(No) straight from the file (NaN where a record has none)."""
    values = deepseek_values(shared_datasets)
    return values.pivot(index="block", columns="level", values="value")


def test_the_28_paired_tests_equal_scipy_over_the_same_vignettes(shared_datasets, written):
    table = pd.read_csv(written / "paired_tests.csv")
    assert list(table.columns[: len(CONTRACT_COLUMNS)]) == CONTRACT_COLUMNS
    p_no = table[table["outcome"] == "p_no"].reset_index(drop=True)
    assert len(p_no) == 28 and list(table["outcome"][:28]) == ["p_no"] * 28  # the paper's outcome comes first
    assert set(p_no["study"]) == {"Q-Pain"} and set(p_no["factor"]) == {"race x gender"}
    assert set(p_no["correction"]) == {"bonferroni"}
    assert list(zip(p_no["level_a"], p_no["level_b"], strict=True)) == list(itertools.combinations(LEVEL_ORDER, 2))
    grid = _direct(shared_datasets)
    for row in p_no.itertuples():
        both = grid[[row.level_a, row.level_b]].dropna()
        a, b = both[row.level_a].to_numpy(), both[row.level_b].to_numpy()
        n = len(both)
        test = stats.ttest_rel(a, b)
        diff = a - b
        scale = diff.std(ddof=1) / math.sqrt(n)
        low, high = stats.t.interval(0.95, n - 1, loc=diff.mean(), scale=scale)
        low_b, high_b = stats.t.interval(1 - 0.05 / 28, n - 1, loc=diff.mean(), scale=scale)
        assert row.n_blocks == n
        assert row.mean_a == pytest.approx(a.mean(), abs=1e-12)
        assert row.mean_b == pytest.approx(b.mean(), abs=1e-12)
        assert row.mean_diff == pytest.approx(diff.mean(), abs=1e-12)
        assert row.t == pytest.approx(test.statistic, rel=1e-9)
        assert row.p_value == pytest.approx(test.pvalue, rel=1e-9)
        assert row.p_adjusted == pytest.approx(min(1.0, 28 * test.pvalue), rel=1e-9)
        assert (row.ci_low, row.ci_high) == pytest.approx((low, high), abs=1e-12)
        assert (row.ci_low_adjusted, row.ci_high_adjusted) == pytest.approx((low_b, high_b), abs=1e-12)
        # The report lists the vignettes dropped from this pair: those lacking either group's P(No).
        dropped = sorted(set(grid.index) - set(both.index))
        assert row.n_dropped == len(dropped) == 50 - n
        listed = [] if pd.isna(row.dropped_blocks) else row.dropped_blocks.split("; ")
        assert sorted(listed) == dropped


def test_group_means_equal_the_files_means_per_group_and_context(shared_datasets, written):
    table = pd.read_csv(written / "group_means.csv")
    p_no = table[(table["outcome"] == "p_no") & (table["source"] == "deepseek-32k")]
    values = deepseek_values(shared_datasets).dropna(subset=["value"])
    overall = p_no[p_no["stratum"] == "all"].set_index("level")
    assert list(overall.index) == LEVEL_ORDER
    for level, group in values.groupby("level"):
        assert overall.loc[level, "mean"] == pytest.approx(group["value"].mean(), abs=1e-12)
        assert overall.loc[level, "n"] == len(group)
    by_context = p_no[p_no["stratum_factor"] == "context"].set_index(["level", "stratum"])
    assert len(by_context) == 8 * 5
    for (level, context), group in values.groupby(["level", "context"]):
        assert by_context.loc[(level, context), "mean"] == pytest.approx(group["value"].mean(), abs=1e-12)
        sd = group["value"].std(ddof=1)
        low, high = stats.t.interval(0.95, len(group) - 1, loc=group["value"].mean(), scale=sd / np.sqrt(len(group)))
        assert by_context.loc[(level, context), "ci_low"] == pytest.approx(low, abs=1e-12)
        assert by_context.loc[(level, context), "ci_high"] == pytest.approx(high, abs=1e-12)


def test_released_numbers_win_and_records_without_log_probabilities_have_no_p_no(shared_datasets, written):
    assert Score.objects.filter(scorer="released_p_no", outcome="measured").count() == 356
    assert Score.objects.filter(scorer="released_p_no", outcome="missing").count() == 44
    # analyze scored the answers with p_no too: no log-probabilities were released, so every one is missing
    assert Score.objects.filter(scorer="p_no", outcome="measured").count() == 0
    assert (written / "paired_tests.png").stat().st_size > 10_000
    assert (written / "group_means.png").stat().st_size > 10_000
