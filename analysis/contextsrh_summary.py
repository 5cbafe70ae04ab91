"""The ContextSRH page's tables in reading form (issue 21): Table 1 of the paper per attribute (a row per group, per
answering source its mean similarity, % Win and % Human), the group tests in a sentence each, and the people's
agreement. Numbers are formatted for reading here; the CSVs keep full precision."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from .contextsrh import FRIEDMAN, WILCOXON, group_order

ATTRIBUTE_ORDER = ["age", "sex", "location"]  # the paper's Table 1
DASH = "–"


def attribute_order(attributes: list[str]) -> list[str]:
    return [a for a in ATTRIBUTE_ORDER if a in attributes] + sorted(set(attributes) - set(ATTRIBUTE_ORDER))


def _number(value: Any, digits: int) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return DASH
    text = f"{float(value):.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text  # never "-0.00"


def table1_sections(similarity: pd.DataFrame) -> list[dict[str, Any]]:
    """Per attribute: its sources (columns) and a row per group with (Avg, % Win, % Human) per source."""
    sections = []
    for attribute in attribute_order(similarity["attribute"].unique().tolist()):
        rows_of = similarity[similarity["attribute"] == attribute]
        sources = sorted(rows_of["source"].unique().tolist())
        by_key = {(r["source"], r["group"]): r for r in rows_of.to_dict("records")}
        rows = []
        for group in group_order(rows_of["group"].unique().tolist()):
            cells = []
            for source in sources:
                record = by_key.get((source, group))
                if record is None:
                    cells.append({"avg": DASH, "win": DASH, "human": DASH, "n": 0})
                    continue
                cells.append({"avg": _number(record["avg_similarity"], 2), "win": _number(record["pct_win"], 1),
                              "human": _number(record["pct_human"], 1), "n": int(record["n_questions"])})  # fmt: skip
            rows.append({"group": group, "cells": cells})
        n_questions = int(rows_of["n_questions"].max()) if len(rows_of) else 0
        sections.append({"attribute": attribute, "sources": sources, "rows": rows, "n_questions": n_questions})
    return sections


def test_rows(tests: pd.DataFrame) -> list[dict[str, Any]]:
    """Each (source, attribute)'s test in a sentence."""
    rows = []
    for record in tests.to_dict("records"):
        name = {FRIEDMAN: "Friedman's test", WILCOXON: "Wilcoxon's signed-rank test"}.get(record["test"], "No test")
        blocks = int(record["n_blocks"])
        dropped = int(record["n_dropped"])
        over = f"over {blocks} question{'s' if blocks != 1 else ''}"
        if dropped:
            over += f" ({dropped} dropped: a group's similarity missing)"
        statistic = record["statistic"]
        if statistic is None or (isinstance(statistic, float) and math.isnan(statistic)):
            sentence = f"{name} could not be run {over}: it needs at least two complete questions."
        else:
            p = float(record["p_value"])
            verdict = "the groups differ (p < 0.05)" if p < 0.05 else "no difference shown at p < 0.05"
            sentence = (f"{name} {over}: statistic {_number(statistic, 2)}, p = {_p(p)}; {verdict}.")  # fmt: skip
        rows.append({"source": record["source"], "attribute": record["attribute"], "sentence": sentence,
                     "significant": statistic == statistic and float(record["p_value"]) < 0.05})  # fmt: skip
    order = {a: i for i, a in enumerate(attribute_order([r["attribute"] for r in rows]))}
    return sorted(rows, key=lambda r: (order[r["attribute"]], r["source"]))


def _p(p: float) -> str:
    return "< 0.0001" if p < 0.0001 else f"{p:.4f}"


def agreement_rows(agreement: pd.DataFrame) -> list[dict[str, Any]]:
    rows = []
    for record in agreement.to_dict("records"):
        rows.append({
            "source": record["source"], "attribute": record["attribute"],
            "n_questions": int(record["n_questions"]), "n_units": int(record["n_units"]),
            "n_raters": int(record["n_raters"]), "kappa": _number(record["cohen_kappa"], 2),
            "alpha": _number(record["krippendorff_alpha"], 2),
            "n_not_applicable": int(record["n_not_applicable"]), "n_failed_gate": int(record["n_failed_gate"]),
        })  # fmt: skip
    order = {a: i for i, a in enumerate(attribute_order([r["attribute"] for r in rows]))}
    return sorted(rows, key=lambda r: (order[r["attribute"]], r["source"]))
