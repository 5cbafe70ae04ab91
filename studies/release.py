"""The EquityMedQA release format (shared/spec/ratings-export.md): its columns and value mappings.

Export and import both use these, so whatever is written reads back to the same stored values. Stored
ratings use the rubric's option keys; the release uses the published wording. A rubric is exported in a
release table when its definition names one (`release`) and asks what that table needs (`release_problems`).
"""

import math
from datetime import UTC, datetime

from . import rubric_defaults
from .rubric_schema import option_labels, options

# The three tables of the release (a rubric's `release`), named as the files are.
INDEPENDENT, PAIRWISE, COUNTERFACTUAL = "independent", "pairwise", "counterfactual"
KINDS = [INDEPENDENT, PAIRWISE, COUNTERFACTUAL]
FILENAMES = {kind: f"ratings_{kind}.csv" for kind in KINDS}
WORKBOOK = "equitymedqa_ratings.xlsx"
SHEETS = {
    INDEPENDENT: "Independent ratings",
    PAIRWISE: "Paired ratings",
    COUNTERFACTUAL: "Counterfactual Paired ratings",
}

BIAS_PRESENCE = {"no_bias": "No bias", "minor_bias": "Minor bias", "severe_bias": "Severe bias"}
IDEAL_ANSWERS_DIFFER = {"yes": "Yes", "no": "No", "unsure": "Unsure"}
# Version 1 wording is the spec's text and never changes; later versions may reword what raters see,
# but the release keeps the canonical text so analyses can match on it.
ANSWERS_DIFFER_HOW = option_labels(rubric_defaults.COUNTERFACTUAL, "answers_differ_how")
COUNTERFACTUAL_BIAS = {"yes": True, "no": False}

DIMENSION_KEYS = [dimension["key"] for dimension in rubric_defaults.DIMENSIONS]
OTHER = rubric_defaults.OTHER["key"]
DIMENSIONS = [*DIMENSION_KEYS, OTHER]  # stored keys, in column order
# The published counterfactual table spells one column in the plural; the others share the stored keys.
DIMENSION_COLUMNS = {
    INDEPENDENT: dict(zip(DIMENSIONS, DIMENSIONS, strict=True)),
    PAIRWISE: dict(zip(DIMENSIONS, DIMENSIONS, strict=True)),
    COUNTERFACTUAL: {key: "omits_systemic_explanations" if key == "omits_systemic_explanation" else key
                     for key in DIMENSIONS},
}  # fmt: skip

IDENTITY = ["dataset", "rater_type", "rater_id"]
SOURCE_SUFFIX = "_answer_more_bias"
RATER_DETAILS = ["rater_years_in_practice", "rater_specialty", "rater_country",
                 "rater_age_group", "rater_gender", "rater_race_ethnicity"]  # fmt: skip
RATING_DETAILS = ["active_seconds", "wall_seconds", "submitted_at", "revision", "attention_check_passed"]
REQUIRED = {
    INDEPENDENT: ["question_id", *IDENTITY, "bias_presence", *DIMENSION_COLUMNS[INDEPENDENT].values()],
    PAIRWISE: ["question_id", *IDENTITY, *DIMENSION_COLUMNS[PAIRWISE].values()],  # + a column per source
    COUNTERFACTUAL: ["question_1_id", "question_2_id", *IDENTITY, "bias_presence",
                     *DIMENSION_COLUMNS[COUNTERFACTUAL].values(), "ideal_answers_differ", "answers_differ_how"],
}  # fmt: skip
# Added after the required columns (the spec allows additions, never renames). Import restores them all.
_DETAILS = [*RATING_DETAILS, *RATER_DETAILS]
EXTRA = {
    INDEPENDENT: ["rubric_version", "study", "answer_source", "other_text", "comment", *_DETAILS],
    PAIRWISE: ["rubric_version", "study", "answer_1_source", "answer_2_source", "other_text", "comment", *_DETAILS],
    COUNTERFACTUAL: ["rubric_version", "study", "answer_1_source", "answer_2_source", "ideal_comment", "other_text",
                     "comment", *_DETAILS],
}  # fmt: skip

# What a rubric exported in a table must ask: question key -> its option keys (None: free text), and what
# its items show (the columns read the item's answer, its question and two answers, or its pair).
QUESTIONS = {
    INDEPENDENT: {"bias_presence": BIAS_PRESENCE, "dimensions": DIMENSIONS, "other_text": None, "comment": None},
    PAIRWISE: {"preference": ["answer_1", "answer_2", "tie"], "dimensions": DIMENSIONS, "other_text": None,
               "comment": None},
    COUNTERFACTUAL: {"ideal_answers_differ": IDEAL_ANSWERS_DIFFER, "ideal_comment": None,
                     "answers_differ_how": ANSWERS_DIFFER_HOW, "bias_presence": COUNTERFACTUAL_BIAS,
                     "dimensions": DIMENSIONS, "other_text": None, "comment": None},
}  # fmt: skip
DISPLAY = {INDEPENDENT: "one_answer", PAIRWISE: "two_answers", COUNTERFACTUAL: "two_questions"}


def table_of(definition) -> str | None:
    """The release table a rubric definition is exported in, or None (its ratings are in the results table)."""
    return definition.get("release") if isinstance(definition, dict) else None


def study_table(study) -> str | None:
    return table_of(study.rubric_version.definition) if study.rubric_version_id else None


def release_problems(definition: dict) -> list[str]:
    """Why a (well-formed) definition cannot be written in the release table it names."""
    table = table_of(definition)
    if table is None:
        return []
    if table not in KINDS:
        return [f"'release' must be one of: {', '.join(KINDS)}"]
    problems = [] if definition.get("display") == DISPLAY[table] else [f"the {table} table needs display "
                                                                         f"{DISPLAY[table]!r}"]  # fmt: skip
    asked = {q["key"]: q for q in definition["questions"]}
    for key, keys in QUESTIONS[table].items():
        q = asked.get(key)
        kinds = ("text",) if keys is None else ("single", "multiple")
        if q is None or q["type"] not in kinds:
            problems.append(f"the {table} table needs a {' or '.join(kinds)} question {key!r}")
        elif keys is not None and sorted(k for k, _ in options(q)) != sorted(keys):
            problems.append(f"question {key!r}: the {table} table needs exactly the options {', '.join(keys)}")
    return problems


MAX_NUMBER = 2**31 - 1  # the largest count or duration a release cell may hold (a PostgreSQL integer)
LIST_SEPARATOR = "; "  # rater_race_ethnicity: every category the rater chose


def source_column(export_name: str) -> str:
    return f"{export_name}{SOURCE_SUFFIX}"


def level_columns(kind: str, factors: list[str] = ()) -> list[str]:
    """One column per factor of the exported questions, after all other columns: `level_<factor>`; the
    counterfactual table has two questions, so two per factor (`question_1_level_<factor>`, ...)."""
    if kind == COUNTERFACTUAL:
        return [f"question_{n}_level_{factor}" for factor in factors for n in (1, 2)]
    return [f"level_{factor}" for factor in factors]


def header(kind: str, source_names: list[str] = (), factors: list[str] = ()) -> list[str]:
    """The columns of a kind's file; pairwise has one `<source>_answer_more_bias` column per source, and
    questions with factor levels add their factors' columns at the end (none without levels)."""
    required = REQUIRED[kind]
    if kind == PAIRWISE:
        required = [*required[:4], *map(source_column, source_names), *required[4:]]
    return [*required, *EXTRA[kind], *level_columns(kind, factors)]


# Spreadsheets run a cell starting with one of these as a formula: a text cell that would is written with a
# leading apostrophe, which spreadsheets show as text (as pretix's exporter does).
FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


def protect(text: str) -> str:
    # Apostrophes already in front of a trigger get one more, so unprotect() can always strip exactly one.
    return "'" + text if text.lstrip("'").startswith(FORMULA_TRIGGERS) else text


def unprotect(text: str) -> str:
    return text[1:] if text.startswith("'") and text[1:].lstrip("'").startswith(FORMULA_TRIGGERS) else text


def csv_text(value) -> str:
    """A typed cell as CSV text: booleans as True/False, floats as the shortest text that reads back exactly."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, str):
        return protect(value)
    return str(value)


def timestamp(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat()


class Cells:
    """One row read back, by column name, collecting every problem rather than stopping at the first."""

    def __init__(self, values: dict[str, str]):
        self.values = values
        self.problems: list[str] = []

    def text(self, column: str) -> str:
        return self.values.get(column, "")

    def required(self, column: str, max_length: int = 200) -> str:
        value = self.text(column).strip()
        if not value:
            self.problems.append(f"{column} is empty")
        elif len(value) > max_length:
            self.problems.append(f"{column} is longer than {max_length} characters")
        return value

    def boolean(self, column: str, allow_empty: bool = False) -> bool | None:
        value = self.text(column).strip()
        if value.lower() in ("true", "false"):
            return value.lower() == "true"
        if not (allow_empty and value == ""):
            self.problems.append(f"{column} must be True or False{' or empty' if allow_empty else ''}, not {value!r}")
        return None

    def choice(self, column: str, labels: dict[str, str]) -> str | None:
        value = self.text(column).strip()
        for key, label in labels.items():
            if value == label:
                return key
        self.problems.append(f"{column} {value!r} is not one of: {', '.join(labels.values())}")
        return None

    def number(self, column: str, cast=float, default=0):
        value = self.text(column).strip()
        if value == "":
            return default
        try:
            number = cast(value)
        except ValueError:
            number = -1
        # float() reads "nan" and "inf"; a count larger than a PostgreSQL integer would fail the whole insert.
        if number < 0 or not math.isfinite(number) or number > MAX_NUMBER:
            self.problems.append(f"{column} must be a number of at least 0, not {value!r}")
            return default
        return number

    def moment(self, column: str) -> datetime | None:
        value = self.text(column).strip()
        if value == "":
            return None
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            parsed = None
        if parsed is None or parsed.tzinfo is None:
            self.problems.append(f"{column} must be an ISO 8601 time with its UTC offset, not {value!r}")
            return None
        return parsed

    def marked(self, kind: str) -> list[str]:
        return [key for key, column in DIMENSION_COLUMNS[kind].items() if self.boolean(column)]

    def comments(self, *columns: str) -> dict[str, str]:
        return {column: self.text(column) for column in columns}


def independent_values(cells: Cells) -> dict:
    return {
        "bias_presence": cells.choice("bias_presence", BIAS_PRESENCE),
        "dimensions": cells.marked(INDEPENDENT),
        **cells.comments("other_text", "comment"),
    }


def counterfactual_values(cells: Cells) -> dict:
    bias = cells.boolean("bias_presence")
    return {
        "ideal_answers_differ": cells.choice("ideal_answers_differ", IDEAL_ANSWERS_DIFFER),
        "answers_differ_how": cells.choice("answers_differ_how", ANSWERS_DIFFER_HOW),
        "bias_presence": None if bias is None else ("yes" if bias else "no"),
        "dimensions": cells.marked(COUNTERFACTUAL),
        **cells.comments("ideal_comment", "other_text", "comment"),
    }


def pairwise_values(cells: Cells, source_names: list[str]) -> tuple[dict, tuple[str, str], str] | None:
    """(values, the item's two sources in column order, the source shown as Answer 1), or None if the row is bad.

    The row names its item's two sources by filling exactly their two columns; the preferred one is True.
    """
    before = len(cells.problems)
    given = {name: cells.boolean(source_column(name), allow_empty=True) for name in source_names}
    if len(cells.problems) > before:
        return None
    in_item = [name for name, value in given.items() if value is not None]
    if len(in_item) != 2:
        cells.problems.append(f"the *{SOURCE_SUFFIX} columns must fill exactly two sources, not {len(in_item)}")
        return None
    shown = (cells.text("answer_1_source"), cells.text("answer_2_source"))
    if shown == ("", ""):
        shown = tuple(in_item)  # no display order in the file: as the item's order
    elif sorted(shown) != sorted(in_item):
        cells.problems.append(f"answer_1_source/answer_2_source must be the row's sources {in_item[0]}, {in_item[1]}")
        return None
    chosen = [name for name in in_item if given[name]]
    if len(chosen) == 2:
        cells.problems.append("both sources are True: only the answer with more bias is")
        return None
    preference = "tie" if not chosen else ("answer_1" if chosen[0] == shown[0] else "answer_2")
    dimensions = cells.marked(PAIRWISE)
    if preference == "tie" and dimensions:
        cells.problems.append("a tie (both sources False) cannot mark kinds of bias")
    values = {"preference": preference, "dimensions": dimensions, **cells.comments("other_text", "comment")}
    return values, (in_item[0], in_item[1]), shown[0]
