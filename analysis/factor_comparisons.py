"""Comparisons of a factor's levels over blocks, as analysis plans call them (DESIGN.md, "analysis plan").

A plan that compares levels names what it compares: one factor or several crossed (Q-Pain's race x gender,
whose level is written `Black woman`), the block the comparison is paired on (the vignette), the strata means
are also given per (the pain context), the level order of its tables and plots, and a multiple-testing
correction. `analysis.paired` does the statistics; this module only shapes a plan's loaded values for it.
Pure: no Django.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from datasets.factors import CROSSED_LEVEL_JOIN, crossed_factor

from . import paired, paired_plots


@dataclass(frozen=True)
class Comparison:
    study: str  # the `study` column of the tables (several designs can share a file)
    compare: tuple[str, ...]  # factors crossed into one level: ("race", "gender") -> "Black woman"
    block: str  # the pairing unit: a factor whose level identifies the block (Q-Pain: vignette)
    strata: tuple[str, ...] = ()  # group means are also given per level of each of these
    level_order: tuple[str, ...] = ()  # order of levels in pairs and tables; others follow by name
    correction: str = "bonferroni"  # bonferroni | holm | none

    @property
    def factor(self) -> str:
        return crossed_factor(self.compare)

    def shape(self, values: pd.DataFrame) -> pd.DataFrame:
        """The plan's values (`source`, `outcome`, `value` and factor columns) as `analysis.paired` reads them."""
        level = values[self.compare[0]].astype(str)
        for factor in self.compare[1:]:
            level = level + CROSSED_LEVEL_JOIN + values[factor].astype(str)
        shaped = pd.DataFrame(
            {
                "study": self.study,
                "outcome": values["outcome"].astype(str),
                "source": values["source"].astype(str),
                "factor": self.factor,
                "level": level,
                "block": values[self.block].astype(str),
                "value": values["value"].astype(float),
            }
        )
        for stratum in self.strata:
            shaped[stratum] = values[stratum].astype(str)
        return shaped

    def order(self, shaped: pd.DataFrame) -> list[str]:
        present = set(shaped["level"])
        ordered = [level for level in self.level_order if level in present]
        return ordered + sorted(present - set(ordered))


FAMILY = ("study", "outcome", "source", "factor")


def _outcome_order(values: pd.DataFrame) -> list[str]:
    """The plan's order of outcomes (a categorical's categories), else their order of appearance."""
    column = values["outcome"]
    categories = column.cat.categories if isinstance(column.dtype, pd.CategoricalDtype) else column.unique()
    return [str(outcome) for outcome in categories]


def _in_order(table: pd.DataFrame, outcomes: list[str]) -> pd.DataFrame:
    """Rows by the plan's outcome order (P(No), the paper's outcome, first); within one, as computed."""
    rank = {outcome: index for index, outcome in enumerate(outcomes)}
    keys = table["outcome"].map(lambda outcome: rank.get(str(outcome), len(rank)))
    return table.iloc[keys.argsort(kind="stable")].reset_index(drop=True)


def paired_statistic(comparison: Comparison) -> Callable[..., pd.DataFrame]:
    """A plan statistic: paired tests of every pair of the comparison's levels (paired_tests.csv)."""

    def statistic(values: pd.DataFrame, **_: Any) -> pd.DataFrame:
        shaped = comparison.shape(values)
        if shaped.empty:
            return pd.DataFrame(columns=paired.PAIRED_COLUMNS)
        table = paired.paired_tests(
            shaped, family=FAMILY, level_order=comparison.order(shaped), correction=comparison.correction
        )
        return _in_order(table, _outcome_order(values))

    return statistic


def means_statistic(comparison: Comparison) -> Callable[..., pd.DataFrame]:
    """A plan statistic: the mean of each level, overall and per stratum (group_means.csv)."""

    def statistic(values: pd.DataFrame, **_: Any) -> pd.DataFrame:
        shaped = comparison.shape(values)
        if shaped.empty:
            return pd.DataFrame(columns=paired.GROUP_COLUMNS)
        return paired.group_means(shaped, strata=comparison.strata, family=FAMILY, level_order=comparison.order(shaped))

    return statistic


def heat_views(
    group_means_table: pd.DataFrame, *, outcome: str = "p_no", label: str = "P(No)"
) -> list[tuple[str, pd.DataFrame]]:
    """The compact views of a group-means table (the paper's Figure 2a): per source, the outcome's mean per level
    (rows) and stratum (columns), as (title, table) pairs."""
    if group_means_table.empty or "outcome" not in group_means_table.columns:
        return []
    chosen = group_means_table[group_means_table["outcome"].astype(str) == outcome]
    views = []
    for (study, source), _ in chosen.groupby(["study", "source"], sort=True):
        table = paired.heat_table(chosen, outcome=outcome, source=str(source), study=str(study))
        views.append((f"{source}: mean {label}", table))
    return views


def _first_outcome(table: pd.DataFrame, preferred: str) -> str | None:
    """The outcome a plot shows: the preferred one (the paper's) when the table has it, else the first present."""
    if table.empty or "outcome" not in table.columns:
        return None
    present = [str(outcome) for outcome in table["outcome"].dropna().unique()]
    return preferred if preferred in present else (present[0] if present else None)


def forest_of(outcome: str) -> Callable[..., bytes]:
    """A plan plot: the forest plot of one outcome (one panel per source), so each stays readable on a phone;
    the CSV holds every outcome."""

    def plot(table: pd.DataFrame, *, fmt: str = "svg") -> bytes:
        return paired_plots.forest_figure(table, fmt=fmt, outcome=_first_outcome(table, outcome))

    return plot


def heat_of(outcome: str) -> Callable[..., bytes]:
    """A plan plot: the heat map of one outcome's group means (one panel per source)."""

    def plot(table: pd.DataFrame, *, fmt: str = "svg") -> bytes:
        return paired_plots.heat_figure(table, fmt=fmt, outcome=_first_outcome(table, outcome))

    return plot
