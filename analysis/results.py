"""A study's observations as one long table (analysis/DESIGN.md, "The results table").

One row per observation: a field a person rated (kind `human`), a field a judge rated (kind `judge`: the same
rows with `who` the judge's name, `pool` empty and `repeat` its repeat), or a score (kind `scorer`). Columns
(`RESULT_COLUMNS`; the first twelve are the contract of `export_results`):

- `study`: the study's name. `item`: the rated item's id (empty for scores). `answer`: the answer the row is
  about (an item's answer 1 for an item showing two); `answer_2`, `source_2`: an item's second answer and its
  source. `question`: the external id of the answer's question (a counterfactual item: its question 1;
  `question_2` its question 2), `dataset` that question's dataset (as the ratings export names it),
  `base_question`: the external id of the question it was made from (empty for a base question).
- `levels`: the question's factor levels as JSON with sorted keys (`{}`: none). `condition`: the answer's
  `parameters["condition"]` as stored, JSON with sorted keys (empty: the answer has none). `source`: the
  answer's source name. `multiple_choice`: the question names a correct option (`metadata["answer_idx"]`).
- `who`: the rater's pseudonym, or `<scorer> v<version>`. `pool`: the rater's pool (empty for scores).
  `rubric`: the rating's rubric version (`EquityMedQA independent v1`). `swapped`: the rater saw the item's
  answer 2 as "Answer 1" (a stored value `answer_1` / `answer_2` names the position shown). `attention_check`: the
  item is an attention check (counted, as the ratings export counts it; filter it out if you wish).
  `attention_check_passed` (the last column): the rating's stored result of its attention check (True, False;
  empty when the item checks nothing, and for judges and scores), as the ratings export's column.
- `field`, `value`. A rating gives one row per key of its stored `values`: a text or choice as stored (option
  keys, e.g. `minor_bias`), a list (a multiple choice, e.g. `dimensions`) one row per element in stored order
  and one row with an empty value when nothing was chosen (answered, none chosen; a question not asked has no
  row), an object (a span) as JSON with sorted keys. A score gives one row, field = the scorer's name, value =
  its number when its outcome is `measured` (a float), else its outcome (`correct`, `wrong`, `non_response`,
  `missing`). Every stored version of a score is a row of its own.
- `rater_age_group`, `rater_gender`, `rater_race_ethnicity`: what the rater told us at onboarding (the release's
  columns; race/ethnicity `"; "`-joined), for the consumer regression.

Which rows: the study's current ratings of assignments not withdrawn (`studies.exports.counted_ratings`: what the
ratings export and the analysis count), and every score of the study's answers (its `StudyAnswer` links and the
answers of its items), and every judge rating of its items. Loaded set-based: five queries whatever the size,
text columns kept as categoricals.
"""

import functools
import json
import operator
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from django.db.models import BooleanField, ExpressionWrapper, Q, TextField
from django.db.models.fields.json import KeyTransform
from django.db.models.functions import Cast, Coalesce

from datasets.models import Answer
from scoring.models import Score
from studies.exports import counted_ratings, stream_csv
from studies.models import JudgeRating, Study, StudyAnswer, StudyItem

from .results_frames import HUMAN, JUDGE, SCORER, release_frames

RESULT_KINDS = (HUMAN, JUDGE, SCORER)

__all__ = ["HUMAN", "JUDGE", "SCORER", "RESULT_COLUMNS", "results_table", "studies_frames", "write_results"]
CONTRACT_COLUMNS = ["study", "item", "question", "base_question", "levels", "condition", "source", "who", "kind",
                    "pool", "field", "value"]  # fmt: skip
RATER_COLUMNS = ["rater_age_group", "rater_gender", "rater_race_ethnicity"]
RESULT_COLUMNS = [
    *CONTRACT_COLUMNS,
    *["dataset", "answer", "question_2", "answer_2", "source_2", "rubric", "swapped", "attention_check"],
    "multiple_choice",
    *RATER_COLUMNS,
    "repeat",
    "attention_check_passed",
]
SORT_COLUMNS = ["study", "kind", "item", "answer", "who", "field"]  # then a rating's stored order of a list
CHOICE_KEY = "answer_idx"  # a multiple-choice question's metadata names its correct option
CHUNK = 20_000
RACE_SEPARATOR = "; "  # as the ratings export joins a rater's categories
_TEXT = [*["study", "question", "base_question", "levels", "condition", "source", "who", "kind", "pool", "field"],
         *["dataset", "question_2", "source_2", "rubric", *RATER_COLUMNS]]  # fmt: skip


def study_answers(study):
    """The study's answers: linked to it (`StudyAnswer`) or shown by one of its items."""
    items = StudyItem.objects.filter(study=study).order_by()
    return Answer.objects.filter(
        Q(id__in=StudyAnswer.objects.filter(study=study).values("answer_id"))
        | Q(id__in=items.filter(answer__isnull=False).values("answer_id"))
        | Q(id__in=items.filter(answer_1__isnull=False).values("answer_1_id"))
        | Q(id__in=items.filter(answer_2__isnull=False).values("answer_2_id"))
    )


def _canonical(texts: pd.Series) -> pd.Series:
    """JSON texts (as the database writes them) as JSON with sorted keys, None where NULL; each distinct text
    parsed once."""
    codes, uniques = pd.factorize(texts, use_na_sentinel=True)
    canonical = [json.dumps(json.loads(text), sort_keys=True, ensure_ascii=False) for text in uniques]
    return pd.Series(np.array([*canonical, None], dtype=object)[codes], index=texts.index)


def _category(series: pd.Series, first: list[str] | None = None) -> pd.Series:
    """Text as a categorical with sorted categories ("" where empty), so sorting on it sorts by the text; the
    values are hashed once. `first`: texts that come first, in the order given (the database's, for raters)."""
    codes, uniques = pd.factorize(series.fillna(""))
    labels = np.asarray(uniques, dtype=object).astype(str)
    order = np.argsort(labels, kind="stable")
    if first:  # the texts given, by their rank, then the rest in code-point order
        given = {text: rank for rank, text in enumerate(first)}
        keys = [(0, given[label], "") if label in given else (1, 0, label) for label in labels]
        order = np.array(sorted(range(len(labels)), key=keys.__getitem__), dtype=np.int64)
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    categorical = pd.Categorical.from_codes(rank[codes], categories=pd.Index(labels[order], dtype=object))
    return pd.Series(categorical, index=series.index)


def _frame(rows: Iterable[tuple], columns: list[str]) -> pd.DataFrame:
    return pd.DataFrame.from_records(list(rows), columns=columns)


def shown_answers(item_ids):
    """The answers shown by these items (one or two per item)."""
    items = StudyItem.objects.filter(id__in=item_ids).order_by()
    return Answer.objects.filter(
        Q(id__in=items.filter(answer__isnull=False).values("answer_id"))
        | Q(id__in=items.filter(answer_1__isnull=False).values("answer_1_id"))
        | Q(id__in=items.filter(answer_2__isnull=False).values("answer_2_id"))
    )


def _answers(answers) -> pd.DataFrame:
    """One row per answer: what the rows about it say of its question, condition and source."""
    rows = (
        answers.order_by()
        .annotate(
            levels_text=Cast("question__levels", TextField()),
            condition_text=Cast(KeyTransform("condition", "parameters"), TextField()),
            choice=ExpressionWrapper(Q(question__metadata__has_key=CHOICE_KEY), output_field=BooleanField()),
        )
        .values_list(
            "id",
            "question__external_id",
            "question__dataset__name",
            "question__base__external_id",
            "levels_text",
            "condition_text",
            "source__name",
            "choice",
        )
    )
    columns = ["answer", "question", "dataset", "base_question", "levels", "condition", "source", "multiple_choice"]
    answers = _frame(rows.iterator(chunk_size=CHUNK), columns)
    answers["levels"] = _canonical(answers["levels"])
    answers["condition"] = _canonical(answers["condition"])
    return answers.astype({"answer": "Int64", "multiple_choice": bool})


def _scores(study, scorers: Iterable[str] | None = None) -> pd.DataFrame:
    """One row per score of the study's answers (of these scorers only, if named): `answer`, `who` (`name vN`),
    `field` (the name) and `value`."""
    scores = Score.objects.filter(answer__in=study_answers(study)).order_by()
    if scorers is not None:
        scores = scores.filter(scorer__in=list(scorers))
    rows = scores.values_list("answer_id", "scorer", "version", "outcome", "number").iterator(chunk_size=CHUNK)
    found = _frame(rows, ["answer", "field", "version", "outcome", "number"])
    measured = (found["outcome"] == Score.Outcome.MEASURED) & found["number"].notna()
    value = found["outcome"].astype(object)
    value[measured] = found.loc[measured, "number"].astype(float)
    who = found["field"].astype(str) + " v" + found["version"].astype(str)
    return pd.DataFrame({"answer": found["answer"].astype("Int64"), "who": who, "field": found["field"],
                         "value": value, "kind": SCORER})  # fmt: skip


def _items(study, item_ids) -> pd.DataFrame:
    """The rated items: their answer(s) and the question(s) and dataset the ratings export names."""
    items = StudyItem.objects.filter(study=study, id__in=item_ids).order_by()
    rows = items.annotate(
        first=Coalesce("answer_id", "answer_1_id"),
        item_dataset=Coalesce("pair__dataset__name", "question__dataset__name", "answer__question__dataset__name"),
        item_question=Coalesce(
            "pair__question_1__external_id", "question__external_id", "answer__question__external_id"
        ),
    ).values_list("id", "first", "answer_2_id", "item_dataset", "item_question", "pair__question_2__external_id",
                  "is_attention_check")  # fmt: skip
    items = _frame(rows, ["item", "answer", "answer_2", "dataset", "question", "question_2", "attention_check"])
    return items.astype({"item": "int64", "answer": "Int64", "answer_2": "Int64"})


def flatten(values: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """(field, value) rows of a rating's stored values (see the module docstring)."""
    for field, value in values.items():
        if isinstance(value, list):
            if not value:
                yield field, ""
            for element in value:
                yield field, _scalar(element)
        else:
            yield field, _scalar(value)


def _scalar(value: Any) -> Any:
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    return value


BACKGROUND = "assignment__rater__background__"


def _ratings(ratings) -> tuple[pd.DataFrame, list[str]]:
    """One row per (rating, field, value) of the counted ratings, with the rating's rater and rubric; and the
    raters' pseudonyms in the database's order (its collation: the order the ratings export sorts them in)."""
    # Ordered by pseudonym in the database, so the first appearance of each is its rank there.
    rows = ratings.order_by("assignment__rater__pseudonym").values_list(
        "assignment__item_id", "values", "swap_answers", "rubric_version__rubric__name", "rubric_version__number",
        "assignment__rater__pseudonym", "assignment__rater__pool__name", f"{BACKGROUND}age_group",
        f"{BACKGROUND}gender", f"{BACKGROUND}race_ethnicity", "attention_check_passed",
    )  # fmt: skip
    per_rating = ["item", "swapped", "rubric", "who", "pool", *RATER_COLUMNS, "attention_check_passed"]
    columns: dict[str, list] = {name: [] for name in ["field", "value", *per_rating]}
    for item, values, swapped, rubric, number, who, pool, age, gender, race, passed in rows.iterator(chunk_size=CHUNK):
        fields = list(flatten(values or {}))
        rating = (item, swapped, f"{rubric} v{number}", who, pool, age or "", gender or "",
                  RACE_SEPARATOR.join(race or []), passed)  # fmt: skip
        for field, value in fields:
            columns["field"].append(field)
            columns["value"].append(value)
        for name, given in zip(per_rating, rating, strict=True):
            columns[name].extend([given] * len(fields))
    frame = pd.DataFrame(columns)
    raters = list(dict.fromkeys(columns["who"]))
    return frame.astype({"item": "int64", "swapped": bool}).assign(kind=HUMAN), raters


def _about_items(study, rows: pd.DataFrame, item_ids, answers: pd.DataFrame) -> pd.DataFrame:
    """Rating rows (a person's or a judge's) with what their items show: answers, questions, sources."""
    if not len(rows):
        return rows
    rows = rows.merge(_items(study, item_ids), on="item", how="left")
    seconds = answers[["answer", "source"]].rename(columns={"answer": "answer_2", "source": "source_2"})
    rows = rows.merge(answers.drop(columns=["question", "dataset"]), on="answer", how="left")
    return rows.merge(seconds, on="answer_2", how="left")


def judge_rows(study):
    """(rows, item ids) of the study's judge ratings: a person's rating's rows with `who` the judge's name, an
    empty pool and rater columns, and `repeat` the judge's independent reply (0, 1, ...)."""
    ratings = JudgeRating.objects.filter(item__study=study)
    # A two-answer item is judged in both orders in each repeat: the order settles which row comes first.
    rows = ratings.order_by("item_id", "judge__name", "repeat", "swap_answers").values_list(
        "item_id", "values", "swap_answers", "rubric_version__rubric__name", "rubric_version__number", "judge__name",
        "repeat",
    )  # fmt: skip
    columns: dict[str, list] = {name: [] for name in ["item", "swapped", "rubric", "who", "repeat", "field", "value"]}
    for item, values, swapped, rubric, number, who, repeat in rows.iterator(chunk_size=CHUNK):
        for field, value in flatten(values or {}):
            for name, given in zip(columns, (item, swapped, f"{rubric} v{number}", who, repeat, field, value),
                                   strict=True):  # fmt: skip
                columns[name].append(given)
    frame = pd.DataFrame(columns).astype({"item": "int64", "swapped": bool, "repeat": "Int64"})
    frame = frame.assign(kind=JUDGE, pool="", **dict.fromkeys(RATER_COLUMNS, ""))
    return frame, ratings.values("item_id")


def results_table(study, *, kinds: Iterable[str] | None = None, scorers: Iterable[str] | None = None) -> pd.DataFrame:
    """The study's results (see the module docstring), sorted by `SORT_COLUMNS`; `item`, `answer` and
    `answer_2` are nullable integers, the text columns categoricals, `value` objects (text or float).

    Only the rows of these `kinds` (default: all), and of scores only those of these `scorers` (default: all):
    a plan reads its scorers' rows, the four tables the human rows, and neither pays for the rest. Raters (`who`
    of human rows) are sorted in the database's order of pseudonyms, the ratings export's (analysis/DESIGN.md,
    "Row order and collation").
    """
    wanted = set(RESULT_KINDS if kinds is None else kinds)
    ratings = counted_ratings(study)
    human, raters = _ratings(ratings) if HUMAN in wanted else (pd.DataFrame(), [])
    judged, judged_items = judge_rows(study) if JUDGE in wanted else (pd.DataFrame(), None)
    scores = _scores(study, scorers) if SCORER in wanted else pd.DataFrame()
    # The answers the rows are about: without scores, only those the rated items show (not all of a large study's).
    rated_items = [ids for ids, rows in ((ratings.values("assignment__item_id"), human), (judged_items, judged))
                   if len(rows)]  # fmt: skip
    if len(scores):
        answers = _answers(study_answers(study))
    elif rated_items:
        answers = _answers(functools.reduce(operator.or_, (shown_answers(ids) for ids in rated_items)))
    human = _about_items(study, human, ratings.values("assignment__item_id"), answers) if len(human) else human
    judged = _about_items(study, judged, judged_items, answers) if len(judged) else judged
    scored = scores.merge(answers, on="answer", how="left") if len(scores) else scores
    parts = [part for part in (human, judged, scored) if len(part)]
    table = pd.concat(parts or [pd.DataFrame(columns=RESULT_COLUMNS)], ignore_index=True)
    table["study"] = study.name
    for column in RESULT_COLUMNS:
        if column not in table.columns:
            table[column] = None
    table = table[RESULT_COLUMNS]
    table = table.astype({"item": "Int64", "answer": "Int64", "answer_2": "Int64", "repeat": "Int64"})
    for column in _TEXT:
        table[column] = _category(table[column], raters if column == "who" else None)
    for column in ("swapped", "attention_check"):  # of a rating: empty for scores
        table[column] = table[column].astype(object).where(table["kind"] != SCORER, None)
    passed = table["attention_check_passed"].astype(object)  # a person's rating's only: True, False or empty
    table["attention_check_passed"] = passed.where(passed.notna() & (table["kind"] == HUMAN), None)
    table["multiple_choice"] = table["multiple_choice"].astype(object)
    table["value"] = table["value"].astype(object)
    order = table.sort_values(SORT_COLUMNS, kind="stable", na_position="first").index
    return table.loc[order].reset_index(drop=True)


def studies_frames(study: Study | None = None) -> dict[str, pd.DataFrame]:
    """The release-format frames of a study's results (None: every study's, in the database's order of names, as
    the ratings export orders them), for `tables.build_report`: the same four tables as from
    `loading.load_frames(study)` (tests/analysis/test_results.py). Reads the human rows only."""
    studies = [study] if study is not None else list(Study.objects.order_by("name"))
    results = [results_table(each, kinds=[HUMAN]) for each in studies]
    table = pd.concat(results, ignore_index=True) if results else pd.DataFrame(columns=RESULT_COLUMNS)
    return release_frames(table, study_order=[each.name for each in studies])


# --- writing ------------------------------------------------------------------------------------------------


def result_rows(table: pd.DataFrame, chunk: int = CHUNK) -> Iterator[list]:
    """The header, then each row as a list of plain values (None where empty), a chunk at a time."""
    yield list(RESULT_COLUMNS)
    for start in range(0, len(table), chunk):
        part = table.iloc[start : start + chunk][RESULT_COLUMNS].astype(object)
        part = part.where(part.notna(), None)
        for row in part.itertuples(index=False, name=None):
            yield list(row)


FILENAME = "results.csv"


def write_results(table: pd.DataFrame, out_dir: str | Path) -> Path:
    """Writes the table as `out_dir/results.csv` (text cells protected against formula injection, as the ratings
    export's); under a temporary name first, so a failed write leaves no half file."""
    path = Path(out_dir) / FILENAME
    partial = path.with_name(f".{FILENAME}.partial")
    try:
        with partial.open("wb") as out:
            for chunk in stream_csv(result_rows(table)):
                out.write(chunk)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    partial.replace(path)
    return path
