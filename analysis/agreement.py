"""The `reliability.csv` table: inter-rater reliability per rubric, dataset, pool and outcome.

The statistics are `analysis.reliability`'s (Randolph 2005; Krippendorff 2011; Cohen 1960; percentile
bootstrap over items, Efron & Tibshirani 1993 §13.3); this module picks the cells and builds their matrices.
"""

from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd

from .cells import empty_table, group_codes, item_groups, report_order
from .outcomes import agreement_codes, with_equitymedqa
from .reliability import Metric, reliability_with_ci

RELIABILITY_COLUMNS = [
    *["rubric", "dataset", "rater_type", "outcome", "metric"],
    *["n_items", "n_raters", "estimate", "ci_low", "ci_high", "note", "answer_source"],
]


def _position_matrix(cell: pd.DataFrame) -> np.ndarray:
    """Items x (their j-th rating) category codes, NaN-padded.

    Randolph's kappa and nominal Krippendorff's alpha depend only on each item's category counts, so the
    column a rating lands in does not matter; this keeps the matrix as narrow as the most-rated item.
    """
    item = np.unique(cell["item"].cat.codes.to_numpy(), return_inverse=True)[1]
    order = np.argsort(item, kind="stable")
    starts = np.searchsorted(item[order], item[order])  # first row of each rating's item in sorted order
    position = np.empty(len(item), dtype=np.int64)
    position[order] = np.arange(len(item)) - starts
    matrix = np.full((item.max() + 1, position.max() + 1), np.nan)
    matrix[item, position] = cell["value"].to_numpy(dtype=float)
    return matrix


def _two_rater_matrix(cell: pd.DataFrame) -> np.ndarray | None:
    """Items x the two raters, when exactly two raters rated the cell's items and each rated every one."""
    raters = np.unique(cell["rater_id"].cat.codes.to_numpy(), return_inverse=True)
    items = np.unique(cell["item"].cat.codes.to_numpy(), return_inverse=True)
    if len(raters[0]) != 2 or len(cell) != 2 * len(items[0]):
        return None
    matrix = np.full((len(items[0]), 2), np.nan)
    matrix[items[1], raters[1]] = cell["value"].to_numpy(dtype=float)
    return None if np.isnan(matrix).any() else matrix


def reliability(frames: Mapping[str, pd.DataFrame | None], *, rng: np.random.Generator) -> pd.DataFrame:
    """The `reliability.csv` table of the three frames; see `reliability_table`."""
    codes, categories = agreement_codes(frames)
    return reliability_table(codes, categories, rng=rng)


def reliability_table(
    codes: pd.DataFrame,
    categories: Mapping[tuple[str, str], int],
    *,
    rng: np.random.Generator,
    progress: Callable[[float], None] | None = None,
) -> pd.DataFrame:
    """The `reliability.csv` table: per rubric, dataset (+ EquityMedQA), pool, answer source and outcome.

    Only items with at least two ratings in the pool count, and only cells with such items get rows.
    Metrics (analysis.reliability, percentile bootstrap over items): Randolph's free-marginal kappa with k =
    the outcome's number of categories (2 for yes/no, 3 for the pairwise preference and `bias_presence_3`,
    ...), nominal Krippendorff's alpha, and Cohen's kappa only when the cell's items were rated by exactly
    two raters, each rating every item. Outcomes and their categories: `outcomes.agreement_codes`.
    `n_raters` counts the distinct raters of the cell's multiply rated items. `progress`, if given, is
    called with the share of cells done after each cell.
    """
    if codes.empty:
        return empty_table(RELIABILITY_COLUMNS)
    codes = with_equitymedqa(codes)
    keys = ["rubric", "dataset", "rater_type", "answer_source", "outcome"]
    cell, _ = group_codes(codes, keys)
    item = codes["item"].cat.codes.to_numpy(dtype=np.int64)
    group, m, _ = item_groups(cell, item, np.zeros(len(cell), dtype=np.int64))
    multiple = group[m >= 2]  # sorted
    key = cell * (int(item.max()) + 1) + item
    found = np.minimum(np.searchsorted(multiple, key), max(len(multiple) - 1, 0))
    shared = codes[(multiple[found] == key) if len(multiple) else np.zeros(len(key), dtype=bool)]
    if shared.empty:
        return empty_table(RELIABILITY_COLUMNS)
    cells = list(shared.groupby(keys, observed=True, sort=False))
    index = report_order(pd.DataFrame([name for name, _ in cells], columns=keys).assign(position=range(len(cells))))
    rows: list[dict[str, object]] = []
    for done, position in enumerate(index["position"], start=1):
        name, cell = cells[position]
        labels = dict(zip(keys, name, strict=True))
        n_raters = cell["rater_id"].nunique()
        by_position = _position_matrix(cell)
        matrices: dict[Metric, np.ndarray | None] = {
            "randolph_kappa": by_position,
            "krippendorff_alpha": by_position,
            "cohen_kappa": _two_rater_matrix(cell),
        }
        for metric, matrix in matrices.items():
            if matrix is None:
                continue
            count = categories[(str(labels["rubric"]), str(labels["outcome"]))]
            estimate = reliability_with_ci(matrix, metric, rng=rng, n_categories=count)
            rows.append(
                {
                    **labels,
                    "metric": metric,
                    "n_items": estimate.n_items,
                    "n_raters": n_raters,
                    "estimate": estimate.estimate,
                    "ci_low": estimate.ci_low,
                    "ci_high": estimate.ci_high,
                    "note": estimate.note,
                }
            )
        if progress is not None:
            progress(done / len(cells))
    table = pd.DataFrame(rows)
    for column in ("estimate", "ci_low", "ci_high"):
        table[column] = pd.array(table[column].tolist(), dtype="Float64")
    return table[RELIABILITY_COLUMNS]
