"""MEDIC's generalisation plot: per outcome (a panel), each effect (two levels of a factor, a row) with one point
per (answering source, judge model) pair at the difference of the means (level b - level a), filled when
significant after Holm, hollow when not. An effect that generalises has filled points on one side of zero in every
pair. Drawn on a `Figure` without pyplot, as `analysis.plots` draws; `narrow` stacks the panels for a phone.

Which effects: those significant in at least one pair (or, when none is, every tested effect), at most
`MAX_EFFECTS` per outcome, the most often significant first; the page and the CSV have all of them."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from .medic_summary import OUTCOME_ORDER, outcome_label
from .plots import COLOURS, FORMATS

MAX_EFFECTS = 12
EFFECT = ["outcome", "factor", "level_a", "level_b"]


def plotted_tests(tests: pd.DataFrame) -> pd.DataFrame:
    """The `level_tests` rows the figure draws (see the module docstring), with `effect` and `pair` labels."""
    tested = tests[tests["p_value"].notna()].copy()
    if tested.empty:
        return tested.assign(effect=[], pair=[])
    tested["significant"] = tested["significant"].astype(bool)
    counts = tested.groupby(EFFECT)["significant"].sum().rename("n_significant")
    spread = tested.groupby(EFFECT)["difference"].apply(lambda d: float(np.abs(d).max())).rename("spread")
    effects = pd.concat([counts, spread], axis=1).reset_index()
    if effects["n_significant"].any():
        effects = effects[effects["n_significant"] > 0]
    effects = effects.sort_values(["n_significant", "spread"], ascending=False, kind="stable")
    effects = effects.groupby("outcome", sort=False).head(MAX_EFFECTS)
    chosen = tested.merge(effects[EFFECT], on=EFFECT)
    chosen["effect"] = chosen["factor"] + ": " + chosen["level_b"] + " − " + chosen["level_a"]
    chosen["pair"] = chosen["source"] + " · " + chosen["judge"]
    return chosen


def generalisation_figure(tests: pd.DataFrame, *, fmt: str = "svg", narrow: bool = False) -> bytes:
    """The figure as SVG or PNG bytes (an empty figure with a note when no effect was tested)."""
    if fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {', '.join(FORMATS)}, not {fmt!r}")
    chosen = plotted_tests(tests)
    present = set(chosen["outcome"]) if not chosen.empty else set()
    outcomes = [o for o in OUTCOME_ORDER if o in present] + sorted(present - set(OUTCOME_ORDER))
    pairs = sorted(chosen["pair"].unique().tolist()) if not chosen.empty else []
    palette = {pair: COLOURS[index % len(COLOURS)] for index, pair in enumerate(pairs)}
    n_panels = max(len(outcomes), 1)
    columns = 1 if narrow else min(2, n_panels)
    lines = -(-n_panels // columns)
    most = max((chosen[chosen["outcome"] == o]["effect"].nunique() for o in outcomes), default=1)
    panel_height = 0.9 + 0.42 * most
    width = 4.6 if narrow else 10.5
    figure = Figure(figsize=(width, panel_height * lines + 0.3 * len(pairs) + 0.4), layout="constrained")
    axes = figure.subplots(lines, columns, squeeze=False).ravel()
    offsets = {pair: (index - (len(pairs) - 1) / 2) * min(0.6 / max(len(pairs), 1), 0.18)
               for index, pair in enumerate(pairs)}  # fmt: skip
    for ax, outcome in zip(axes, outcomes, strict=False):
        rows = chosen[chosen["outcome"] == outcome]
        effects = list(dict.fromkeys(rows["effect"]))
        at = {effect: len(effects) - 1 - index for index, effect in enumerate(effects)}
        for record in rows.to_dict("records"):
            y = at[record["effect"]] - offsets[record["pair"]]  # the first pair on top, as in the legend
            colour = palette[record["pair"]]
            face = colour if record["significant"] else "white"
            ax.plot([record["difference"]], [y], "o", color=colour, mfc=face, ms=6)
        ax.axvline(0, color="#888888", linewidth=0.8)
        ax.set_yticks(list(at.values()), list(at))
        ax.set_ylim(-0.6, max(len(effects), 1) - 0.4)
        ax.grid(axis="x", color="#dddddd", linewidth=0.6)
        ax.set_axisbelow(True)
        ax.set_title(outcome_label(outcome), fontsize=10)
        ax.tick_params(axis="y", labelsize=8)
    for ax in axes[len(outcomes) :]:
        ax.set_visible(False)
    if not outcomes:
        axes[0].set_visible(True)
        axes[0].text(0.5, 0.5, "No effect was tested", ha="center", va="center", transform=axes[0].transAxes)
        axes[0].set_axis_off()
    if pairs:
        handles = [Line2D([], [], marker="o", linestyle="", color=palette[pair], label=pair) for pair in pairs]
        handles.append(Line2D([], [], marker="o", linestyle="", color="#555555", mfc="white",
                              label="hollow: not significant (Holm)"))  # fmt: skip
        figure.legend(handles=handles, loc="outside lower center", ncols=1 if narrow else 2, fontsize=8, frameon=False)
    buffer = io.BytesIO()
    figure.savefig(buffer, format=fmt, dpi=150, metadata={"Date": None} if fmt == "svg" else None)
    return buffer.getvalue()


def figure_description(tests: pd.DataFrame) -> str:
    """The figure as text (its `alt`)."""
    chosen = plotted_tests(tests)
    if chosen.empty:
        return "No effect was tested: no factor has two levels with two or more judged items each."
    parts = []
    for (outcome, effect), rows in chosen.groupby(["outcome", "effect"], sort=False):
        significant = rows[rows["significant"]]
        said = ", ".join(f"{record['pair']} {record['difference']:+.2f}" for record in significant.to_dict("records"))
        parts.append(f"{outcome_label(str(outcome))}, {effect}: significant in {len(significant)} of {len(rows)} "
                     f"pairs" + (f" ({said})" if said else ""))  # fmt: skip
    return "Differences between levels per (answering source, judge model) pair. " + "; ".join(parts) + "."
