"""Figures of the rates table: estimates with 95% CIs by dataset, one colour per rater pool.

Like the seed paper's Figures 2-4: for one rubric, outcome and aggregation, each dataset is a row, each pool
a point with its interval. Pairwise rates get one panel per preferred source (and `No preference`), and
studies rating several answer sources (or pairwise comparisons) one panel per source. Figures are drawn on a
`matplotlib.figure.Figure` with no pyplot and no global state, so any thread may draw one.
"""

import io
import re

import numpy as np
import pandas as pd
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from .choice_accuracy import BIAS_ORDER, MITIGATION_ORDER, ordered_levels
from .outcomes import DATASET_ORDER, NO_PREFERENCE, PAIRWISE, RATER_TYPE_ORDER

FORMATS = ("svg", "png")
COLOURS = ["#1b6ca8", "#d1495b", "#3a9d5d", "#edae49", "#7b4b94", "#66a5ad", "#8c564b", "#555555"]
PANEL_WIDTH, ROW_HEIGHT, MAX_COLUMNS = 4.2, 0.42, 3
_ABBREVIATION = re.compile(r"\(([^()]+)\)\s*$")


def _text(values: pd.Series) -> pd.Series:
    """A column read back from CSV as text: empty cells (NaN) as ""."""
    return values.astype(object).where(values.notna(), "").astype(str)


def _ordered(values: list[str], order: list[str], last: tuple[str, ...] = ()) -> list[str]:
    known = [value for value in order if value in values]
    tail = [value for value in last if value in values]
    return known + sorted(set(values) - set(known) - set(tail)) + tail


def dataset_label(name: str) -> str:
    """A dataset's short name: its abbreviation in final parentheses ("... (OMAQ)" -> "OMAQ"), else the name."""
    found = _ABBREVIATION.search(name)
    return found.group(1) if found else name


def _panels(cells: pd.DataFrame, rubric: str) -> list[tuple[str, pd.DataFrame]]:
    """(title, rows) per panel: by answer source when there are several, and by preferred source for pairwise."""
    sources = _ordered(list(cells["answer_source"].unique()), [])
    panels: list[tuple[str, pd.DataFrame]] = []
    for answer_source in sources:
        rows = cells[cells["answer_source"] == answer_source]
        prefix = answer_source if len(sources) > 1 else ""
        if rubric == PAIRWISE:
            for source in _ordered(list(rows["source"].unique()), [], last=(NO_PREFERENCE,)):
                title = source if source == NO_PREFERENCE else f"Prefers {source}"
                panels.append((f"{prefix}: {title}" if prefix else title, rows[rows["source"] == source]))
        else:
            panels.append((prefix, rows))
    return panels


def _draw_pool(ax: Axes, rows: pd.DataFrame, rows_at: dict[str, int], offset: float, pool: str, colour: str) -> None:
    """One pool's rates in one panel: filled points with CI bars, hollow points where no interval exists."""
    if rows.empty:
        return
    y = np.array([rows_at[dataset] for dataset in rows["dataset"]], dtype=float) + offset
    x, low, high = (
        pd.to_numeric(rows[c], errors="coerce").to_numpy(dtype=float) for c in ("estimate", "ci_low", "ci_high")
    )
    has_ci = ~np.isnan(low) & ~np.isnan(high)
    errors = np.vstack([x - low, high - x])[:, has_ci]
    ax.errorbar(x[has_ci], y[has_ci], xerr=errors, fmt="o", color=colour, ms=5, capsize=2.5, label=pool)
    ax.plot(x[~has_ci], y[~has_ci], "o", mfc="white", color=colour, ms=5, label=None if has_ci.any() else pool)


def rates_figure(
    rates: pd.DataFrame, *, rubric: str, outcome: str, aggregation: str = "pooled", fmt: str = "svg"
) -> bytes:
    """The rates of one rubric, outcome and aggregation with their CIs, as SVG or PNG bytes.

    Datasets run down the y axis (in the report's order), rates along x in [0, 1]; pools are offset within a
    dataset's row and coloured consistently. A rate without an interval (not estimable) is drawn as a hollow
    marker. Works on `tables.rates` output and on `rates.csv` read back with pandas (empty cells as NaN).
    """
    if fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {', '.join(FORMATS)}, not {fmt!r}")
    frame = rates.copy()
    for column in ("rubric", "dataset", "rater_type", "aggregation", "outcome", "source", "answer_source"):
        frame[column] = _text(frame[column]) if column in frame.columns else ""
    cells = frame[(frame["rubric"] == rubric) & (frame["outcome"] == outcome) & (frame["aggregation"] == aggregation)]
    datasets = _ordered(list(cells["dataset"].unique()), DATASET_ORDER)
    pools = _ordered(list(cells["rater_type"].unique()), RATER_TYPE_ORDER)
    panels = _panels(cells, rubric) if not cells.empty else [("", cells)]
    columns = min(len(panels), MAX_COLUMNS)
    lines = -(-len(panels) // columns)
    height = max(2.2, 1.1 + ROW_HEIGHT * max(len(datasets), 1) * max(len(pools), 1) ** 0.5) * lines
    figure = Figure(figsize=(PANEL_WIDTH * columns + 2.2, height), layout="constrained")
    axes = figure.subplots(lines, columns, squeeze=False, sharex=True, sharey=True)
    rows_at = {dataset: index for index, dataset in enumerate(reversed(datasets))}
    spread = 0.6 / max(len(pools), 1)
    # A pool keeps its colour from figure to figure: the usual pools first, then others by name.
    palette = {
        pool: COLOURS[i % len(COLOURS)]
        for i, pool in enumerate([*RATER_TYPE_ORDER, *sorted(set(pools) - set(RATER_TYPE_ORDER))])
    }
    for index, (title, rows) in enumerate(panels):
        ax = axes[index // columns][index % columns]
        for number, pool in enumerate(pools):
            offset = (len(pools) - 1) / 2 * spread - number * spread
            _draw_pool(ax, rows[rows["rater_type"] == pool], rows_at, offset, pool, palette[pool])
        ax.set_title(title, fontsize=10)
        ax.set_xlim(-0.02, 1.02)
        ax.grid(axis="x", color="#dddddd", linewidth=0.6)
        ax.set_axisbelow(True)
    for index in range(len(panels), lines * columns):
        axes[index // columns][index % columns].set_visible(False)
    first = axes[0][0]
    first.set_yticks(list(rows_at.values()), [dataset_label(dataset) for dataset in rows_at])
    first.set_ylim(-0.6, max(len(datasets), 1) - 0.4)
    for ax in axes[-1]:
        ax.set_xlabel("Rate (95% CI)")
    if cells.empty:
        first.text(0.5, 0.5, "No estimates", transform=first.transAxes, ha="center", va="center")
    elif pools:
        handles, labels = first.get_legend_handles_labels()
        for ax in axes.ravel()[1 : len(panels)]:
            more_handles, more_labels = ax.get_legend_handles_labels()
            handles, labels = handles + more_handles, labels + more_labels
        unique = dict(zip(labels, handles, strict=True))
        figure.legend(
            [unique[p] for p in pools if p in unique], [p for p in pools if p in unique], loc="outside right center"
        )
    figure.suptitle(f"{rubric.capitalize()} rubric: {outcome.replace('_', ' ')} ({aggregation})", fontsize=11)
    buffer = io.BytesIO()
    figure.savefig(buffer, format=fmt, dpi=150, metadata={"Date": None} if fmt == "svg" else None)
    figure.clear()
    return buffer.getvalue()


# --- Analysis plans: accuracy by bias (analysis.choice_accuracy) ---------------------------------------------


def accuracy_figure(table: pd.DataFrame, *, fmt: str = "svg") -> bytes:
    """Accuracy by bias with 95% Wilson intervals, one panel per mitigation and one series per source.

    Biases run along x in the table's order (no bias first), accuracy up y in [0, 1]; a source keeps its colour
    and its offset within a bias in every panel. Works on `choice_accuracy.accuracy_table` output and on
    `accuracy.csv` read back with pandas; conditions without an accuracy (only non-responses) are not drawn.
    """
    if fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {', '.join(FORMATS)}, not {fmt!r}")
    frame = table.copy()
    for column in ("source", "bias", "mitigation"):
        frame[column] = _text(frame[column]) if column in frame.columns else pd.Series(dtype=object)
    biases = ordered_levels(frame["bias"], BIAS_ORDER)
    mitigations = ordered_levels(frame["mitigation"], MITIGATION_ORDER) or [""]
    sources = sorted(set(frame["source"]))
    # Panels stacked: a bias's sources sit side by side, so a panel is as wide as biases x sources need.
    columns, lines = 1, len(mitigations)
    width = max(4.5, 0.14 * max(len(biases), 1) * max(len(sources), 2) + 1.0)
    figure = Figure(figsize=(width + 2.6, 2.6 * lines + 1.0), layout="constrained")
    axes = figure.subplots(lines, columns, squeeze=False, sharex=True, sharey=True)
    at = {bias: index for index, bias in enumerate(biases)}
    spread = 0.7 / max(len(sources), 1)
    for index, mitigation in enumerate(mitigations):
        ax = axes[index // columns][index % columns]
        rows = frame[frame["mitigation"] == mitigation]
        for number, source in enumerate(sources):
            mine = rows[rows["source"] == source]
            x = np.array([at[bias] for bias in mine["bias"]], dtype=float) + (number - (len(sources) - 1) / 2) * spread
            y, low, high = (
                pd.to_numeric(mine[c], errors="coerce").to_numpy(dtype=float) for c in ("accuracy", "ci_low", "ci_high")
            )
            shown = ~np.isnan(y) & ~np.isnan(low) & ~np.isnan(high)
            errors = np.vstack([y - low, high - y])[:, shown]
            colour = COLOURS[number % len(COLOURS)]
            ax.errorbar(x[shown], y[shown], yerr=errors, fmt="o", color=colour, ms=4, capsize=2, label=source)
        ax.set_title(f"Mitigation: {mitigation}" if mitigation else "", fontsize=10)
        ax.set_ylim(0, 1)
        ax.grid(axis="y", color="#dddddd", linewidth=0.6)
        ax.set_axisbelow(True)
    for index in range(len(mitigations), lines * columns):
        axes[index // columns][index % columns].set_visible(False)
    for ax in axes[-1]:
        ax.set_xticks(list(at.values()), [bias.replace("_", " ") for bias in at], rotation=40, ha="right")
    for line in axes:
        line[0].set_ylabel("Accuracy (95% Wilson CI)")
    if frame.empty:
        axes[0][0].text(0.5, 0.5, "No estimates", transform=axes[0][0].transAxes, ha="center", va="center")
    else:
        found: dict[str, Artist] = {}
        for ax in axes.ravel():
            for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
                found.setdefault(label, handle)
        figure.legend(list(found.values()), list(found), loc="outside right center", title="Source")
    figure.suptitle("Accuracy by bias, without non-responses", fontsize=11)
    buffer = io.BytesIO()
    figure.savefig(buffer, format=fmt, dpi=150, metadata={"Date": None} if fmt == "svg" else None)
    figure.clear()
    return buffer.getvalue()
