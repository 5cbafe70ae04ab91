import re
from dataclasses import dataclass

MAX_REPORTED_ERRORS = 200
# A file where every row is bad reports this many (the first by line) and counts the rest.
MAX_KEPT_ERRORS = 1000


@dataclass(frozen=True, order=True)
class RowError:
    """A problem with one line of an input file (line 0: the file as a whole)."""

    line: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}" if self.line else self.message

    def as_dict(self) -> dict:
        return {"line": self.line, "message": self.message}


def _reading_order(error: RowError) -> tuple:
    """By line, then by message with its numbers as numbers: "a.jsonl, line 9" comes before "a.jsonl, line 10"
    (importers of several files name the file and line in the message, on line 0)."""
    parts = re.split(r"(\d+)", error.message)
    return error.line, [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in parts]


class ImportRejected(Exception):
    """The file was not imported; `errors` says why, by line."""

    def __init__(self, errors: list[RowError], *, omitted: int = 0):
        self.errors = sorted(errors, key=_reading_order)
        self.omitted = omitted  # problems found but not kept
        super().__init__(self.summary())

    def summary(self) -> str:
        shown = self.errors[:MAX_REPORTED_ERRORS]
        lines = [str(error) for error in shown]
        total = len(self.errors) + self.omitted
        if total > len(shown):
            lines.append(f"... and {total - len(shown)} more problems")
        return f"Nothing was imported: {total} problem(s).\n" + "\n".join(lines)


class RowErrors:
    """The problems of one pass over a file: the first MAX_KEPT_ERRORS are kept, the rest only counted."""

    def __init__(self):
        self.kept: list[RowError] = []
        self.omitted = 0

    def __bool__(self) -> bool:
        return bool(self.kept)

    def add(self, line: int, message: str) -> None:
        if len(self.kept) < MAX_KEPT_ERRORS:
            self.kept.append(RowError(line, message))
        else:
            self.omitted += 1

    def rejected(self) -> ImportRejected:
        return ImportRejected(self.kept, omitted=self.omitted)
