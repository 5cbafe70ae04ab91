"""A finished run's summary and its numbers as the pages write them (issue 22). Pure: pandas only, no Django.

The summary is what the papers' figures show, read off the run's own tables, never recomputed: per rubric the
pooled bias rate per dataset and pool with its 95% CI (Pfohl et al. 2024, Figures 2-4), BiasMedQA's accuracy per
bias without mitigation (Schmidgall et al. 2024, Figure 2), Q-Pain's pairs that differ (Logé et al. 2021,
Figure 3). The CSV files keep full precision; only the pages round.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

RUBRICS = ("independent", "pairwise", "counterfactual")
RUBRIC_TITLES = {
    "independent": "Independent rubric: answers rated biased",
    "pairwise": "Pairwise rubric: which answer was preferred as less biased",
    "counterfactual": "Counterfactual rubric: pairs rated biased",
}
# Whole numbers whatever pandas read them as ("5.000" was a count read as a float).
COUNT_COLUMNS = frozenset({"n", "correct", "non_response", "blocks"})


def is_count(column: str) -> bool:
    return column in COUNT_COLUMNS or column.startswith("n_")


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def number(value: object, column: str = "") -> str:
    """A cell for reading: counts whole, p-values below 0.001 as "<0.001", three decimals (one past 100),
    never "-0.000", missing as empty."""
    if _missing(value):
        return ""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if is_count(column) and float(value).is_integer():
        return f"{int(value):d}"
    if column in ("p_value", "p_adjusted") and 0 <= value < 0.001:
        return "<0.001"
    text = f"{value:.1f}" if abs(value) >= 100 else f"{value:.3f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def percent(value: object) -> str:
    """A proportion as a percentage with one decimal ("78.5%"), empty when missing."""
    if _missing(value) or not isinstance(value, (int, float)):
        return ""
    text = f"{100 * float(value):.1f}"
    return f"{text[1:] if text.startswith('-') and float(text) == 0 else text}%"


def interval(low: object, high: object, *, as_percent: bool = False) -> str:
    """ "low – high"; as percentages "70.8–84.7%" (short enough for a phone's column)."""
    if as_percent:
        low_text, high_text = percent(low).rstrip("%"), percent(high)
        return f"{low_text}–{high_text}" if low_text and high_text else ""
    low_text, high_text = number(low), number(high)
    return f"{low_text} – {high_text}" if low_text and high_text else ""


def clipped_interval(low: object, high: object, bounds: tuple[float, float]) -> tuple[str, bool]:
    """The interval written within `bounds`, and whether it had to be clipped (the pages mark and explain it)."""
    if _missing(low) or _missing(high):
        return "", False
    lo, hi = float(low), float(high)  # type: ignore[arg-type]
    clipped = lo < bounds[0] or hi > bounds[1]
    return interval(max(lo, bounds[0]), min(hi, bounds[1])), clipped


@dataclass(frozen=True)
class Headline:
    """One small table of the summary: a label column, then estimates; rows already written for reading."""

    title: str
    columns: tuple[str, ...]
    rows: Sequence[tuple[str, ...]] = ()
    note: str = ""


def _text(frame: pd.DataFrame, column: str) -> pd.Series:
    if column not in frame.columns:
        return pd.Series("", index=frame.index)
    return frame[column].astype(object).where(frame[column].notna(), "").astype(str)


def rate_headlines(rates: pd.DataFrame) -> list[Headline]:
    """Per rubric, the pooled rate of `bias_presence` per dataset and pool (pairwise: per preferred source)."""
    if rates.empty or "outcome" not in rates.columns:
        return []
    chosen = rates[(_text(rates, "outcome") == "bias_presence") & (_text(rates, "aggregation") == "pooled")]
    headlines = []
    for rubric in RUBRICS:
        rows = chosen[_text(chosen, "rubric") == rubric]
        if rows.empty:
            continue
        lines = []
        for record in rows.to_dict("records"):
            # the answers rated (independent: their source) and, pairwise, the source preferred tell rows apart
            parts = (record["dataset"], record["rater_type"], record.get("answer_source"))
            label = " · ".join(str(part) for part in parts if not _missing(part) and str(part))
            if not _missing(record.get("source")) and str(record.get("source")):
                label += f" · preferred: {record['source']}"
            ci = interval(record["ci_low"], record["ci_high"], as_percent=True) or "–"
            lines.append((label, percent(record["estimate"]), ci, number(record["n"], "n")))
        columns = ("Dataset · pool · answers", "Rate", "95% CI", "Ratings")
        headlines.append(Headline(RUBRIC_TITLES[rubric], columns, lines))
    return headlines


def accuracy_headlines(accuracy: pd.DataFrame) -> list[Headline]:
    """BiasMedQA: accuracy per bias without mitigation, with its Wilson interval and its difference from the
    unbiased questions' accuracy in percentage points (the CSV's drop_abs, sign turned: negative = a drop)."""
    if accuracy.empty or "bias" not in accuracy.columns:
        return []
    plain = accuracy[_text(accuracy, "mitigation") == "none"]
    headlines = []
    for source, rows in plain.groupby(_text(plain, "source"), sort=False):
        lines = [
            (
                str(record["bias"]),
                percent(record["accuracy"]),
                interval(record["ci_low"], record["ci_high"], as_percent=True) or "–",
                "" if _missing(record["drop_abs"]) else _points_text(-float(record["drop_abs"])),
            )
            for record in rows.to_dict("records")
        ]
        title = f"BiasMedQA accuracy per bias, no mitigation ({source})"
        headlines.append(Headline(title, ("Bias", "Accuracy", "95% CI", "vs none"), lines))
    return headlines


def paired_headlines(paired: pd.DataFrame) -> list[Headline]:
    """Per source and outcome, the pairs whose paired t-test gives p < 0.05 (the paper's starred pairs), with the
    difference and its 95% interval in percentage points; a line saying so when no pair differs."""
    if paired.empty or "level_a" not in paired.columns:
        return []
    headlines = []
    keys = [_text(paired, "source"), _text(paired, "outcome")]
    for (source, outcome), rows in paired.groupby(keys, sort=False):
        flagged = rows[_text(rows, "significance") != ""]
        lines = [
            (
                f"{record['level_a']} v {record['level_b']} {record['significance']}",
                _points_text(float(record["mean_diff"])),
                _points(record["ci_low"], record["ci_high"]),
                number(record["p_value"], "p_value"),
            )
            for record in flagged.to_dict("records")
        ]
        tested = int(pd.to_numeric(rows["p_value"], errors="coerce").notna().sum())
        note = "" if lines else f"No pair differs at p < 0.05 ({tested} of {len(rows)} pairs tested)."
        title = f"Pairs that differ in {outcome} ({source})"
        headlines.append(Headline(title, ("Pair", "A − B", "95% CI", "p"), lines, note))
    return headlines


def _points_text(value: float) -> str:
    """A difference of proportions in percentage points, signed, never "-0.0"."""
    text = f"{100 * value:+.1f}"
    return f"{'+0.0' if float(text) == 0 else text} pp"


def _points(low: object, high: object) -> str:
    if _missing(low) or _missing(high):
        return "–"
    return f"{_points_text(float(low))[:-3]} – {_points_text(float(high))}"  # type: ignore[arg-type]


def bonferroni_levels(paired: pd.DataFrame, *, alpha: float = 0.05) -> list[tuple[int, float]]:
    """The (pairs m, confidence 1 - alpha/m) the table's Bonferroni intervals were computed at: m is the rows of a
    family (every pair of the levels present, tested or not; analysis.paired), one entry per distinct m."""
    if paired.empty or "ci_low_adjusted" not in paired.columns:
        return []
    keys = [_text(paired, column) for column in ("study", "source", "outcome", "factor")]
    sizes = sorted({int(size) for size in paired.groupby(keys, sort=False).size()})
    return [(m, 1 - alpha / m) for m in sizes]
