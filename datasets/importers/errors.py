from dataclasses import dataclass

MAX_REPORTED_ERRORS = 200


@dataclass(frozen=True, order=True)
class RowError:
    """A problem with one line of an input file (line 0: the file as a whole)."""

    line: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}" if self.line else self.message

    def as_dict(self) -> dict:
        return {"line": self.line, "message": self.message}


class ImportRejected(Exception):
    """The file was not imported; `errors` says why, by line."""

    def __init__(self, errors: list[RowError]):
        self.errors = sorted(errors)
        super().__init__(self.summary())

    def summary(self) -> str:
        shown = self.errors[:MAX_REPORTED_ERRORS]
        lines = [str(error) for error in shown]
        if len(self.errors) > len(shown):
            lines.append(f"... and {len(self.errors) - len(shown)} more problems")
        return f"Nothing was imported: {len(self.errors)} problem(s).\n" + "\n".join(lines)
