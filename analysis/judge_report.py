"""A study's judge report (issue 19): `agreement.csv` and `judge_assisted.csv` from its results table.

The statistics are `analysis.judge_agreement`'s and `analysis.ppi`'s; this module turns the results table's
rating rows (kinds `human` and `judge`) into their long label frame and picks the fields they apply to:

- Fields: the rubric's questions with one value per rating (types `single` and `scale`): a multiple choice, a
  text or a span has no single label to agree on.
- Positions: a two-answer rating names the position shown (`answer_1` / `answer_2`); a rater who saw the answers
  swapped meant the other one, so the label is turned back to the item's own answer before raters are compared.
- Levels: the factor levels of the item's question (`levels` JSON), one column per factor found, so agreement and
  the equity audit are computed per level of each.
- Attention checks are left out (they are not the study's items).
- References: labels someone else made (a study file's `references`, read from a scorer's scores by the caller)
  join as one more pool of people: kind `human`, `who` and `pool` the reference's name, so agreement.csv has
  judge-vs-reference rows (rater_b the name, rater_b_kind `human`) and the page shows them beside the pools.
- Judge-assisted rows say in `note` whether people's items were a random slice by design (the study file's
  `human_slice`): PPI's interval assumes they were.
- Judge-assisted estimates need a positive label per field: the question's `positive` options when its rubric
  names them, else EquityMedQA's "any bias" (`minor_bias`, `severe_bias`, `yes`, as `analysis.outcomes` counts
  it); a field with neither gets no rows.

Pure: no Django (the caller loads the results table).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .judge_agreement import HUMAN, JUDGE, agreement_table, consistency_table, judge_place_table
from .ppi import JUDGE_ASSISTED_COLUMNS, judge_assisted_table

SINGLE_VALUED = ("single", "scale")
SWAPPED_POSITION = {"answer_1": "answer_2", "answer_2": "answer_1"}
# EquityMedQA's bias questions: a rating finds bias when it is not "no bias" (analysis/outcomes.py).
ANY_BIAS = ("minor_bias", "severe_bias", "yes")
KNOWN_POSITIVE: Mapping[str, tuple[str, ...]] = {"bias_presence": ANY_BIAS}
POSITIVE = "1"


NOT_RANDOM = "people's items were not drawn at random: PPI's interval assumes they were"
REFERENCE_COLUMNS = ["item", "who", "field", "value"]
TABLE_ATTRIBUTES = {
    "agreement": "agreement",
    "judge_assisted": "judge_assisted",
    "judge_place": "place",
    "judge_consistency": "consistency",
}


def slice_note(human_slice: Mapping[str, object] | None) -> str:
    """Whether people's items are a random slice by design (the study file's `human_slice`), in words."""
    if not human_slice:
        return NOT_RANDOM
    seed = human_slice.get("seed", 0)
    if "items" in human_slice:
        return f"random slice of {human_slice['items']} items, seed {seed}"
    percent = round(float(str(human_slice["share"])) * 100, 4)
    return f"random slice of {percent:g}%, seed {seed}"


def with_references(results: pd.DataFrame, references: pd.DataFrame) -> pd.DataFrame:
    """The results table with the reference labels (`REFERENCE_COLUMNS`: item, the reference's name, field, the
    label) as rating rows of one more pool: kind `human`, `who` and `pool` the name, the item's levels."""
    if references.empty:
        return results
    levels = results.dropna(subset=["item"]).drop_duplicates("item").set_index("item")["levels"]
    rows = pd.DataFrame(
        {
            "item": references["item"].astype("int64"),
            "who": references["who"].astype(str),
            "kind": HUMAN,
            "pool": references["who"].astype(str),
            "field": references["field"].astype(str),
            "value": references["value"].astype(str),
            "swapped": False,
            "attention_check": False,
        }
    )
    rows["levels"] = rows["item"].map(levels)
    return pd.concat([results, rows], ignore_index=True)


@dataclass(frozen=True)
class JudgeReport:
    agreement: pd.DataFrame
    judge_assisted: pd.DataFrame
    place: pd.DataFrame  # judge_place.csv: each judge among the pool's individual people
    consistency: pd.DataFrame  # judge_consistency.csv: repeats and display orders
    factors: tuple[str, ...]
    fields: tuple[str, ...]

    def tables(self) -> dict[str, pd.DataFrame]:
        """{file name without `.csv`: table}, as `analyze --study` writes them and the judge page offers them."""
        return {name: getattr(self, attribute) for name, attribute in TABLE_ATTRIBUTES.items()}


def rated_fields(definition: Mapping[str, object]) -> dict[str, tuple[str, ...]]:
    """{question key: its positive options (empty: none known)} of the rubric's single-valued questions."""
    questions = definition.get("questions", [])
    found: dict[str, tuple[str, ...]] = {}
    for question in questions if isinstance(questions, list) else []:
        if isinstance(question, dict) and question.get("type") in SINGLE_VALUED:
            key = str(question["key"])
            positive = question.get("positive")
            found[key] = tuple(str(p) for p in positive) if isinstance(positive, list) else KNOWN_POSITIVE.get(key, ())
    return found


def _level_columns(levels: pd.Series) -> pd.DataFrame:
    """One column per factor found in the rows' `levels` JSON (parsed once per distinct text)."""
    texts = levels.astype(str)
    parsed = {text: json.loads(text) if text and text != "nan" else {} for text in texts.unique()}
    factors = sorted({factor for level in parsed.values() for factor in level})
    columns = {factor: texts.map({t: str(p.get(factor, "")) for t, p in parsed.items()}) for factor in factors}
    return pd.DataFrame(columns, index=levels.index)


def judge_labels(results: pd.DataFrame, fields: Sequence[str]) -> tuple[pd.DataFrame, tuple[str, ...]]:
    """(labels, factors): the rating rows of these fields as `analysis.judge_agreement`'s long frame (item, rater,
    rater_kind, pool, field, value, swapped and one column per factor), positions turned back to the item's
    answers."""
    rows = results[results["kind"].isin([HUMAN, JUDGE]) & results["field"].isin(list(fields))]
    rows = rows[~rows["attention_check"].fillna(False).astype(bool)]
    rows = rows[rows["value"].notna() & (rows["value"].astype(str) != "")]
    value = rows["value"].astype(str)
    shown_swapped = rows["swapped"].fillna(False).astype(bool)
    value = value.where(~(shown_swapped & value.isin(list(SWAPPED_POSITION))), value.map(SWAPPED_POSITION))
    labels = pd.DataFrame(
        {
            "item": rows["item"].astype("int64"),
            "rater": rows["who"].astype(str),
            "rater_kind": rows["kind"].astype(str),
            "pool": rows["pool"].astype(str).replace("nan", ""),
            "field": rows["field"].astype(str),
            "value": value,
            "swapped": shown_swapped,  # the position check needs the order shown
        }
    )
    levels = _level_columns(rows["levels"])
    return pd.concat([labels, levels], axis=1).reset_index(drop=True), tuple(levels.columns)


def has_judges_and_people(labels: pd.DataFrame) -> bool:
    kinds = set(labels["rater_kind"].unique())
    return HUMAN in kinds and JUDGE in kinds


def _binary(labels: pd.DataFrame, positives: Mapping[str, tuple[str, ...]]) -> pd.DataFrame:
    """The fields with a known positive label, valued "1" (positive) or "0"."""
    known = labels[labels["field"].map(lambda field: bool(positives.get(field)))]
    positive = [value in positives[field] for field, value in zip(known["field"], known["value"], strict=True)]
    return known.assign(value=np.where(positive, POSITIVE, "0"))


def judge_report(
    results: pd.DataFrame,
    definition: Mapping[str, object],
    *,
    study: str,
    seed: int = 0,
    resamples: int = 1000,
    human_slice: Mapping[str, object] | None = None,
    references: Sequence[str] = (),
) -> JudgeReport | None:
    """The study's two judge tables, or None when no field was rated by both people and a judge. `references`:
    the pools that are labels made elsewhere (never a random slice); `human_slice`: the people's slice."""
    fields = rated_fields(definition)
    labels, factors = judge_labels(results, list(fields))
    if labels.empty or not has_judges_and_people(labels):
        return None
    agreement = agreement_table(labels, study=study, factors=factors, seed=seed, resamples=resamples)
    # A reference is one set of labels, not people who could agree with one another.
    own = agreement["rater_a"].isin(list(references)) & (agreement["rater_a_kind"] == HUMAN)
    agreement = agreement[~own].reset_index(drop=True)
    place = judge_place_table(labels, study=study)
    place = place[~place["pool"].isin(list(references))].reset_index(drop=True)
    consistency = consistency_table(labels, study=study)
    binary = _binary(labels, fields)
    if binary.empty or not has_judges_and_people(binary):
        assisted = pd.DataFrame(columns=JUDGE_ASSISTED_COLUMNS)
    else:
        assisted = judge_assisted_table(binary, study=study, factors=factors, positive=POSITIVE)
        assisted["note"] = [
            "; ".join(part for part in (str(note or ""), NOT_RANDOM if pool in references else slice_note(human_slice))
                      if part)
            for note, pool in zip(assisted["note"], assisted["pool"], strict=True)
        ]  # fmt: skip
    return JudgeReport(agreement, assisted, place, consistency, factors, tuple(fields))
