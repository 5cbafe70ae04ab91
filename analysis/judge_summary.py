"""What the judge page says about a study's judge report (issue 19, "Pages"), in plain rows for a template.

Pure (no Django): it reads `agreement.csv` / `judge_assisted.csv` shaped frames (`analysis.judge_report`) and the
label frame of `judge_report.judge_labels`, and returns small dataclasses:

- `agreement_sections`: per field, one row per comparison (people vs people of a pool, a judge vs a pool, two
  judges) and level, the three metrics with their 95% intervals side by side.
- `flagged_findings`: the equity audit's flagged tests (a factor whose levels the judge agrees with a pool
  differently on, Holm-adjusted), each as one plain sentence naming the level with the least agreement.
- `assisted_rows`: per field, judge, pool and level, the people-only, judge-only and PPI estimates and the
  human items the judge saves (`n_human_equivalent - n_human`: PPI's interval width from people alone).
- `place_rows`: per field, judge and pool, the judge among the pool's individual people (each scored against
  the majority of the others), in percent agreement: the judge's score, the people's range, its rank.
- `consistency_rows`: per field and judge, its repeats' and display orders' consistency.
- `disagreements`: the items where a judge and the people of a pool disagree most (the share of the people's
  ratings differing from the judge's most frequent value), at most `limit`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as dataclass_field

import pandas as pd

from .judge_agreement import AGREEMENT_METRICS, HUMAN, JUDGE

METRIC_LABELS: Mapping[str, str] = {
    "percent_agreement": "Percent agreement",
    "cohen_kappa": "Cohen's kappa",
    "macro_f1": "Macro-F1",
}
METHODS = ("human_only", "judge_only", "ppi")
DISAGREEMENTS_SHOWN = 20


def _float(value: object) -> float | None:
    """A number from a table cell (NaN, empty or None: None)."""
    if value is None or value == "":
        return None
    number = float(str(value)) if not isinstance(value, (int, float)) else float(value)
    return None if math.isnan(number) else number


def _blank(frame: pd.DataFrame) -> pd.DataFrame:
    """Empty cells (NaN) as "" (object columns: a float column cannot hold text)."""
    return frame.astype(object).where(frame.notna(), "")


def _is_true(value: object) -> bool:
    return value is True or str(value) == "True"


def estimate_text(estimate: object, low: object, high: object, *, percent: bool = False) -> str:
    """`0.85 (0.78-0.92)`; `85% (78-92%)` for a share; `—` when not estimable."""
    point, lo, hi = _float(estimate), _float(low), _float(high)
    if point is None:
        return "—"
    if percent:
        shown = f"{point:.0%}"
        return shown if lo is None or hi is None else f"{shown} ({lo * 100:.0f}–{hi:.0%})"
    shown = f"{point:.2f}"
    return shown if lo is None or hi is None else f"{shown} ({lo:.2f}–{hi:.2f})"


def p_text(p: float) -> str:
    return "p < 0.0001" if p < 0.0001 else f"p = {p:.2g}" if p < 0.01 else f"p = {p:.2f}"


# --- Agreement --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AgreementRow:
    comparison: str  # "Physician vs Physician (people)", "Stand-in judge vs Physician"
    kind: str  # "people", "judge", "judges"
    level: str  # "" for all items
    n_items: int
    cells: tuple[str, ...]  # one per AGREEMENT_METRICS
    flagged: bool


@dataclass(frozen=True)
class AgreementSection:
    field: str
    rows: tuple[AgreementRow, ...]


def _comparison(a: str, b: str, kind_a: str, kind_b: str) -> tuple[str, str]:
    if kind_a == HUMAN:
        return f"{a} vs {b} (people)", "people"
    if kind_b == JUDGE:
        return f"{a} vs {b} (judges)", "judges"
    return f"{a} vs {b}", "judge"


KIND_ORDER = {"people": 0, "judge": 1, "judges": 2}


def agreement_sections(agreement: pd.DataFrame) -> list[AgreementSection]:
    """Per field, the comparisons over all items first (people, then judges), then per level the same. A row is
    flagged at the level a flagged test found the least agreement at (the test is about the factor; marking its
    best level too would read as a fault there)."""
    sections = []
    worst = {(f.field, f.judge, f.pool, f.levels[0][0]) for f in flagged_findings(agreement)}
    frame = _blank(agreement)
    for field_name, rows in frame.groupby("field", sort=True):
        found: dict[tuple[str, str, str, str, str], dict[str, object]] = {}
        for row in rows.to_dict("records"):
            key = (str(row["level"]), str(row["rater_a"]), str(row["rater_b"]), str(row["rater_a_kind"]),
                   str(row["rater_b_kind"]))  # fmt: skip
            entry = found.setdefault(key, {"n_items": 0, "flagged": False})
            entry[str(row["metric"])] = row
            entry["n_items"] = max(int(_float(row["n_items"]) or 0), int(str(entry["n_items"])))
            at_worst = (str(field_name), key[1], key[2], key[0]) in worst
            entry["flagged"] = bool(entry["flagged"]) or (_is_true(row["flag"]) and at_worst)
        built = []
        for (level, a, b, kind_a, kind_b), entry in found.items():
            comparison, kind = _comparison(a, b, kind_a, kind_b)
            cells = []
            for metric in AGREEMENT_METRICS:
                metric_row = entry.get(metric)
                if isinstance(metric_row, dict):
                    share = metric == "percent_agreement"
                    cells.append(estimate_text(metric_row["estimate"], metric_row["ci_low"], metric_row["ci_high"],
                                               percent=share))  # fmt: skip
                else:
                    cells.append("—")
            built.append(AgreementRow(comparison, kind, level, int(str(entry["n_items"])), tuple(cells),
                                      bool(entry["flagged"])))  # fmt: skip
        built.sort(key=lambda r: (r.level != "", r.level, KIND_ORDER[r.kind], r.comparison))
        sections.append(AgreementSection(str(field_name), tuple(built)))
    return sections


# --- The equity audit's flags -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    field: str
    judge: str
    pool: str
    factor: str
    sentence: str
    levels: tuple[tuple[str, float, int], ...]  # (level, percent agreement, items)
    p_adjusted: float


def flagged_findings(agreement: pd.DataFrame) -> list[Finding]:
    """One finding per flagged (field, judge, pool, factor): its levels' percent agreement, lowest first."""
    frame = _blank(agreement)
    rows = frame[
        (frame["metric"] == "percent_agreement")
        & (frame["level"] != "")
        & (frame["rater_a_kind"] == JUDGE)
        & (frame["rater_b_kind"] == HUMAN)
        & frame["flag"].map(_is_true)
    ]
    findings = []
    factor_of = rows["level"].astype(str).str.split("=", n=1).str[0]
    for (field_name, judge, pool, factor), group in rows.groupby(
        [rows["field"], rows["rater_a"], rows["rater_b"], factor_of], sort=True
    ):
        levels = sorted(
            (
                (str(level), estimate, int(_float(n) or 0))
                for level, value, n in zip(group["level"], group["estimate"], group["n_items"], strict=True)
                if (estimate := _float(value)) is not None
            ),
            key=lambda entry: (entry[1], entry[0]),
        )
        p = min((p for value in group["p_value"] if (p := _float(value)) is not None), default=math.nan)
        if not levels:
            continue
        worst, others = levels[0], levels[1:]
        compared = ", ".join(f"{share:.0%} for {level}" for level, share, _ in others) or "the other levels"
        sentence = (
            f"{judge} disagrees with {pool} raters more for {worst[0]}: {worst[1]:.0%} agreement vs {compared} "
            f"({field_name}; Holm-adjusted {p_text(p)})."
        )
        findings.append(Finding(str(field_name), str(judge), str(pool), str(factor), sentence, tuple(levels), p))
    return findings


# --- Judge-assisted estimates -----------------------------------------------------------------------------


@dataclass(frozen=True)
class AssistedRow:
    field: str
    judge: str
    pool: str
    level: str
    n_human: int
    n_judge: int
    cells: tuple[str, ...]  # one per METHODS
    saved: int | None  # human items the judge saves at PPI's interval width
    note: str


def assisted_rows(assisted: pd.DataFrame) -> list[AssistedRow]:
    frame = _blank(assisted)
    if frame.empty:
        return []
    found = []
    keys = ["field", "judge", "pool", "level"]
    for (field_name, judge, pool, level), group in frame.groupby(keys, sort=False):
        by_method = {str(row["method"]): row for row in group.to_dict("records")}
        cells = []
        for method in METHODS:
            row = by_method.get(method)
            cells.append("—" if row is None else estimate_text(row["estimate"], row["ci_low"], row["ci_high"],
                                                              percent=True))  # fmt: skip
        human = by_method.get("human_only") or {}
        ppi = by_method.get("ppi") or {}
        n_human = int(_float(human.get("n_human")) or 0)
        equivalent = _float(ppi.get("n_human_equivalent"))
        saved = None if equivalent is None else max(0, round(equivalent) - n_human)
        # Each method's note ends with the same slice note: its parts once each.
        notes = dict.fromkeys(part for row in by_method.values() for part in str(row["note"] or "").split("; ") if part)
        n_judge = int(_float((by_method.get("judge_only") or {}).get("n_judge")) or 0)
        found.append(AssistedRow(str(field_name), str(judge), str(pool), str(level), n_human, n_judge, tuple(cells),
                                 saved, "; ".join(notes)))  # fmt: skip
    found.sort(key=lambda r: (r.field, r.judge, r.pool, r.level != "", r.level))
    return found


# --- The judge among individual people, consistency ----------------------------------------------------------


@dataclass(frozen=True)
class PlaceRow:
    field: str
    judge: str
    pool: str
    n_people: int
    judge_score: str
    people_mean: str
    people_range: str  # "0.70–0.95"
    rank: str  # "2 of 6" (1 = above every person)
    share_matched: str  # "80%": the people the judge equals or beats on their own items
    sentence: str


PLACE_METRIC = "percent_agreement"


def place_rows(place: pd.DataFrame, metric: str = PLACE_METRIC) -> list[PlaceRow]:
    found = []
    for row in _blank(place[place["metric"] == metric]).to_dict("records"):
        n_people = int(_float(row["n_people"]) or 0)
        score, rank = _float(row["judge_score"]), _float(row["rank"])
        low, high, matched = _float(row["people_min"]), _float(row["people_max"]), _float(row["share_matched"])
        if score is None or rank is None or matched is None:
            sentence = f"Not estimable: no person of {row['pool']} shares items with another person and the judge."
            found.append(PlaceRow(str(row["field"]), str(row["judge"]), str(row["pool"]), n_people, "—", "—", "—",
                                  "—", "—", sentence))  # fmt: skip
            continue
        sentence = (
            f"{row['judge']} agrees with the majority of {row['pool']} raters {score:.0%} of the time; "
            f"{int(rank) - 1} of {n_people} people agree more often with the majority of the others."
        )
        found.append(
            PlaceRow(
                str(row["field"]), str(row["judge"]), str(row["pool"]), n_people, f"{score:.2f}",
                estimate_text(row["people_mean"], None, None), f"{low:.2f}–{high:.2f}",
                f"{int(rank)} of {n_people + 1}", f"{matched:.0%}", sentence,
            )
        )  # fmt: skip
    return found


@dataclass(frozen=True)
class ConsistencyRow:
    field: str
    judge: str
    check: str  # in words
    n_items: int
    share: str
    detail: str


def consistency_rows(consistency: pd.DataFrame) -> list[ConsistencyRow]:
    found = []
    for row in _blank(consistency).to_dict("records"):
        share = _float(row["share"])
        if row["check"] == "repeats":
            check = "Repeats agree"
            pairwise = _float(row["mean_pairwise_agreement"])
            detail = "" if pairwise is None else f"mean pairwise agreement {pairwise:.2f}"
        else:
            check = "Verdict survives swapping the answers"
            first = _float(row["first_shown_share"])
            detail = "" if first is None else f"{first:.0%} of position verdicts name the answer shown first"
        found.append(ConsistencyRow(str(row["field"]), str(row["judge"]), check, int(_float(row["n_items"]) or 0),
                                    "—" if share is None else f"{share:.0%}", detail))  # fmt: skip
    return found


# --- Where judge and people disagree most -----------------------------------------------------------------


@dataclass(frozen=True)
class Disagreement:
    item: int
    field: str
    judge: str
    pool: str
    judge_value: str
    people_majority: str  # the most frequent value ("a or b" on a tie)
    people_values: str  # "no_bias ×2, minor_bias ×1"
    disagreeing: float  # share of the people's ratings that differ from the judge's value
    n_people: int
    levels: str = ""  # the item's factor levels, "race=Black"
    judge_comments: list[str] = dataclass_field(default_factory=list)
    people_comments: list[tuple[str, str]] = dataclass_field(default_factory=list)  # (pseudonym, comment)


def _mode(values: pd.Series) -> str:
    """The most frequent value, ties to the value seen first (as `judge_agreement` counts a judge's repeats)."""
    counts = values.astype(str).value_counts(sort=False)
    return str(counts.idxmax())


def disagreements(
    labels: pd.DataFrame, *, factors: Sequence[str] = (), limit: int = DISAGREEMENTS_SHOWN
) -> list[Disagreement]:
    """The (item, field, judge, pool)s where most of the pool's ratings differ from the judge's value (most
    people first, then item id), only where at least one person differs; `factors`: the labels' level columns."""
    if labels.empty:
        return []
    judges = labels[labels["rater_kind"] == JUDGE]
    people = labels[labels["rater_kind"] == HUMAN]
    if judges.empty or people.empty:
        return []
    verdicts = judges.groupby(["item", "field", "rater"], sort=True)["value"].agg(_mode).rename("judge_value")
    joined = people.merge(verdicts.reset_index(), on=["item", "field"], suffixes=("", "_judge"))
    if joined.empty:
        return []
    joined = joined.assign(differs=joined["value"].astype(str) != joined["judge_value"].astype(str))
    found = []
    for (item, field_name, judge, pool), group in joined.groupby(["item", "field", "rater_judge", "pool"], sort=True):
        share = float(group["differs"].mean())
        if share == 0:
            continue
        counts = group["value"].astype(str).value_counts()
        top = counts[counts == counts.max()].index.tolist()
        found.append(
            Disagreement(
                item=int(str(item)),
                field=str(field_name),
                judge=str(judge),
                pool=str(pool),
                judge_value=str(group["judge_value"].iloc[0]),
                people_majority=" or ".join(sorted(str(value) for value in top)),
                people_values=", ".join(f"{value} ×{n}" for value, n in counts.items()),
                disagreeing=share,
                n_people=len(group),
                levels=", ".join(f"{f}={group[f].iloc[0]}" for f in factors if str(group[f].iloc[0])),
            )
        )
    found.sort(key=lambda d: (-d.disagreeing, -d.n_people, d.item, d.field, d.judge))
    return found[:limit]


def add_comments(found: list[Disagreement], results: pd.DataFrame, text_fields: list[str]) -> None:
    """Fill each disagreement's comments from the results table's text fields (the rubric's `text` questions):
    the judge's own rationale and the people's comments of the pool, as they wrote them."""
    if not found or not text_fields:
        return
    items = {d.item for d in found}
    rows = results[results["field"].isin(text_fields) & results["item"].isin(list(items))]
    rows = rows[rows["value"].notna() & (rows["value"].astype(str).str.strip() != "")]
    for d in found:
        mine = rows[rows["item"] == d.item]
        judged = mine[(mine["kind"] == JUDGE) & (mine["who"] == d.judge)]
        d.judge_comments.extend(dict.fromkeys(str(value) for value in judged["value"]))
        said = mine[(mine["kind"] == HUMAN) & (mine["pool"].astype(str) == d.pool)]
        d.people_comments.extend((str(who), str(value)) for who, value in zip(said["who"], said["value"], strict=True))
