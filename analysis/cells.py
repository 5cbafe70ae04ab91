"""Grouping long outcome tables into report cells, fast, and the report's row order.

Tens of millions of long rows (1,000,000 ratings x outcomes x sources) are grouped on their categorical
codes with numpy (mixed-radix cell numbers, bincount, one sort for items within cells) rather than with a
pandas groupby over several categoricals, which is an order of magnitude slower at that size.
"""

import numpy as np
import pandas as pd

from .outcomes import (
    ANSWERS_DIFFER_HOW,
    BIAS_PRESENCE,
    DATASET_ORDER,
    DIMENSIONS,
    IDEAL_ANSWERS_DIFFER,
    NO_PREFERENCE,
    RATER_TYPE_ORDER,
    RUBRICS,
    order_key,
)

POOLED, MAJORITY, ANY = "pooled", "majority", "any"
AGGREGATIONS = [POOLED, MAJORITY, ANY]
ANSWER_OUTCOMES = ["one_answer_biased", "at_least_one_answer_biased", "both_answers_biased"]
OUTCOME_ORDER = [BIAS_PRESENCE, "bias_presence_3", *DIMENSIONS, *ANSWER_OUTCOMES, "ideal_answers_differ",
                 "answers_differ_how"]  # fmt: skip
PREDICTORS = ["rater_age_group", "rater_gender", "rater_race_ethnicity"]


def empty_table(columns: list[str]) -> pd.DataFrame:
    return pd.DataFrame({column: pd.Series(dtype=object) for column in columns})


def report_order(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows in report order: rubric, dataset, pool and outcome in their usual order, the rest by name."""
    orders: dict[str, tuple[list[str], list[str]]] = {
        "rubric": (RUBRICS, []),
        "dataset": (DATASET_ORDER, []),
        "rater_type": (RATER_TYPE_ORDER, []),
        "answer_source": ([""], []),
        "aggregation": (AGGREGATIONS, []),
        "outcome": (OUTCOME_ORDER, []),
        "source": ([""], [NO_PREFERENCE]),
        "metric": (["randolph_kappa", "krippendorff_alpha", "cohen_kappa"], []),
        "ideal_answers_differ": (IDEAL_ANSWERS_DIFFER, []),
        "answers_differ_how": (ANSWERS_DIFFER_HOW, []),
        "predictor": (PREDICTORS, []),
    }
    columns = [column for column in orders if column in frame.columns]
    if frame.empty or not columns:
        return frame.reset_index(drop=True)
    keys = pd.DataFrame({c: order_key(frame[c], orders[c][0], last=orders[c][1]) for c in columns}, index=frame.index)
    order = keys.sort_values(columns, kind="mergesort").index
    return frame.loc[order].reset_index(drop=True)


def group_codes(frame: pd.DataFrame, keys: list[str]) -> tuple[np.ndarray, pd.DataFrame]:
    """Dense group ids of the rows by `keys` and each group's key values (groups in key order).

    Computed on the categorical codes (a mixed-radix number per row, counted with bincount): far faster
    than a pandas groupby over several categoricals on tens of millions of rows.
    """
    columns = [frame[key] if isinstance(frame[key].dtype, pd.CategoricalDtype) else frame[key].astype("category")
               for key in keys]  # fmt: skip
    sizes = [max(len(column.cat.categories), 1) for column in columns]
    combined = np.zeros(len(frame), dtype=np.int64)
    for column, size in zip(columns, sizes, strict=True):
        combined = combined * size + column.cat.codes.to_numpy(dtype=np.int64)
    span = int(np.prod(sizes, dtype=np.float64))
    if span <= 4 * len(frame) + 1_000_000:
        used = np.flatnonzero(np.bincount(combined, minlength=span))
        lookup = np.zeros(span, dtype=np.int64)
        lookup[used] = np.arange(len(used))
        ids = lookup[combined]
    else:
        ids, used = pd.factorize(combined, sort=True)
    labels = {}
    remainder = np.asarray(used, dtype=np.int64)
    for key, column, size in reversed(list(zip(keys, columns, sizes, strict=True))):
        remainder, code = np.divmod(remainder, size)
        labels[key] = column.cat.categories.to_numpy(dtype=object)[code]
    return ids.astype(np.int64), pd.DataFrame({key: labels[key] for key in keys})


def item_groups(cell: np.ndarray, item: np.ndarray, value: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per (cell, item) group, in key order: its key cell * (max item + 1) + item, its rows m and 0/1 sum s.

    One sort of an int64 holding key and value (no hashing of millions of distinct items).
    """
    if len(item) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    ordered = np.sort((cell * (int(item.max()) + 1) + item) * 2 + value)
    key = ordered >> 1
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    return key[starts], np.diff(np.r_[starts, len(key)]), np.add.reduceat(ordered & 1, starts)
