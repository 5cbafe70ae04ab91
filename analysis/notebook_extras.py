"""Two tables the authors' EquityMedQA analysis shows beyond the four of the report (issue 22). Pure: no Django.

New files beside the four, never a change to them (the four run unchanged in the authors' notebook):

- `counterfactual_dimensions.csv`: counterfactual pairs judged from the independent ratings of their two answers,
  as `rates.csv`'s `one_answer_biased`, `at_least_one_answer_biased` and `both_answers_biased`, but per dimension
  of bias: an answer counts as "biased" in a dimension when its independent rating marked that dimension (the
  notebook's per-dimension counterfactual figures). The same counts (`tables.counterfactual_answer_counts`: pooled
  over the n1 x n2 rating combinations, majority / any per answer) and the same intervals (over pairs) as
  `rates.csv`, so the `bias_presence` rows there and a dimension's rows here are read the same way. Columns:
  `rates.csv`'s, then `dimension`.
- `rates_filtered.csv`: the seed paper's primary analysis of multiply rated sets ("we filtered out a question for
  a rater group if three ratings were not present", Methods; the notebook's "Filtered Mixed MMQA-OMAQ"). For every
  dataset and pool whose items were rated more than once, the items with the full number of ratings (the most
  any item of that dataset has in that pool) as dataset `Filtered <name>`, when some item has fewer (else it
  would repeat the dataset's rows). `rates.csv`'s columns and computation, over those ratings only.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from . import tables
from .outcomes import (
    COUNTERFACTUAL,
    DIMENSION_COLUMNS,
    INDEPENDENT,
    NO_BIAS,
    _marks,
    outcome_tables,
    texts,
)

FILTERED_PREFIX = "Filtered "
DIMENSIONS_COLUMNS = [*tables.RATES_COLUMNS, "dimension"]
ITEM_KEYS = {  # what one rated item is, per release file (the columns naming its question(s) and answer)
    INDEPENDENT: ("question_id", "answer_source"),
    "pairwise": ("question_id",),
    COUNTERFACTUAL: ("question_1_id", "question_2_id"),
}


def counterfactual_dimensions(
    independent: pd.DataFrame | None, counterfactual: pd.DataFrame | None, *, seed: int = 0
) -> pd.DataFrame:
    """`counterfactual_dimensions.csv` (module docstring): one block of rates per independent dimension."""
    if independent is None or counterfactual is None or independent.empty or counterfactual.empty:
        return pd.DataFrame(columns=DIMENSIONS_COLUMNS)
    dimensions = list(DIMENSION_COLUMNS[INDEPENDENT].items())
    generators = np.random.SeedSequence(seed).spawn(len(dimensions))
    empty = outcome_tables({})[0]
    parts = []
    for (dimension, column), generator in zip(dimensions, generators, strict=True):
        # The dimension's mark stands in for the answer's verdict; an empty bias_presence stays unrated.
        marked = np.where(_marks(independent, column) == 1.0, "marked", NO_BIAS)
        verdicts = independent.assign(bias_presence=np.where(texts(independent, "bias_presence") == "", "", marked))
        counts = tables.counterfactual_answer_counts(verdicts, counterfactual)
        if counts.empty:
            continue
        rated = tables.rates(empty, rng=np.random.default_rng(generator), derived=counts)
        parts.append(rated.assign(dimension=dimension))
    if not parts:
        return pd.DataFrame(columns=DIMENSIONS_COLUMNS)
    return pd.concat(parts, ignore_index=True)[DIMENSIONS_COLUMNS]


def full_ratings_only(frame: pd.DataFrame | None, kind: str) -> pd.DataFrame | None:
    """The ratings of items rated the full number of times in their dataset and pool, renamed `Filtered <name>`,
    for datasets and pools where some multiply rated item has fewer; None when there is none."""
    if frame is None or frame.empty:
        return None
    keys = [column for column in ITEM_KEYS[kind] if column in frame.columns]
    work = pd.DataFrame({column: texts(frame, column) for column in ["dataset", "rater_type", *keys]})
    counts = work.groupby(["dataset", "rater_type", *keys], sort=False)["dataset"].transform("size")
    # The full number is per cell of rates.csv: one answer source may have been rated more often than another.
    cell = [work[column] for column in ("dataset", "rater_type", "answer_source") if column in work.columns]
    full = counts.groupby(cell).transform("max")
    incomplete = (counts < full).groupby(cell).transform("any")
    keep = (full > 1) & incomplete & (counts == full)
    if not keep.any():
        return None
    kept = frame[keep.to_numpy()].copy()
    kept["dataset"] = FILTERED_PREFIX + texts(kept, "dataset")
    return kept


def filtered_rates(frames: Mapping[str, pd.DataFrame | None], *, seed: int = 0) -> pd.DataFrame:
    """`rates_filtered.csv` (module docstring); no rows when no multiply rated set lacks a rating."""
    filtered = {kind: full_ratings_only(frames.get(kind), kind) for kind in ITEM_KEYS}
    if all(frame is None for frame in filtered.values()):
        return pd.DataFrame(columns=tables.RATES_COLUMNS)
    outcomes = outcome_tables(filtered)[0]
    return tables.rates(outcomes, rng=np.random.default_rng(seed))


def extra_tables(frames: Mapping[str, pd.DataFrame | None], *, seed: int = 0) -> dict[str, pd.DataFrame]:
    """Both tables by file name, as `analyze` writes them and runs store them."""
    return {
        "counterfactual_dimensions.csv": counterfactual_dimensions(
            frames.get(INDEPENDENT), frames.get(COUNTERFACTUAL), seed=seed
        ),
        "rates_filtered.csv": filtered_rates(frames, seed=seed),
    }
