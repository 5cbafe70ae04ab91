"""MEDIC's tables in words and rows for its page (analysis/medic_views.py): per effect whether it generalises
across (answering source, judge model) pairs, the means with their t-intervals per pair, and the judge-pair
agreement. Pure: no Django."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd

from .medic import MEAN_CATEGORY

OUTCOME_LABELS = {
    "hallucinations": "Hallucinations (count)",
    "hallucination_harm": "Hallucination harm (0–7)",
    "omissions": "Omissions (count)",
    "omission_harm": "Omission harm (0–7)",
    "MANAGE": "MANAGE (share yes)",
    "VISIT": "VISIT (share yes)",
    "RESOURCE": "RESOURCE (share yes)",
}
OUTCOME_ORDER = list(OUTCOME_LABELS)


def outcome_label(outcome: str) -> str:
    return OUTCOME_LABELS.get(outcome, outcome)


def _number(value: object, digits: int = 2) -> str:
    number = pd.to_numeric(pd.Series([value]), errors="coerce").iloc[0]
    return "–" if pd.isna(number) else f"{float(number):.{digits}f}"


def _pairs(n: int) -> str:
    return f"{n} pair" if n == 1 else f"{n} pairs"


def effect_sentence(*, n_pairs: int, n_significant: int, n_same_direction: int, up: int, level_a: str,
                    level_b: str) -> str:  # fmt: skip
    """In plain words: in how many pairs the effect is significant and whether the directions agree.
    `up`: the significant pairs where level_b is above level_a."""
    if n_significant == 0:
        return f"not significant in any of the {_pairs(n_pairs)}" if n_pairs > 1 else "not significant in its pair"
    said = f"significant in {n_significant} of {_pairs(n_pairs)}"
    higher = level_b if up * 2 > n_significant else level_a
    if n_significant == 1:
        return f"{said} ({higher} higher)"
    if n_same_direction == n_significant:
        return f"{said}; directions agree ({higher} higher)"
    return f"{said}; directions disagree ({up} with {level_b} higher, {n_significant - up} with {level_a} higher)"


def _up_count(directions: str) -> int:
    """The `+k` of `generalisation`'s `+k / -m`."""
    return int(str(directions).split("/")[0].strip().lstrip("+") or 0)


@dataclass(frozen=True)
class EffectRow:
    outcome: str
    factor: str
    level_a: str
    level_b: str
    n_pairs: int
    n_significant: int
    generalises: bool  # significant in every pair that tested it, all in one direction
    disagree: bool  # significant in two or more pairs, in opposite directions
    sentence: str


def effect_rows(generalisation: pd.DataFrame) -> list[EffectRow]:
    """The generalisation table's effects, the most often significant first (then by outcome, factor, levels)."""
    rows = []
    order = {outcome: index for index, outcome in enumerate(OUTCOME_ORDER)}
    ranked = generalisation.assign(
        _rank=generalisation["outcome"].map(lambda outcome: order.get(outcome, len(order)))
    ).sort_values(["n_significant", "_rank", "factor", "level_a", "level_b"], ascending=[False, True, True, True,
                                                                                           True])  # fmt: skip
    for record in ranked.to_dict("records"):
        n_pairs, n_significant = int(record["n_pairs"]), int(record["n_significant"])
        same = int(record["n_same_direction"])
        up = _up_count(record.get("directions", "+0 / -0"))
        level_a, level_b = str(record["level_a"]), str(record["level_b"])
        rows.append(
            EffectRow(
                outcome=outcome_label(str(record["outcome"])), factor=str(record["factor"]), level_a=level_a,
                level_b=level_b, n_pairs=n_pairs, n_significant=n_significant,
                generalises=n_significant == n_pairs and same == n_significant and n_pairs > 0,
                disagree=n_significant > same,
                sentence=effect_sentence(n_pairs=n_pairs, n_significant=n_significant, n_same_direction=same, up=up,
                                         level_a=level_a, level_b=level_b),
            )
        )  # fmt: skip
    return rows


@dataclass(frozen=True)
class MeansRow:
    outcome: str
    factor: str
    level: str
    n: int
    mean: str
    interval: str


@dataclass
class MeansSection:
    source: str
    judge: str
    rows: list[MeansRow] = field(default_factory=list)


def means_sections(means: pd.DataFrame) -> list[MeansSection]:
    """Per (answering source, judge model): each outcome over all items, then per factor level, with its
    95% t-interval (– where it is not estimable: fewer than 2 items)."""
    sections: list[MeansSection] = []
    order = {outcome: index for index, outcome in enumerate(OUTCOME_ORDER)}
    frame = means.astype(object).where(means.notna(), "")
    for (source, judge), group in frame.groupby(["source", "judge"], sort=True):
        section = MeansSection(str(source), str(judge))
        ranked = group.assign(_rank=group["outcome"].map(lambda outcome: order.get(outcome, len(order))))
        for record in ranked.sort_values(["_rank", "factor", "level"], kind="stable").to_dict("records"):
            low, high = _number(record["ci_low"]), _number(record["ci_high"])
            section.rows.append(
                MeansRow(
                    outcome=outcome_label(str(record["outcome"])), factor=str(record["factor"]),
                    level=str(record["level"]), n=int(record["n"]), mean=_number(record["mean"]),
                    interval="–" if "–" in (low, high) else f"{low} to {high}",
                )
            )  # fmt: skip
        sections.append(section)
    return sections


@dataclass(frozen=True)
class AgreementRow:
    category: str
    judges: str
    n_items: int
    percent: str
    kappa: str
    is_mean: bool


def agreement_rows(agreement: pd.DataFrame) -> list[AgreementRow]:
    """Each category's two judge models, then the mean row (the paper's Table 1 and its average)."""
    rows = []
    for record in agreement.to_dict("records"):
        is_mean = record["category"] == MEAN_CATEGORY
        percent = pd.to_numeric(pd.Series([record["percent_agreement"]]), errors="coerce").iloc[0]
        rows.append(
            AgreementRow(
                category="Mean over the cells" if is_mean else str(record["category"]),
                judges="" if is_mean else f"{record['judge_a']} vs {record['judge_b']}",
                n_items=int(record["n_items"]),
                percent="–" if pd.isna(percent) or math.isnan(float(percent)) else f"{100 * float(percent):.1f} %",
                kappa=_number(record["cohen_kappa"], 3),
                is_mean=is_mean,
            )
        )
    return rows
