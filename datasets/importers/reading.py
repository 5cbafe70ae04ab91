"""Decode files and split them into rows that remember their line numbers."""

import csv
import io
import json
from collections.abc import Iterator

from .errors import ImportRejected, RowError

# Question texts can be long (MedQA vignettes with lab tables); the csv module's default is 128 KiB.
csv.field_size_limit(16 * 1024 * 1024)


def decode_text(data: bytes) -> str:
    """UTF-8 (a byte-order mark is allowed); anything else is rejected with the line it breaks on."""
    if b"\x00" in data:
        line = data[: data.index(b"\x00")].count(b"\n") + 1
        raise ImportRejected([RowError(line, "the file contains NUL bytes: is it a binary file or UTF-16?")])
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line_start = data.rfind(b"\n", 0, exc.start) + 1
        line = data[: exc.start].count(b"\n") + 1
        column = exc.start - line_start + 1
        raise ImportRejected(
            [
                RowError(
                    line,
                    f"not valid UTF-8 (byte 0x{data[exc.start]:02X} at column {column}); "
                    "save the file as UTF-8 and import it again",
                )
            ]
        ) from exc


def _strip_trailing_blank_lines(text: str) -> str:
    # Blank lines at the very end are an editor's habit, not empty rows.
    return text.rstrip("\r\n \t")


def csv_rows(text: str) -> Iterator[tuple[int, list[str]]]:
    """Yield (first line of the record, cells); an empty record yields an empty list."""
    # strict: an unclosed quote must not swallow the rest of the file into one cell.
    reader = csv.reader(io.StringIO(_strip_trailing_blank_lines(text), newline=""), strict=True)
    last_line = 0
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            message = f"malformed CSV ({exc}): check the quotes of the row starting on this line"
            raise ImportRejected([RowError(last_line + 1, message)]) from exc
        yield last_line + 1, cells
        last_line = reader.line_num


def jsonl_rows(text: str) -> Iterator[tuple[int, dict | None, str | None]]:
    """Yield (line, object, problem); blank lines come as (line, None, 'empty row')."""
    for number, line in enumerate(_strip_trailing_blank_lines(text).splitlines(), start=1):
        if not line.strip():
            yield number, None, "empty row"
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            yield number, None, f"not valid JSON ({exc.msg} at column {exc.colno})"
            continue
        if not isinstance(value, dict):
            yield number, None, "each line must be a JSON object"
            continue
        yield number, value, None


def is_blank_row(cells: list[str]) -> bool:
    return not any(cell.strip() for cell in cells)
