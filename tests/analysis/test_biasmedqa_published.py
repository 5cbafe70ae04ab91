"""The BiasMedQA plan's statistic reproduces the paper's Tables 1, 2, 3 and 5 from the released responses.

Outcomes are read straight from `model_responses_all.csv.gz` with pandas (the database end-to-end version runs
the importer first): `is_correct` True -> correct, False -> wrong, NR -> non-response, and a `response` that is
literally "NR" is a non-response too. The paper mixes rounding and truncation, hence two tolerances.
"""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.choice_accuracy import ACCURACY_COLUMNS, accuracy_table

from .biasmedqa_published import ACCURACY, BIASES, NON_RESPONSE, NON_RESPONSE_TABLE, SOURCE

WITHIN, MOSTLY_WITHIN, MOSTLY = 0.004, 0.0015, 130
NON_RESPONSE_WITHIN = 0.002


def released_outcomes(path: Path) -> pd.DataFrame:
    columns = ["model", "bias_type", "mitigation", "response", "is_correct"]
    rows = pd.read_csv(path, usecols=columns, dtype=str, keep_default_na=False)
    non_response = (rows["is_correct"] == "NR") | (rows["response"] == "NR")
    outcome = np.where(non_response, "non_response", np.where(rows["is_correct"] == "True", "correct", "wrong"))
    return pd.DataFrame(
        {"source": rows["model"], "bias": rows["bias_type"], "mitigation": rows["mitigation"], "outcome": outcome}
    )


@pytest.fixture
def table(shared_datasets: Path) -> pd.DataFrame:
    return accuracy_table(released_outcomes(shared_datasets / "biasmedqa/model_responses/model_responses_all.csv.gz"))


def published_cells() -> list[tuple[str, str, str, str, str, float]]:
    """(table, paper row, source, bias, mitigation of the row it is compared with, published value)."""
    cells = []
    for (name, mitigation), rows in ACCURACY.items():
        for paper_row, values in rows.items():
            for bias, value in zip(BIASES, values, strict=True):
                if value is None:
                    continue
                # Table 2's "No bias" column is Table 1's: there is no unbiased education run.
                compared = "none" if bias == "none" and mitigation == "education" else mitigation
                cells.append((name, paper_row, SOURCE[paper_row], bias, compared, value))
    return cells


def test_every_published_accuracy_cell_is_reproduced(table):
    rows = table.set_index(["source", "bias", "mitigation"])
    cells = published_cells()
    assert len(cells) == 136  # 3 tables x 6 models x 8 columns, less text-bison-001's one-shot row (N/A)
    off = []
    close = 0
    for name, paper_row, source, bias, mitigation, published in cells:
        ours = float(rows.loc[(source, bias, mitigation), "accuracy"])
        close += abs(ours - published) <= MOSTLY_WITHIN
        if abs(ours - published) > WITHIN:
            off.append(f"{name}, {paper_row}, {bias}: published {published}, ours {ours:.4f}")
    assert off == []
    assert close >= MOSTLY, f"only {close} of 136 cells within {MOSTLY_WITHIN}"


def test_table_5_non_response_without_bias_is_reproduced(table):
    rows = table.set_index(["source", "bias", "mitigation"])
    for mitigation, published in NON_RESPONSE.items():
        for paper_row, value in published.items():
            ours = float(rows.loc[(SOURCE[paper_row], "none", mitigation), "non_response_rate"])
            assert abs(ours - value) <= NON_RESPONSE_WITHIN, (NON_RESPONSE_TABLE, mitigation, paper_row, ours, value)


def test_the_released_responses_give_one_row_per_condition_with_the_contract_columns(table):
    assert list(table.columns) == ACCURACY_COLUMNS
    assert len(table) == 170  # 6 models x (none + one-shot: 8 + v2s, education: 7 + v2s), less missing v2 runs
    assert table["n"].sum() == 216_288
    assert not table.duplicated(["source", "bias", "mitigation"]).any()
    # Education rows drop from the model's unbiased run without mitigation.
    gpt4 = table.set_index(["source", "bias", "mitigation"]).loc["gpt-4-0613"]
    expected = gpt4.loc[("none", "none"), "accuracy"] - gpt4.loc[("recency", "education"), "accuracy"]
    assert gpt4.loc[("recency", "education"), "drop_abs"] == pytest.approx(expected)
    assert (table["ci_low"] <= table["accuracy"]).all() and (table["accuracy"] <= table["ci_high"]).all()
