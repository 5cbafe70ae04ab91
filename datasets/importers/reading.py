"""Read files as a stream of decoded lines and split them into rows that remember their line numbers.

Nothing here holds a whole file: an importer opens its file once per pass and reads it line by line, so
memory depends on the longest line, not on the file's size.
"""

import csv
import io
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator
from typing import BinaryIO

from .errors import ImportRejected, RowError

# Question texts can be long (MedQA vignettes with lab tables); the csv module's default is 128 KiB.
MAX_FIELD_CHARS = 16 * 1024 * 1024
csv.field_size_limit(MAX_FIELD_CHARS)
# One line of a file (a JSONL row, or a line of a CSV record) is read whole: past this it is refused.
MAX_LINE_BYTES = MAX_FIELD_CHARS + 64 * 1024
# Metadata is a few levels deep (MedQA's options, BiasMedQA's meta_info); deeper is not a question file.
MAX_JSON_DEPTH = 32

# A file to read: its bytes, or a function that opens it (again for each pass) as a binary stream.
Opener = Callable[[], BinaryIO]
Source = bytes | Opener

_BARE_CR = re.compile("(?<=\r)(?!\n)")
_NOT_STORABLE = re.compile("[\x00\ud800-\udfff]")  # NUL and lone surrogates: PostgreSQL text cannot hold them


def opener_for(source: Source) -> Opener:
    if isinstance(source, bytes | bytearray | memoryview):
        data = bytes(source)
        return lambda: io.BytesIO(data)
    return source


def text_lines(source: Source) -> Iterator[tuple[int, str]]:
    """Yield (line number, text with its line ending) as UTF-8 (a byte-order mark is allowed).

    A NUL byte or bytes that are not UTF-8 reject the file at the line they are on: the file is binary or in
    another encoding, so every later line would be wrong too.
    """
    with opener_for(source)() as stream:
        number = 0
        while raw := stream.readline(MAX_LINE_BYTES + 1):
            number += 1
            if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                limit = MAX_LINE_BYTES // (1024 * 1024)
                raise ImportRejected([RowError(number, f"the line is longer than {limit} MB")])
            if number == 1:
                raw = raw.removeprefix(b"\xef\xbb\xbf")
            if b"\x00" in raw:
                raise ImportRejected([RowError(number, "the file contains NUL bytes: is it a binary file or UTF-16?")])
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                message = (
                    f"not valid UTF-8 (byte 0x{raw[exc.start]:02X} at column {exc.start + 1}); "
                    "save the file as UTF-8 and import it again"
                )
                raise ImportRejected([RowError(number, message)]) from exc
            if "\r" not in text[:-2]:
                yield number, text
                continue
            # A bare CR ends a line too (old Mac files), as in Python's universal newlines.
            pieces = _BARE_CR.split(text)
            for piece in pieces[:-1]:
                yield number, piece
                number += 1
            if pieces[-1]:
                yield number, pieces[-1]
            else:
                number -= 1


def first_text(source: Source) -> str | None:
    """The first line that is not blank, stripped; None for a file with nothing in it."""
    return next((text.strip() for _, text in text_lines(source) if text.strip()), None)


def _is_blank(text: str) -> bool:
    return not text.strip(" \t\r\n")


def _without_trailing_blank_lines(lines: Iterable[tuple[int, str]]) -> Iterator[tuple[int, str]]:
    """Blank lines at the very end are an editor's habit, not empty rows: drop them (and the last line's end)."""
    held: list[tuple[int, str]] = []  # the last line with text, then the blank lines after it
    for number, text in lines:
        if _is_blank(text):
            held.append((number, text))
            continue
        yield from held
        held = [(number, text)]
    if held and not _is_blank(held[0][1]):
        yield held[0][0], held[0][1].rstrip("\r\n \t")


def csv_rows(source: Source) -> Iterator[tuple[int, list[str]]]:
    """Yield (first line of the record, cells); an empty record yields an empty list."""
    lines = (text for _, text in _without_trailing_blank_lines(text_lines(source)))
    # strict: an unclosed quote must not swallow the rest of the file into one cell.
    reader = csv.reader(lines, strict=True)
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


def jsonl_rows(source: Source) -> Iterator[tuple[int, dict | None, str | None]]:
    """Yield (line, object, problem); blank lines come as (line, None, 'empty row')."""
    for number, line in _without_trailing_blank_lines(text_lines(source)):
        if _is_blank(line):
            yield number, None, "empty row"
            continue
        value, problem = loads_json(line)
        if problem is None and not isinstance(value, dict):
            problem = "each line must be a JSON object"
        yield number, (value if problem is None else None), problem


def _reject_constant(name: str):
    raise ValueError(f"{name} is not a number JSON allows")


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"{text} is too large a number")
    return number


def loads_json(text: str) -> tuple[object, str | None]:
    """(value, None), or (None, what is wrong): not JSON, nested too deeply, or not storable in the database."""
    try:
        value = json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON ({exc.msg} at column {exc.colno})"
    except RecursionError:
        return None, f"not valid JSON (nested more than {MAX_JSON_DEPTH} levels deep)"
    except ValueError as exc:  # NaN, Infinity, 1e999, integers of thousands of digits
        return None, f"not valid JSON ({exc})"
    return value, json_problem(value)


def json_problem(value: object) -> str | None:
    """Why a parsed JSON value cannot be stored (too deep, NUL or a lone surrogate in a string), or None."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > MAX_JSON_DEPTH:
                return f"not valid JSON (nested more than {MAX_JSON_DEPTH} levels deep)"
            if isinstance(item, dict):
                stack.extend((key, depth) for key in item)
                stack.extend((child, depth + 1) for child in item.values())
            else:
                stack.extend((child, depth + 1) for child in item)
        elif isinstance(item, str) and (problem := text_problem(item)):
            return problem
    return None


def text_problem(text: str) -> str | None:
    """Why a text cannot be stored, or None: PostgreSQL refuses NUL characters and lone surrogates."""
    found = _NOT_STORABLE.search(text)
    if found is None:
        return None
    if found.group() == "\x00":
        return "a value holds a NUL character (\\u0000)"
    return f"a value holds a lone surrogate (\\u{ord(found.group()):04x}), which is not a character"


def is_blank_row(cells: list[str]) -> bool:
    return not any(cell.strip() for cell in cells)
