"""Importing a ratings release: the files studies.exports writes, or the published EquityMedQA ones.

Two passes over the files: the first checks every row and reports each bad one by file and line; only if
there is none does the second create what is missing, in one transaction. Unknown raters become
pseudonymous accounts that cannot log in. Re-importing the same files adds nothing: a row whose rater
already rated the item counts as already present.
"""

import csv
import re
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from xml.etree.ElementTree import ParseError

from django.conf import settings
from openpyxl import load_workbook
from openpyxl.utils.exceptions import InvalidFileException

from . import release
from .ratings_store import IMPORTED_SOURCE, ImportReport, RatingsStore, Row, RowChecker
from .release import COUNTERFACTUAL, PAIRWISE, SOURCE_SUFFIX, Cells


class RatingsImportError(Exception):
    def __init__(self, problems: list[str]):
        super().__init__(f"{len(problems)} problem(s) found; nothing was imported.")
        self.problems = problems


class UnreadableTable(Exception):
    """A table's file broke off while being read (a damaged workbook)."""


# Parts of a workbook smaller than this are not checked for their compression ratio (XML compresses well).
WORKBOOK_RATIO_FLOOR_BYTES = 1024 * 1024
# PostgreSQL text cannot hold NUL, and a lone surrogate is not a character.
_NOT_STORABLE = re.compile("[\x00\ud800-\udfff]")


@dataclass
class Table:
    kind: str
    label: str  # the file, or the workbook and sheet
    unit: str  # "line" in a CSV file, "row" in a sheet
    read: Callable[[], Iterator[tuple[int, list[str]]]]  # (line, cells), the header first


def find_tables(path) -> list[Table]:
    """The tables at PATH: a directory holding any of the three CSV files, one of them, or the workbook."""
    path = Path(path)
    if path.is_dir():
        tables = [_csv_table(kind, path / name) for kind, name in release.FILENAMES.items() if (path / name).is_file()]
        if tables:
            return tables
        raise RatingsImportError([f"{path}: none of {', '.join(release.FILENAMES.values())} is there."])
    if path.suffix.lower() == ".xlsx" and path.is_file():
        return _workbook_tables(path)
    kinds = {name: kind for kind, name in release.FILENAMES.items()}
    if path.name in kinds and path.is_file():
        return [_csv_table(kinds[path.name], path)]
    raise RatingsImportError(
        [f"{path}: expected a directory of ratings_*.csv files, one of them, or an .xlsx workbook."]
    )


def _csv_table(kind: str, path: Path) -> Table:
    def read():
        with path.open(newline="", encoding="utf-8-sig") as handle:
            reader = csv.reader(handle)
            line = 1
            for cells in reader:
                if any(cells):  # blank lines, e.g. at the end of a hand-edited file
                    yield line, [release.unprotect(cell) for cell in cells]
                line = reader.line_num + 1  # a quoted cell may span lines: report where the row starts

    return Table(kind, path.name, "line", read)


def workbook_size_problem(path: Path) -> str | None:
    """Why a workbook is refused before it is parsed, from its zip directory: openpyxl holds a workbook's shared
    strings in memory, so a small file that expands to gigabytes (a zip bomb) must never reach it. zipfile
    stops reading a part at its declared size, so the declared sizes are the most that can be read."""
    try:
        with zipfile.ZipFile(path) as archive:
            parts = archive.infolist()
    except (zipfile.BadZipFile, OSError) as error:
        return f"{path.name}: not a readable .xlsx workbook ({error})."
    limit = settings.IMPORT_MAX_WORKBOOK_UNCOMPRESSED_BYTES
    total = sum(part.file_size for part in parts)
    if total > limit:
        return (
            f"{path.name}: the workbook expands to {_megabytes(total)} uncompressed, more than the "
            f"{_megabytes(limit)} allowed (IMPORT_MAX_WORKBOOK_UNCOMPRESSED_BYTES); import the ratings_*.csv files "
            "instead."
        )
    ratio = settings.IMPORT_MAX_WORKBOOK_COMPRESSION_RATIO
    for part in parts:
        if part.file_size > WORKBOOK_RATIO_FLOOR_BYTES and part.file_size > ratio * max(part.compress_size, 1):
            return (
                f"{path.name}: its part {part.filename} is compressed {part.file_size // max(part.compress_size, 1)}"
                f":1, more than the {ratio}:1 a spreadsheet has (IMPORT_MAX_WORKBOOK_COMPRESSION_RATIO); "
                "is it a zip bomb?"
            )
    return None


def _megabytes(size: int) -> str:
    return f"{size / (1024 * 1024):.0f} MB"


def _workbook_tables(path: Path) -> list[Table]:
    if problem := workbook_size_problem(path):
        raise RatingsImportError([problem])
    try:
        workbook = load_workbook(path, read_only=True)
    except (InvalidFileException, zipfile.BadZipFile, OSError, KeyError, ValueError) as error:
        raise RatingsImportError([f"{path.name}: not a readable .xlsx workbook ({error})."]) from error
    titles = set(workbook.sheetnames)
    workbook.close()
    tables = [Table(kind, f"{path.name}, sheet {title!r}", "row", lambda t=title: _sheet_rows(path, t))
              for kind, title in release.SHEETS.items() if title in titles]  # fmt: skip
    if not tables:
        raise RatingsImportError([f"{path.name}: none of the sheets {', '.join(release.SHEETS.values())} is there."])
    return tables


def _sheet_rows(path: Path, title: str) -> Iterator[tuple[int, list[str]]]:
    try:
        workbook = load_workbook(path, read_only=True, data_only=True)
        try:
            for number, values in enumerate(workbook[title].iter_rows(values_only=True), start=1):
                if any(value not in (None, "") for value in values):
                    yield number, [_sheet_text(value) for value in values]
        finally:
            workbook.close()
    except (InvalidFileException, zipfile.BadZipFile, ParseError, OSError, KeyError, ValueError) as error:
        raise UnreadableTable(f"not a readable .xlsx workbook ({type(error).__name__}: {error})") from error


def _sheet_text(value) -> str:
    """A typed cell as the text the CSV file would hold."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))  # ids typed as numbers in a spreadsheet read back as "12", not "12.0"
    if isinstance(value, datetime):
        return value.isoformat()
    return release.unprotect(value) if isinstance(value, str) else str(value)


def _header_problems(kind: str, columns: list[str]) -> list[str]:
    problems = [f"the column {name!r} appears twice" for name in sorted(set(columns)) if columns.count(name) > 1]
    missing = [name for name in release.REQUIRED[kind] if name not in columns]
    if missing:
        problems.append(f"missing required columns: {', '.join(missing)}")
    if kind == PAIRWISE and len([c for c in columns if c.endswith(SOURCE_SUFFIX)]) < 2:
        problems.append(f"expected a <source>{SOURCE_SUFFIX} column for each of at least two answer sources")
    if kind == PAIRWISE and SOURCE_SUFFIX in columns:
        problems.append(f"the column {SOURCE_SUFFIX!r} names no source")
    return problems


def parsed_rows(table: Table, study_name: str, fallback: str) -> Iterator[tuple[int, Row | None, list[str]]]:
    """(line, row, problems) for each row of a table; line 1 carries the header's problems."""
    lines = table.read()
    first = next(lines, None)
    if first is None:
        yield 1, None, ["the table is empty: expected a header row"]
        return
    columns = [column.strip() for column in first[1]]
    while columns and not columns[-1]:
        columns.pop()  # spreadsheets may carry empty cells after the last column
    problems = _header_problems(table.kind, columns)
    if any(_NOT_STORABLE.search(column) for column in columns):
        problems.append("a column name holds a NUL character or a lone surrogate")
    if problems:
        yield 1, None, problems
        return
    sources = [c.removesuffix(SOURCE_SUFFIX) for c in columns if c.endswith(SOURCE_SUFFIX)]
    for line, cells in lines:
        if any(_NOT_STORABLE.search(cell) for cell in cells):
            yield line, None, ["a cell holds a NUL character or a lone surrogate, which cannot be stored"]
            continue
        # A sheet leaves out empty cells at a row's end; a CSV line must have them all.
        if any(cells[len(columns) :]) or (len(cells) < len(columns) and table.unit == "line"):
            yield line, None, [f"{len(cells)} cells, but the header has {len(columns)} columns"]
            continue
        row_cells = Cells(dict(zip(columns, [*cells, *[""] * (len(columns) - len(cells))], strict=False)))
        row = _row(table.kind, row_cells, line, sources, study_name or "", fallback)
        yield line, (None if row_cells.problems else row), row_cells.problems


def _row(kind: str, cells: Cells, line: int, source_names: list[str], study_name: str, fallback: str) -> Row:
    default_source = IMPORTED_SOURCE.replace(" ", "-")  # as its export name
    shown_first = ""
    if kind == COUNTERFACTUAL:
        question_ids = (cells.required("question_1_id"), cells.required("question_2_id"))
        if question_ids[0] and question_ids[0] == question_ids[1]:
            cells.problems.append("question_1_id and question_2_id are the same question")
        values = release.counterfactual_values(cells)
        sources = (cells.text("answer_1_source") or default_source, cells.text("answer_2_source") or default_source)
    else:
        question_ids = (cells.required("question_id"),)
        if kind == PAIRWISE:
            values, sources, shown_first = release.pairwise_values(cells, source_names) or ({}, (), "")
        else:
            values = release.independent_values(cells)
            sources = (cells.text("answer_source") or default_source,)
    if any(len(source) > 200 for source in sources):
        cells.problems.append("an answer source name is longer than 200 characters")
    study = f"{study_name} ({kind})" if study_name else (cells.text("study").strip() or f"{fallback} ({kind})")
    if len(study) > 200:
        cells.problems.append("the study name is longer than 200 characters")
    return Row(
        line=line, study=study, dataset=cells.required("dataset"), question_ids=question_ids,
        rater_type=cells.required("rater_type", max_length=100), rater_id=cells.required("rater_id", max_length=32),
        sources=sources, shown_first=shown_first, values=values, rubric_version=cells.text("rubric_version").strip(),
        active_seconds=cells.number("active_seconds"), wall_seconds=cells.number("wall_seconds"),
        submitted_at=cells.moment("submitted_at"), revision=cells.number("revision", cast=int, default=1),
        attention_check_passed=cells.boolean("attention_check_passed", allow_empty=True),
        background={
            "years_in_practice": cells.number("rater_years_in_practice", cast=int, default=None),
            "specialty": cells.text("rater_specialty"), "country": cells.text("rater_country"),
            "age_group": cells.text("rater_age_group"), "gender": cells.text("rater_gender"),
            "race_ethnicity": [c for c in cells.text("rater_race_ethnicity").split(release.LIST_SEPARATOR) if c],
        },
    )  # fmt: skip


def import_ratings(*, path, study_name: str | None = None) -> ImportReport:
    """Import the release at PATH; raises RatingsImportError listing every bad row, having imported nothing.

    Ratings go to "<study_name> (<kind>)" when a name is given, else to the study named in the `study` column,
    else to "<PATH's name> (<kind>)".
    """
    tables = find_tables(path)
    fallback = Path(path).stem
    checker = RowChecker()
    problems = []
    for table in tables:
        try:
            for line, row, row_problems in parsed_rows(table, study_name, fallback):
                if row is not None:
                    row_problems = checker.problems(table.kind, row, f"{table.unit} {line}")
                if row_problems:
                    problems.append(f"{table.label}, {table.unit} {line}: {'; '.join(row_problems)}")
        except (UnicodeDecodeError, csv.Error) as error:
            problems.append(f"{table.label}: cannot be read as UTF-8 CSV ({error})")
        except UnreadableTable as error:
            problems.append(f"{table.label}: {error}")
    if problems:
        raise RatingsImportError(problems)
    rows = ((table.kind, row) for table in tables for _, row, _ in parsed_rows(table, study_name, fallback))
    return RatingsStore().store(rows)
