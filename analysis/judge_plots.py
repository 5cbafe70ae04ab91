"""A figure placing each judge among the people: per field (a row of panels) and metric (a column), the people's
agreement with each other in each pool and each judge's agreement with that pool, over all items, as points with
their 95% bootstrap intervals (`agreement.csv`'s rows with an empty level). People are grey squares, judges
coloured circles; a point without an interval (not estimable) is hollow. Drawn on a `Figure` without pyplot, as
`analysis.plots` draws."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from .judge_agreement import AGREEMENT_METRICS, HUMAN, JUDGE
from .plots import COLOURS, FORMATS

METRIC_TITLES = {"percent_agreement": "Percent agreement", "cohen_kappa": "Cohen's kappa", "macro_f1": "Macro-F1"}
PEOPLE_COLOUR = "#555555"


def overall_rows(agreement: pd.DataFrame) -> pd.DataFrame:
    """The rows the figure draws: all items (empty level), people vs people and judge vs a pool."""
    frame = agreement.astype(object).where(agreement.notna(), "")
    keep = (frame["level"] == "") & (frame["rater_b_kind"] == HUMAN)
    return frame[keep]


def _label(row: pd.Series) -> str:
    if row["rater_a_kind"] == HUMAN:
        return f"{row['rater_b']}: people"
    return f"{row['rater_b']}: {row['rater_a']}"


def agreement_figure(agreement: pd.DataFrame, *, fmt: str = "svg", narrow: bool = False) -> bytes:
    """The figure as SVG or PNG bytes (an empty figure with a note when there is nothing to draw); `narrow`
    stacks the metrics' panels in one column, for a phone."""
    if fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {', '.join(FORMATS)}, not {fmt!r}")
    rows = overall_rows(agreement)
    fields = sorted(rows["field"].astype(str).unique().tolist())
    judges = sorted(rows.loc[rows["rater_a_kind"] == JUDGE, "rater_a"].astype(str).unique().tolist())
    palette = {judge: COLOURS[i % len(COLOURS)] for i, judge in enumerate(judges)}
    labels = list(dict.fromkeys(_label(row) for _, row in rows.sort_values(["rater_b", "rater_a_kind"]).iterrows()))
    n_fields, n_metrics = max(len(fields), 1), len(AGREEMENT_METRICS)
    panel_height = max(1.6, 0.9 + 0.38 * max(len(labels), 1))
    if narrow:
        figure = Figure(figsize=(4.6, panel_height * n_fields * n_metrics), layout="constrained")
        grid = figure.subplots(n_fields * n_metrics, 1, squeeze=False, sharey=True)
        axes = [[grid[line * n_metrics + column][0] for column in range(n_metrics)] for line in range(n_fields)]
    else:
        figure = Figure(figsize=(10.5, panel_height * n_fields), layout="constrained")
        axes = [list(row) for row in figure.subplots(n_fields, n_metrics, squeeze=False, sharey=True)]
    at = {label: index for index, label in enumerate(reversed(labels))}
    for line, field in enumerate(fields or [""]):
        for column, metric in enumerate(AGREEMENT_METRICS):
            ax = axes[line][column]
            cells = rows[(rows["field"] == field) & (rows["metric"] == metric)]
            for _, row in cells.iterrows():
                x, low, high = (pd.to_numeric(pd.Series([row[c]]), errors="coerce").iloc[0]
                                for c in ("estimate", "ci_low", "ci_high"))  # fmt: skip
                if np.isnan(x):
                    continue
                y = at[_label(row)]
                person = row["rater_a_kind"] == HUMAN
                colour = PEOPLE_COLOUR if person else palette[str(row["rater_a"])]
                marker = "s" if person else "o"
                if np.isnan(low) or np.isnan(high):
                    ax.plot([x], [y], marker, mfc="white", color=colour, ms=6)
                else:
                    ax.errorbar([x], [y], xerr=[[x - low], [high - x]], fmt=marker, color=colour, ms=6, capsize=2.5)
            lowest = pd.to_numeric(cells["ci_low"], errors="coerce").min() if not cells.empty else np.nan
            floor = min(-0.05, float(lowest) - 0.05) if metric == "cohen_kappa" and not np.isnan(lowest) else -0.05
            ax.set_xlim(floor if metric == "cohen_kappa" else -0.02, 1.05)
            ax.grid(axis="x", color="#dddddd", linewidth=0.6)
            ax.set_axisbelow(True)
            title = METRIC_TITLES[metric]
            ax.set_title(f"{field}: {title}" if len(fields) > 1 else title, fontsize=10)
            ax.set_yticks(list(at.values()), list(at))
            ax.set_ylim(-0.6, max(len(labels), 1) - 0.4)
    if rows.empty:
        axes[0][0].text(0.5, 0.5, "No agreement to draw", ha="center", va="center", transform=axes[0][0].transAxes)
    buffer = io.BytesIO()
    figure.savefig(buffer, format=fmt, dpi=150, metadata={"Date": None} if fmt == "svg" else None)
    return buffer.getvalue()


def figure_description(agreement: pd.DataFrame) -> str:
    """The figure as text (its `alt`): each field's people and judges on percent agreement."""
    rows = overall_rows(agreement)
    rows = rows[rows["metric"] == "percent_agreement"]
    parts = []
    for field, group in rows.groupby("field", sort=True):
        said = []
        for _, row in group.sort_values(["rater_b", "rater_a_kind"]).iterrows():
            value = pd.to_numeric(pd.Series([row["estimate"]]), errors="coerce").iloc[0]
            shown = "not estimable" if np.isnan(value) else f"{value:.0%}"
            said.append(f"{_label(row)} {shown}")
        parts.append(f"{field}: " + "; ".join(said))
    if not parts:
        return "No agreement to draw."
    return "Percent agreement over all items (the figure adds Cohen's kappa and macro-F1 with 95% CIs). " + ". ".join(
        parts
    )
