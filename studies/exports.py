"""Ratings exports in the EquityMedQA release format, as CSV files, one workbook, or a streamed download.

Rows are yielded one at a time, header first, from a server-side cursor: an export of any size holds one
chunk of ratings in memory, never the whole file (STYLE.md). Only current ratings are exported, one row
per (item, rater); raters appear by pseudonym only.
"""

import contextlib
import csv
from collections.abc import Iterable, Iterator
from pathlib import Path

from django.db.models import Q
from django.http import StreamingHttpResponse
from django.utils.text import slugify
from openpyxl import Workbook
from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE

from datasets.models import AnswerSource, Question
from datasets.recipes import REFERENCE_LEVEL

from . import release
from .models import Assignment, Rating, Study
from .release import COUNTERFACTUAL, DIMENSIONS, INDEPENDENT, PAIRWISE

CHUNK_SIZE = 2000
NO_RATINGS_TO_EXPORT = "This study is read by scorers only (it has no rubric): it has no ratings to export."
CSV_CHUNK_BYTES = 64 * 1024

# Only the fields a row shows: related rows also hold long texts (answers, prompts, rubric wording) that
# would otherwise be loaded and parsed for every rating.
COMMON_FIELDS = [
    "values", "swap_answers", "active_seconds", "wall_seconds", "submitted_at", "revision", "attention_check_passed",
    "rubric_version__number", "rubric_version__rubric__name", "assignment__item__study__name",
    "assignment__rater__pseudonym", "assignment__rater__pool__name",
    *(f"assignment__rater__background__{name}" for name in
      ("years_in_practice", "specialty", "country", "age_group", "gender", "race_ethnicity")),
]  # fmt: skip
FIELDS = {
    INDEPENDENT: ["assignment__item__answer__question__external_id",
                  "assignment__item__answer__question__dataset__name", "assignment__item__answer__source__name"],
    PAIRWISE: ["assignment__item__question__external_id", "assignment__item__question__dataset__name",
               "assignment__item__answer_1__source__name", "assignment__item__answer_2__source__name"],
    COUNTERFACTUAL: ["assignment__item__pair__dataset__name", "assignment__item__pair__question_1__external_id",
                     "assignment__item__pair__question_2__external_id", "assignment__item__answer_1__source__name",
                     "assignment__item__answer_2__source__name"],
}  # fmt: skip


# The questions a row is about: their factor levels are the row's last columns (release.level_columns).
QUESTIONS = {
    INDEPENDENT: ("assignment__item__answer__question",),
    PAIRWISE: ("assignment__item__question",),
    COUNTERFACTUAL: ("assignment__item__pair__question_1", "assignment__item__pair__question_2"),
}


class ExportError(Exception):
    """The ratings cannot be written in the release format as they stand."""


def counted_ratings(study: Study | None = None):
    """The ratings exports and analyses count: current ones, not of withdrawn assignments (of a study, or all)."""
    ratings = Rating.objects.filter(is_current=True).exclude(assignment__status=Assignment.Status.WITHDRAWN)
    return ratings.filter(assignment__item__study=study) if study is not None else ratings


def exported_ratings(table: str, study: Study | None = None):
    """Counted ratings exported in one release table (their rubric names it)."""
    return counted_ratings(study).filter(assignment__item__study__rubric_version__definition__release=table)


def _stream(table: str, study: Study | None) -> Iterator[dict]:
    # Plain dicts of just the fields a row shows: building a dozen model instances per rating made the
    # export several times slower.
    # Ordered by study and item, raters by pseudonym: an import creates items in file order, so exporting
    # what it imported gives the same file.
    ratings = exported_ratings(table, study).order_by(
        "assignment__item__study__name", "assignment__item_id", "assignment__rater__pseudonym"
    )
    levels = [f"{path}__levels" for path in QUESTIONS[table]]
    return ratings.values(*COMMON_FIELDS, *FIELDS[table], *levels).iterator(chunk_size=CHUNK_SIZE)


def export_factors(table: str, study: Study | None = None) -> list[str]:
    """The factors of the exported questions' levels, sorted (none for questions without levels): one query."""
    ratings = exported_ratings(table, study).order_by()
    asked = Q()
    for path in QUESTIONS[table]:
        asked |= Q(id__in=ratings.values(path))
    carried = Question.objects.filter(asked).exclude(levels={}).values_list("levels", flat=True).distinct()
    return sorted({factor for levels in carried for factor in levels})


def _levels(row: dict, table: str, factors: list[str]) -> list[str]:
    """The row's questions' levels of each factor (a factor a question lacks is at its reference level)."""
    paths = QUESTIONS[table]
    return [str((row[f"{path}__levels"] or {}).get(factor, REFERENCE_LEVEL)) for factor in factors for path in paths]


def _export_name(source_name: str) -> str:
    return source_name.replace(" ", "-")  # AnswerSource.export_name, on a plain value


def _rater(row: dict) -> list:
    return [row["assignment__rater__pool__name"], row["assignment__rater__pseudonym"]]


BACKGROUND = "assignment__rater__background__"


def _details(row: dict) -> list:
    """Timings, revision, attention check and what the rater told us at onboarding (empty when not asked)."""
    rater = [None, "", "", "", "", ""]
    if row[f"{BACKGROUND}specialty"] is not None:  # a background row exists (its text fields are never NULL)
        rater = [row[f"{BACKGROUND}years_in_practice"], row[f"{BACKGROUND}specialty"], row[f"{BACKGROUND}country"],
                 row[f"{BACKGROUND}age_group"], row[f"{BACKGROUND}gender"],
                 release.LIST_SEPARATOR.join(row[f"{BACKGROUND}race_ethnicity"] or [])]  # fmt: skip
    return [row["active_seconds"], row["wall_seconds"], release.timestamp(row["submitted_at"]), row["revision"],
            row["attention_check_passed"], *rater]  # fmt: skip


def _head(row: dict) -> list:
    version = f"{row['rubric_version__rubric__name']} v{row['rubric_version__number']}"  # str(RubricVersion)
    return [version, row["assignment__item__study__name"]]


def _texts(values: dict, *keys: str) -> list[str]:
    return [values.get(key) or "" for key in keys]


def independent_rows(study: Study | None = None) -> Iterator[list]:
    factors = export_factors(INDEPENDENT, study)
    yield release.header(INDEPENDENT, factors=factors)
    for row in _stream(INDEPENDENT, study):
        values = row["values"]
        marked = set(values.get("dimensions") or [])
        yield [
            row["assignment__item__answer__question__external_id"],
            row["assignment__item__answer__question__dataset__name"], *_rater(row),
            release.BIAS_PRESENCE.get(values.get("bias_presence")), *(key in marked for key in DIMENSIONS),
            *_head(row), _export_name(row["assignment__item__answer__source__name"]),
            *_texts(values, "other_text", "comment"), *_details(row), *_levels(row, INDEPENDENT, factors),
        ]  # fmt: skip


def pairwise_sources(study: Study | None = None) -> list[str]:
    """Export names of every source in the exported pairwise items, sorted: one query, before the first row."""
    ratings = exported_ratings(PAIRWISE, study).order_by()
    sources = AnswerSource.objects.filter(
        Q(id__in=ratings.values("assignment__item__answer_1__source"))
        | Q(id__in=ratings.values("assignment__item__answer_2__source"))
    )
    names: dict[str, str] = {}
    for source in sources:
        if source.export_name in names:
            raise ExportError(
                f"The answer sources {names[source.export_name]!r} and {source.name!r} would share the column "
                f"{release.source_column(source.export_name)!r}: rename one of them."
            )
        names[source.export_name] = source.name
    # Sorted by export name, not name: an import names new sources by their export name, and the order
    # must not change when it does.
    return sorted(names)


def pairwise_rows(study: Study | None = None) -> Iterator[list]:
    """Raises ExportError at once, before any row: a download or file must never start and then break."""
    source_names = pairwise_sources(study)
    return _pairwise_rows(study, source_names)


def _pairwise_rows(study: Study | None, source_names: list[str]) -> Iterator[list]:
    factors = export_factors(PAIRWISE, study)
    yield release.header(PAIRWISE, source_names, factors)
    for row in _stream(PAIRWISE, study):
        values = row["values"]
        first = _export_name(row["assignment__item__answer_1__source__name"])
        second = _export_name(row["assignment__item__answer_2__source__name"])
        # The stored preference is a display position; swap_answers says which answer was shown first.
        shown = (second, first) if row["swap_answers"] else (first, second)
        preference = values.get("preference")
        in_item = set(shown)
        if preference in ("answer_1", "answer_2"):
            preferred = shown[preference == "answer_2"]
            more_bias = [name == preferred if name in in_item else None for name in source_names]
            marked = set(values.get("dimensions") or [])
        else:  # a tie: neither source shows more bias, and no kinds of bias were asked
            more_bias = [False if name in in_item and preference == "tie" else None for name in source_names]
            marked = set()
        yield [
            row["assignment__item__question__external_id"], row["assignment__item__question__dataset__name"],
            *_rater(row), *more_bias, *(key in marked for key in DIMENSIONS), *_head(row),
            shown[0], shown[1], *_texts(values, "other_text", "comment"), *_details(row),
            *_levels(row, PAIRWISE, factors),
        ]  # fmt: skip


def counterfactual_rows(study: Study | None = None) -> Iterator[list]:
    factors = export_factors(COUNTERFACTUAL, study)
    yield release.header(COUNTERFACTUAL, factors=factors)
    for row in _stream(COUNTERFACTUAL, study):
        values = row["values"]
        marked = set(values.get("dimensions") or [])
        yield [
            row["assignment__item__pair__question_1__external_id"],
            row["assignment__item__pair__question_2__external_id"], row["assignment__item__pair__dataset__name"],
            *_rater(row), release.COUNTERFACTUAL_BIAS.get(values.get("bias_presence")),
            *(key in marked for key in DIMENSIONS),
            release.IDEAL_ANSWERS_DIFFER.get(values.get("ideal_answers_differ")),
            release.ANSWERS_DIFFER_HOW.get(values.get("answers_differ_how")), *_head(row),
            _export_name(row["assignment__item__answer_1__source__name"]),
            _export_name(row["assignment__item__answer_2__source__name"]),
            *_texts(values, "ideal_comment", "other_text", "comment"), *_details(row),
            *_levels(row, COUNTERFACTUAL, factors),
        ]  # fmt: skip


ROWS = {INDEPENDENT: independent_rows, PAIRWISE: pairwise_rows, COUNTERFACTUAL: counterfactual_rows}


def export_rows(table: str, study: Study | None = None) -> Iterator[list]:
    return ROWS[table](study)


class _Echo:
    """csv.writer writes here and gets the line back, so each row can be encoded as it comes."""

    def write(self, text: str) -> str:
        return text


def stream_csv(rows: Iterable[list]) -> Iterator[bytes]:
    """UTF-8 CSV in chunks of about 64 KB, text cells protected against formula injection."""
    writer = csv.writer(_Echo(), lineterminator="\n")
    pending: list[str] = []
    size = 0
    for row in rows:
        line = writer.writerow([release.csv_text(value) for value in row])
        pending.append(line)
        size += len(line)
        if size >= CSV_CHUNK_BYTES:
            yield "".join(pending).encode("utf-8")
            pending, size = [], 0
    if pending:
        yield "".join(pending).encode("utf-8")


def csv_download_response(table: str | None, study: Study | None = None) -> StreamingHttpResponse:
    if table is None:
        raise ExportError("This study's rubric is not written in the EquityMedQA release format (it names no table).")
    filename = release.FILENAMES[table]
    if study is not None:
        filename = f"{slugify(study.name) or f'study-{study.pk}'}-{filename}"
    response = StreamingHttpResponse(stream_csv(export_rows(table, study)), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def _counting(rows: Iterable[list], counts: dict, key: str) -> Iterator[list]:
    counts[key] = -1  # the header is not a rating
    for row in rows:
        counts[key] += 1
        yield row


def _partial(path: Path) -> Path:
    return path.with_name(f".{path.name}.partial")


def write_csv_files(out_dir, study: Study | None = None) -> dict[str, int]:
    """All three CSV files (header only when a table has no ratings); returns the ratings written per file.

    All or nothing: every table is checked before anything is written, each file is written under a
    temporary name, and the three are renamed into place only when all are complete.
    """
    out_dir = Path(out_dir)
    rows = {table: export_rows(table, study) for table in release.FILENAMES}  # raises ExportError before writing
    out_dir.mkdir(parents=True, exist_ok=True)
    counts: dict[str, int] = {}
    written: list[Path] = []
    try:
        for table, filename in release.FILENAMES.items():
            written.append(_partial(out_dir / filename))
            with written[-1].open("wb") as out:
                for chunk in stream_csv(_counting(rows[table], counts, filename)):
                    out.write(chunk)
    except BaseException:
        for path in written:
            path.unlink(missing_ok=True)
        raise
    for path, filename in zip(written, release.FILENAMES.values(), strict=True):
        path.replace(out_dir / filename)
    return counts


def _xlsx_cell(value):
    if isinstance(value, str):
        # Typed cells need no escaping, but openpyxl stores any text starting with "=" as a formula, and
        # refuses control characters that XML cannot hold.
        return ILLEGAL_CHARACTERS_RE.sub("", release.protect(value))
    return value


def write_workbook(path, study: Study | None = None) -> dict[str, int]:
    """The workbook with the three sheets; booleans and numbers as typed cells. Returns ratings per sheet.

    All or nothing, like write_csv_files: checked first, saved under a temporary name, then renamed.
    """
    path = Path(path)
    rows = {table: export_rows(table, study) for table in release.SHEETS}  # raises ExportError before writing
    workbook = Workbook(write_only=True)  # rows go to a temporary file as they come
    counts: dict[str, int] = {}
    partial = _partial(path)
    try:
        for table, title in release.SHEETS.items():
            sheet = workbook.create_sheet(title)
            for row in _counting(rows[table], counts, title):
                sheet.append([_xlsx_cell(value) for value in row])
        workbook.save(partial)
    except BaseException:
        with contextlib.suppress(Exception):
            workbook.save(partial)  # the one public way to close the sheets' temporary files
        partial.unlink(missing_ok=True)
        raise
    partial.replace(path)
    return counts
