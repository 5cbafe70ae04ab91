"""An analysis plan's outcomes from the database: one row per scored answer, its factor levels and its outcome.

A plan reads the answers of one study (`study_id`: those linked to it, DESIGN.md "Answers belong to studies"), or
every answer in the database (no study: `analyze` without --study); of multiple-choice questions only, for choice
plans. Per answer: its source's name, each factor's level (the question's `levels`, else the answer's condition
`parameters["condition"]`, else the factor's reference level) and the outcome of the first of the plan's scorers
that scored it, at that scorer's highest version. Rows stream in chunks of plain values (no model instances) and
are kept as category codes: 216,288 BiasMedQA answers with two scores each load in a few seconds.
"""

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd
from django.db.models import Exists, OuterRef
from django.db.models.fields.json import KeyTextTransform, KeyTransform

from datasets.factors import REFERENCE_LEVEL
from datasets.models import Answer
from scoring import scorers
from scoring.models import Score
from scoring.services import score_missing

from .choice_accuracy import OUTCOMES
from .plans import AnalysisPlan
from .results import SCORER, results_table
from .results_frames import plan_outcomes

CHUNK = 20_000
CHOICE_KEY = "answer_idx"  # a multiple-choice question's metadata names its correct option


def plan_answers(plan: AnalysisPlan, study_id: int | None = None):
    """The answers a plan may read (of the study, if one is given; choice plans: answers to questions with a
    correct option; plans that compare factor levels: answers to questions carrying them)."""
    answers = Answer.objects.all() if study_id is None else Answer.objects.filter(study_links__study_id=study_id)
    if plan.multiple_choice:
        answers = answers.filter(question__metadata__has_key=CHOICE_KEY)
    if plan.requires_levels:
        answers = answers.filter(question__levels__has_keys=list(plan.requires_levels))
    return answers


def score_answers(plan: AnalysisPlan, study_id: int | None = None) -> None:
    """Runs the plan's automatic scorers on its answers that lack their current version's score."""
    for name in plan.run_scorers:
        scorer = scorers.current(name)
        current = Score.objects.filter(answer=OuterRef("pk"), scorer=scorer.name, version=scorer.version)
        # One anti-join says whether anything is missing; score_missing pages through every answer even when
        # nothing is (~25 s for BiasMedQA's 216,288), which every analysis would pay.
        if plan_answers(plan, study_id).filter(~Exists(current)).exists():
            score_missing(scorer=name, answers=plan_answers(plan, study_id))


def _scores(names, study_id: int | None):
    """The scores of these scorers (of the study's answers, if one is given), without joins or ordering otherwise."""
    found = Score.objects.filter(scorer__in=names).order_by()
    return found if study_id is None else found.filter(answer__study_links__study_id=study_id)


class _Codes:
    """Category codes of a column read row by row: each distinct value is kept once."""

    def __init__(self) -> None:
        self.codes: dict[Any, int] = {}
        self.values: list[str] = []

    def __call__(self, value: Any) -> int:
        code = self.codes.get(value)
        if code is None:
            code = self.codes[value] = len(self.values)
            self.values.append(str(value))
        return code

    def column(self, codes: Iterable[int]) -> pd.Categorical:
        return pd.Categorical.from_codes(np.fromiter(codes, dtype=np.int32), categories=pd.Index(self.values))


def _answer_levels(plan: AnalysisPlan, levels: list[str], study_id: int | None) -> pd.DataFrame:
    """Per answer of the plan: `answer_id`, `source` and each factor's level, as category columns."""
    # Levels are read as text (->>): no JSON decoding per row.
    extract = {}
    for index, factor in enumerate(levels):
        extract[f"question_{index}"] = KeyTextTransform(factor, "question__levels")
        extract[f"condition_{index}"] = KeyTextTransform(factor, KeyTransform("condition", "parameters"))
    rows = plan_answers(plan, study_id).order_by().annotate(**extract).values_list("id", "source__name", *extract)
    answer_ids: list[int] = []
    source, source_codes = _Codes(), []
    codes = {factor: _Codes() for factor in levels}
    columns: dict[str, list[int]] = {factor: [] for factor in levels}
    defaults = [plan.reference_levels.get(factor, REFERENCE_LEVEL) for factor in levels]
    for row in rows.iterator(chunk_size=CHUNK):
        answer_ids.append(row[0])
        source_codes.append(source(row[1]))
        for index, factor in enumerate(levels):
            level = row[2 + 2 * index]
            if level is None:
                level = row[3 + 2 * index]
            columns[factor].append(codes[factor](defaults[index] if level is None else level))
    frame = pd.DataFrame({"answer_id": np.array(answer_ids, dtype=np.int64), "source": source.column(source_codes)})
    for factor in levels:
        frame[factor] = codes[factor].column(columns[factor])
    return frame


def _preferred_scores(plan: AnalysisPlan, study_id: int | None) -> pd.DataFrame:
    """Per scored answer, `answer_id` and the `outcome` of the first of the plan's scorers, at its highest version."""
    preference = {scorer: rank for rank, scorer in enumerate(plan.scorers)}
    rows = _scores(plan.scorers, study_id).filter(outcome__in=OUTCOMES)
    answer_ids, ranks, versions, outcome_codes = [], [], [], []
    outcome = _Codes()
    for answer_id, scorer, version, found in rows.values_list("answer_id", "scorer", "version", "outcome").iterator(
        chunk_size=CHUNK
    ):
        answer_ids.append(answer_id)
        ranks.append(preference[scorer])
        versions.append(version)
        outcome_codes.append(outcome(found))
    frame = pd.DataFrame(
        {
            "answer_id": np.array(answer_ids, dtype=np.int64),
            "rank": np.array(ranks, dtype=np.int16),
            "version": np.array(versions, dtype=np.int32),
            "outcome": outcome.column(outcome_codes),
        }
    )
    return _first_preferred(frame)[["answer_id", "outcome"]]


def _first_preferred(frame: pd.DataFrame) -> pd.DataFrame:
    """Per answer, the row of the most preferred scorer (lowest `rank`) at its highest `version`."""
    frame = frame.sort_values(["answer_id", "rank", "version"], ascending=[True, True, False], kind="stable")
    return frame.drop_duplicates("answer_id", keep="first")


def _preferred_numbers(plan: AnalysisPlan, study_id: int | None) -> pd.DataFrame:
    """Per answer and outcome of a numeric plan, `answer_id`, `outcome` and `value`: the number of the first of
    the outcome's scorers that measured one, at that scorer's highest version; NaN when its scorers only found
    nothing to read (`missing`), so the statistics can say which blocks dropped out."""
    assert plan.outcomes is not None
    frames = []
    for outcome, names in plan.outcomes.items():
        preference = {scorer: rank for rank, scorer in enumerate(names)}
        rows = _scores(names, study_id).filter(outcome__in=scorers.NUMERIC_OUTCOMES)
        answer_ids, ranks, versions, numbers = [], [], [], []
        for answer_id, scorer, version, number in rows.values_list("answer_id", "scorer", "version", "number").iterator(
            chunk_size=CHUNK
        ):
            answer_ids.append(answer_id)
            # A measured number from any scorer comes before every `missing` one.
            ranks.append(preference[scorer] + (0 if number is not None else len(names)))
            versions.append(version)
            numbers.append(np.nan if number is None else number)
        frame = pd.DataFrame(
            {
                "answer_id": np.array(answer_ids, dtype=np.int64),
                "rank": np.array(ranks, dtype=np.int16),
                "version": np.array(versions, dtype=np.int32),
                "value": np.array(numbers, dtype=np.float64),
            }
        )
        frames.append(_first_preferred(frame)[["answer_id", "value"]].assign(outcome=outcome))
    found = pd.concat(frames, ignore_index=True)
    found["outcome"] = pd.Categorical(found["outcome"], categories=list(plan.outcomes))
    return found


def load_outcomes(plan: AnalysisPlan, study_id: int | None = None) -> pd.DataFrame:
    """One row per scored answer of the plan: its `factors` columns and `outcome` (see the module docstring);
    a numeric plan: one row per (answer, outcome) its scorers scored, with a `value` column (NaN: not readable)."""
    levels = [factor for factor in plan.factors if factor != "source"]
    # Two lean queries (answers' levels, scores without joins) merged here: half the rows of one joined query
    # and no JSON decoding, ~3x faster at BiasMedQA's scale (benchmarks/analysis_plan.py).
    answers = _answer_levels(plan, levels, study_id)
    if plan.numeric:
        numbers = answers.merge(_preferred_numbers(plan, study_id), on="answer_id", how="inner", sort=True)
        return numbers[[*plan.factors, "outcome", "value"]].reset_index(drop=True)
    scores = _preferred_scores(plan, study_id)
    outcomes = answers.merge(scores, on="answer_id", how="inner", sort=True)
    return outcomes[[*plan.factors, "outcome"]].reset_index(drop=True)


def plan_table(plan: AnalysisPlan, study_id: int | None = None) -> pd.DataFrame | None:
    """The plan's table over the study's answers (None: every answer in the database); None when no answer of
    the plan has a score."""
    if not plan_answers(plan, study_id).exists():
        return None
    score_answers(plan, study_id)
    outcomes = load_outcomes(plan, study_id)
    if outcomes.empty:
        return None
    return plan.compute(outcomes)


def study_plan_table(plan: AnalysisPlan, study) -> pd.DataFrame | None:
    """The plan's table over a study's answers, computed from the study's results table (its rows of the plan's
    scorers only: analysis/DESIGN.md, "The results table"); None when no answer of the plan has a score."""
    if not plan_answers(plan, study.pk).exists():
        return None
    score_answers(plan, study.pk)
    outcomes = plan_outcomes(results_table(study, kinds=[SCORER], scorers=plan.scorers), plan)
    if outcomes.empty:
        return None
    return plan.compute(outcomes)


def table_csv(table: pd.DataFrame) -> str:
    """A plan table as CSV text: what `analyze` writes and a run stores (full precision, empty for NaN)."""
    return str(table.to_csv(index=False))
