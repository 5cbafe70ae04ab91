"""Figures of the paired statistics (analysis.paired): Q-Pain's Figure 3 (forest) and Figure 2a (heat table).

Both draw on a `matplotlib.figure.Figure` with no pyplot and no global state (as `analysis.plots`), take the table
as built or its CSV read back with pandas, and return SVG or PNG bytes. A panel is one (source, outcome) -- and
study and factor when the table holds several -- in the table's order; tables with more panels than fit on a
page (`MAX_FOREST_PANELS`, `MAX_HEAT_PANELS`) show the first ones and say "first k of n panels" in the title, so
a plan that needs every panel draws one outcome or source per call (`outcome=`, `source=`). Pure: no Django.
"""

from __future__ import annotations

import io
import textwrap

import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from .paired import ALL_LEVELS, heat_table
from .plots import FORMATS

PANEL_KEYS = ("study", "source", "outcome", "factor")
MAX_FOREST_PANELS, MAX_HEAT_PANELS = 6, 4
FOREST_WIDTH, NARROW_WIDTH, LABEL_WIDTH, PAIR_HEIGHT = 3.8, 3.2, 2.2, 0.24
CELL_WIDTH, CELL_HEIGHT = 0.82, 0.3
INTERVAL, ADJUSTED, POINT, ZERO = "#1b6ca8", "#a9cce3", "#111111", "#666666"
HEAT_COLOURS = "YlOrRd"
XLABEL = "Difference A − B (percentage points)"
NUMBERS = ("n_blocks", "mean_diff", "ci_low", "ci_high", "ci_low_adjusted", "ci_high_adjusted", "p_value")


def _text(values: pd.Series) -> pd.Series:
    return values.astype(object).where(values.notna(), "").astype(str)


def _prepared(table: pd.DataFrame, text: tuple[str, ...], outcome: str | None, source: str | None) -> pd.DataFrame:
    frame = table.copy()
    for column in text:
        frame[column] = _text(frame[column]) if column in frame.columns else pd.Series("", index=frame.index)
    if outcome is not None:
        frame = frame[frame["outcome"] == outcome]
    if source is not None:
        frame = frame[frame["source"] == source]
    return frame


def _panels(frame: pd.DataFrame, limit: int) -> tuple[list[tuple[str, ...]], list[str], str]:
    """The first `limit` panels' keys, their titles (what varies between panels) and the figure's common part."""
    keys = list(dict.fromkeys(zip(*(frame[column] for column in PANEL_KEYS), strict=True)))
    varying = [i for i in range(len(PANEL_KEYS)) if len({key[i] for key in keys}) > 1]
    common = [keys[0][i] for i in range(len(PANEL_KEYS)) if i not in varying and keys[0][i]] if keys else []
    more = f" (first {limit} of {len(keys)} panels)" if len(keys) > limit else ""
    titles = [" · ".join(key[i] for i in varying if key[i]) for key in keys[:limit]]
    return keys[:limit], titles, ", ".join(common) + more


def _rows_of(frame: pd.DataFrame, key: tuple[str, ...]) -> pd.DataFrame:
    mask = np.ones(len(frame), dtype=bool)
    for column, wanted in zip(PANEL_KEYS, key, strict=True):
        mask &= (frame[column] == wanted).to_numpy()
    return frame[mask]


def _title(figure: Figure, text: str, width: float) -> None:
    """The figure's title wrapped to its width (inches): a narrow figure (one pain context) cut a long title
    off on both sides. About 11 characters of 10 pt text per inch."""
    figure.suptitle(textwrap.fill(text, max(20, int(width * 11))), fontsize=10)


def _save(figure: Figure, fmt: str) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format=fmt, dpi=150, metadata={"Date": None} if fmt == "svg" else None)
    figure.clear()
    return buffer.getvalue()


def _check(fmt: str) -> None:
    if fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {', '.join(FORMATS)}, not {fmt!r}")


# --- Figure 3: paired differences with their 95% and corrected intervals ---------------------------------------


def forest_figure(
    paired_table: pd.DataFrame, *, fmt: str = "svg", outcome: str | None = None, source: str | None = None
) -> bytes:
    """Mean differences A − B with 95% and corrected intervals, one row per pair "A v B", as SVG or PNG bytes.

    As the paper's Figure 3, in percentage points (the table's probabilities x 100): the corrected (Bonferroni)
    interval as a wide light bar, the 95% interval as a narrow dark one over it, the mean difference as a point,
    and a line at 0; a positive difference means level A scores higher (for P(No): is denied treatment more
    often). Pairs run down in the table's order; the table's `significance` flags are printed beside each row.
    A pair without an interval (fewer than 2 blocks, no spread) is a hollow point, one without blocks an empty
    row. Panels with the same pairs sit two abreast and share their labels, and share the x axis when they show
    one outcome.
    """
    _check(fmt)
    frame = _prepared(paired_table, (*PANEL_KEYS, "level_a", "level_b", "correction", "significance"), outcome, source)
    for column in NUMBERS:
        frame[column] = pd.to_numeric(frame[column], errors="coerce") if column in frame.columns else np.nan
    keys, titles, common = _panels(frame, MAX_FOREST_PANELS)
    panels = [_rows_of(frame, key) for key in keys] or [frame]
    labels = [[f"{a} v {b}" for a, b in zip(rows["level_a"], rows["level_b"], strict=True)] for rows in panels]
    same_pairs = all(found == labels[0] for found in labels)
    columns = 2 if len(panels) > 1 and same_pairs else 1
    lines = -(-len(panels) // columns)
    pairs = max(max(len(found) for found in labels), 1)
    height = (0.75 + PAIR_HEIGHT * pairs) * lines + 1.2
    width = LABEL_WIDTH + (FOREST_WIDTH if columns == 1 else NARROW_WIDTH * columns)
    figure = Figure(figsize=(width, height), layout="constrained")
    one_outcome = len({key[2] for key in keys}) <= 1
    axes = figure.subplots(lines, columns, squeeze=False, sharex=one_outcome, sharey=same_pairs)
    for index, rows in enumerate(panels):
        ax = axes[index // columns][index % columns]
        _forest_panel(ax, rows, labels[index], show_labels=not same_pairs or index % columns == 0)
        ax.set_title(titles[index] if keys else "", fontsize=9)
    for index in range(len(panels), lines * columns):
        axes[index // columns][index % columns].set_visible(False)
        # The panel above an empty cell is the last of its column: it shows the x axis (sharex hid it).
        axes[index // columns - 1][index % columns].xaxis.set_tick_params(labelbottom=True)
        axes[index // columns - 1][index % columns].set_xlabel(XLABEL, fontsize=8)
    for ax in axes[-1]:
        ax.set_xlabel(XLABEL, fontsize=8)
    corrections = sorted({c for c in frame["correction"] if c and c != "none"})
    adjusted = frame["ci_low_adjusted"].notna().any()
    handles = [Line2D([], [], color=INTERVAL, lw=2.5, label="95% interval")]
    if adjusted:
        handles.append(
            Line2D([], [], color=ADJUSTED, lw=7, label=f"{'/'.join(corrections).capitalize()}-corrected interval")
        )
    handles.append(Line2D([], [], color=POINT, marker="o", ls="", ms=4, label="Mean difference"))
    if frame.empty:
        axes[0][0].set_axis_off()
        axes[0][0].text(0.5, 0.5, "No pairs", transform=axes[0][0].transAxes, ha="center", va="center")
    else:
        figure.legend(
            handles=handles,
            loc="outside lower center",
            ncols=len(handles),
            fontsize=8,
            frameon=False,
            title="* p < α   ** p < α / pairs   *** p < 0.0001 (paired t-test, raw p)",
            title_fontsize=7,
        )
    _title(figure, f"Paired differences{': ' + common if common else ''}", width)
    return _save(figure, fmt)


def _forest_panel(ax: Axes, rows: pd.DataFrame, labels: list[str], *, show_labels: bool) -> None:
    y = np.arange(len(rows), dtype=float)[::-1]  # the first pair on top
    diff, low, high, low_adj, high_adj = (
        rows[column].to_numpy(dtype=float) * 100
        for column in ("mean_diff", "ci_low", "ci_high", "ci_low_adjusted", "ci_high_adjusted")
    )
    has = ~np.isnan(low) & ~np.isnan(high)
    has_adj = ~np.isnan(low_adj) & ~np.isnan(high_adj)
    ax.axvline(0, color=ZERO, lw=0.8, zorder=0)
    ax.hlines(y[has_adj], low_adj[has_adj], high_adj[has_adj], color=ADJUSTED, lw=7, zorder=1)
    ax.hlines(y[has], low[has], high[has], color=INTERVAL, lw=2.5, zorder=2)
    point = ~np.isnan(diff)
    ax.plot(diff[point & has], y[point & has], "o", color=POINT, ms=3.5, zorder=3)
    ax.plot(diff[point & ~has], y[point & ~has], "o", mfc="white", color=POINT, ms=3.5, zorder=3)
    ends = np.fmax(np.fmax(high, high_adj), diff)
    for at, end, flag in zip(y, ends, rows["significance"], strict=True):
        if flag and not np.isnan(end):
            ax.annotate(flag, (end, at), xytext=(3, -0.5), textcoords="offset points", va="center", fontsize=7)
    found = np.concatenate([values[~np.isnan(values)] for values in (diff, low, high, low_adj, high_adj)])
    if found.size:
        left, right = min(found.min(), 0.0), max(found.max(), 0.0)
        pad = max(right - left, 0.1) * 0.06
        ax.set_xlim(left - pad, right + 3 * pad)  # room on the right for the flags
    ax.set_ylim(-0.7, max(len(rows), 1) - 0.3)
    ax.set_yticks(y, labels if show_labels else [""] * len(labels), fontsize=8)
    ax.tick_params(axis="y", length=0)
    ax.tick_params(axis="x", labelsize=8)
    ax.grid(axis="x", color="#e4e4e4", linewidth=0.6)
    ax.set_axisbelow(True)


# --- Figure 2a: mean per level and stratum -----------------------------------------------------------------------


def heat_figure(
    group_means_table: pd.DataFrame, *, fmt: str = "svg", outcome: str | None = None, source: str | None = None
) -> bytes:
    """`paired.heat_table` as a heat map (the paper's Figure 2a), values printed, as SVG or PNG bytes.

    One panel per (source, outcome) stacked: levels, then their races, genders and "All" (separated by lines),
    down; "Average" and each stratum across. The colour runs over each panel's own range (the paper's shading);
    values are printed as percentages when every cell is a probability (in [0, 1]), else with 3 significant
    digits. Empty cells (no observations) are grey.
    """
    _check(fmt)
    text = (*PANEL_KEYS, "level", "stratum_factor", "stratum")
    frame = _prepared(group_means_table, text, outcome, source)
    keys, titles, common = _panels(frame, MAX_HEAT_PANELS)
    tables = [
        heat_table(frame, study=study, source=src, outcome=out, factor=factor) for study, src, out, factor in keys
    ]
    shapes = [table.shape for table in tables] or [(1, 1)]
    columns = max(shape[1] for shape in shapes)
    heights = [CELL_HEIGHT * max(shape[0], 1) + 0.7 for shape in shapes]
    width = 1.6 + CELL_WIDTH * columns
    figure = Figure(figsize=(width, sum(heights) + 0.9), layout="constrained")
    axes = figure.subplots(len(shapes), 1, squeeze=False, height_ratios=heights)[:, 0]
    for index, table in enumerate(tables):
        _heat_panel(axes[index], table, set(_rows_of(frame, keys[index])["level"]))
        axes[index].set_title(titles[index], fontsize=9)
    if not tables:
        axes[0].set_axis_off()
        axes[0].text(0.5, 0.5, "No group means", transform=axes[0].transAxes, ha="center", va="center")
    _title(figure, f"Mean by level{': ' + common if common else ''}", width)
    return _save(figure, fmt)


def _heat_panel(ax: Axes, table: pd.DataFrame, levels: set[str]) -> None:
    values = table.to_numpy(dtype=float)
    finite = values[~np.isnan(values)]
    percent = finite.size > 0 and bool(((finite >= 0) & (finite <= 1)).all())
    low, high = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    if high <= low:
        high = low + 1e-9
    colours = colormaps[HEAT_COLOURS].with_extremes(bad="#eeeeee")
    ax.imshow(np.ma.masked_invalid(values), cmap=colours, vmin=low, vmax=high, aspect="auto")
    for (row, column), value in np.ndenumerate(values):
        if np.isnan(value):
            continue
        shade = (value - low) / (high - low)
        label = f"{value * 100:.1f}%" if percent else f"{value:.3g}"
        colour = "white" if shade > 0.65 else "black"
        ax.text(column, row, label, ha="center", va="center", fontsize=7.5, color=colour)
    ax.set_xticks(range(values.shape[1]), [_wrapped(str(c)) for c in table.columns], fontsize=7.5)
    ax.xaxis.tick_top()
    ax.set_yticks(range(values.shape[0]), list(table.index), fontsize=8)
    ax.tick_params(length=0)
    pooled = [i for i, label in enumerate(table.index) if label not in levels]
    for boundary in sorted({pooled[0], *[i for i in pooled if table.index[i] == ALL_LEVELS]} if pooled else []):
        ax.axhline(boundary - 0.5, color="white", lw=2.5)
    ax.axvline(0.5, color="white", lw=2.5)  # the average apart from the strata
    for spine in ax.spines.values():
        spine.set_visible(False)


def _wrapped(label: str) -> str:
    return "\n".join(textwrap.wrap(label.replace("_", " "), 11)) or label
