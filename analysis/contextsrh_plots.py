"""ContextSRH's plot (issue 21): per attribute (a panel), each group's mean similarity of its context answers to the
answers without context, one marker per answering source, the group winning most often (% Win) ringed. Drawn on a
`Figure` without pyplot, as `analysis.plots` draws; `narrow` stacks the panels for a phone."""

from __future__ import annotations

import io

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from .contextsrh import group_order
from .contextsrh_summary import attribute_order
from .plots import COLOURS, FORMATS


def similarity_figure(similarity: pd.DataFrame, *, fmt: str = "svg", narrow: bool = False) -> bytes:
    """The figure as SVG or PNG bytes (an empty figure with a note when there is no similarity)."""
    if fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {', '.join(FORMATS)}, not {fmt!r}")
    shown = similarity[similarity["avg_similarity"].notna()]
    attributes = attribute_order(shown["attribute"].unique().tolist())
    sources = sorted(shown["source"].unique().tolist())
    palette = {source: COLOURS[index % len(COLOURS)] for index, source in enumerate(sources)}
    n_panels = max(len(attributes), 1)
    columns = 1 if narrow else min(3, n_panels)
    lines = -(-n_panels // columns)
    width = 4.6 if narrow else 11
    figure = Figure(figsize=(width, 2.9 * lines + 0.3 * len(sources) + 0.3), layout="constrained")
    axes = figure.subplots(lines, columns, squeeze=False).ravel()
    for ax, attribute in zip(axes, attributes, strict=False):
        rows = shown[shown["attribute"] == attribute]
        groups = group_order(rows["group"].unique().tolist())
        at = {group: index for index, group in enumerate(groups)}
        for source in sources:
            mine = rows[rows["source"] == source]
            xs = [at[g] for g in mine["group"]]
            ax.plot(xs, mine["avg_similarity"], "o-", color=palette[source], ms=5, linewidth=1)
            best = mine[mine["pct_win"] == mine["pct_win"].max()]
            ax.plot([at[g] for g in best["group"]], best["avg_similarity"], "o", ms=11, mfc="none",
                    color=palette[source])  # fmt: skip
        ax.set_xticks(range(len(groups)), groups, rotation=45 if len(groups) > 4 else 0, ha="right"
                      if len(groups) > 4 else "center", fontsize=8)  # fmt: skip
        ax.set_title(attribute.capitalize(), fontsize=10)
        ax.set_ylabel("mean cosine similarity", fontsize=8)
        ax.grid(axis="y", color="#dddddd", linewidth=0.6)
        ax.set_axisbelow(True)
    for ax in axes[len(attributes) :]:
        ax.set_visible(False)
    if not attributes:
        axes[0].set_visible(True)
        axes[0].text(0.5, 0.5, "No similarity yet", ha="center", va="center", transform=axes[0].transAxes)
        axes[0].set_axis_off()
    if sources:
        handles = [Line2D([], [], marker="o", color=palette[source], label=source) for source in sources]
        handles.append(Line2D([], [], marker="o", linestyle="", ms=11, mfc="none", color="#555555",
                              label="ringed: the group winning most often (% Win)"))  # fmt: skip
        figure.legend(handles=handles, loc="outside lower center", ncols=1 if narrow else 3, fontsize=8, frameon=False)
    buffer = io.BytesIO()
    figure.savefig(buffer, format=fmt, dpi=150, metadata={"Date": None} if fmt == "svg" else None)
    return buffer.getvalue()


def figure_description(similarity: pd.DataFrame) -> str:
    """The figure as text (its `alt`): per attribute and source, the group closest to the answer without context."""
    shown = similarity[similarity["avg_similarity"].notna()]
    if shown.empty:
        return "No similarity yet."
    parts = []
    for attribute in attribute_order(shown["attribute"].unique().tolist()):
        for source, rows in shown[shown["attribute"] == attribute].groupby("source", sort=True):
            top = rows.sort_values("avg_similarity", ascending=False, kind="stable").iloc[0]
            low = rows.sort_values("avg_similarity", kind="stable").iloc[0]
            parts.append(f"{attribute}, {source}: highest {top['group']} ({top['avg_similarity']:.2f}), lowest "
                         f"{low['group']} ({low['avg_similarity']:.2f})")  # fmt: skip
    return "Mean similarity of each group's context answers to the answers without context. " + "; ".join(parts) + "."
