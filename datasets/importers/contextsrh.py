"""Import ContextSRH's questions (`labeled_contexual_questions_submit.csv`) as a plain dataset (DESIGN.md, ContextSRH).

One question per row, 187 in all, keyed `srh-001`.. in file order; the text as the file has it (four questions end
in a space: the context generator strips it before appending its sentence). The metadata holds the row's `source`
(Planned Parenthood or Ask Alice) and its `attributes`: the columns marked "x", in the order age, location, sex.
Every row is checked before anything is written; a re-import finds every question and writes nothing; a stored
question that differs is an error, never overwritten.
"""

from dataclasses import dataclass
from pathlib import Path

from django.db import transaction

from ..models import Dataset, Question, text_fingerprint
from ..variants.contextsrh import ATTRIBUTES
from .errors import ImportRejected, RowError, RowErrors
from .reading import Source, csv_rows, is_blank_row, text_problem
from .report import ImportReport

CONTEXTSRH_DATASET = "ContextSRH (original questions)"
CONTEXTSRH_FILE = (
    Path(__file__).resolve().parent.parent / "demo_data" / "contextsrh" / "labeled_contexual_questions_submit.csv"
)
HEADER = ["Source", "Question", "Sex", "Location", "Age"]
MARKS = HEADER[2:]  # the columns marked "x" or left empty
COLUMN = {"age": "Age", "location": "Location", "sex": "Sex"}  # attribute -> its column
MARK = "x"
LICENCE = "MIT"
DESCRIPTION = (
    "The 187 sexual and reproductive health questions of ContextSRH (Planned Parenthood and Go Ask Alice!), each "
    "marked for the attributes (age, location, sex) its answer depends on. Make the context variants with the "
    "contextsrh generator."
)
SOURCE = (
    "Levy, Karver, Adler, Kaufman & Dredze, 'Evaluating Biases in Context-Dependent Sexual and Reproductive Health "
    "Questions', Findings of EMNLP 2024 (arXiv:2403.04858); github.com/sharonlevy/ContextualQuestions @ 3acfae55. "
    "File: datasets/demo_data/contextsrh/ (SOURCE.md)."
)


@dataclass(frozen=True)
class SrhQuestion:
    line: int
    external_id: str
    text: str
    metadata: dict


def external_id(number: int) -> str:
    """The id of the file's `number`th question (from 1): stable as long as the file is."""
    return f"srh-{number:03d}"


def _row(line: int, number: int, cells: list[str]) -> SrhQuestion | str:
    """The file's `number`th row, on `line`, as a question, or what is wrong with it."""
    if len(cells) != len(HEADER):
        return f"{len(cells)} cells where the header has {len(HEADER)} columns"
    for column, value in zip(HEADER, cells, strict=True):
        if problem := text_problem(value):
            return f"{column}: {problem}"
    values = dict(zip(HEADER, cells, strict=True))
    if not values["Source"].strip():
        return "Source is empty"
    if not values["Question"].strip():
        return "Question is empty"
    wrong = [f"{column} {values[column]!r}" for column in MARKS if values[column] not in (MARK, "")]
    if wrong:
        return f'a mark is "{MARK}" or empty, found {", ".join(wrong)}'
    attributes = [attribute for attribute in ATTRIBUTES if values[COLUMN[attribute]] == MARK]
    if not attributes:
        return f"no attribute marked: mark at least one of {', '.join(MARKS)}"
    metadata = {"source": values["Source"], "attributes": attributes}
    return SrhQuestion(line, external_id(number), values["Question"], metadata)


def read_questions(source: Source) -> list[SrhQuestion]:
    """The file's questions; ImportRejected naming every bad line (a wrong header rejects the file at line 1)."""
    problems = RowErrors()
    rows: list[SrhQuestion] = []
    first_line: dict[str, int] = {}  # stripped text -> the line it was first seen on
    records = csv_rows(source)
    header = next(records, None)
    if header is None or header[1] != HEADER:
        found = ", ".join(header[1]) if header else "nothing"
        raise ImportRejected([RowError(1, f"expected the columns {', '.join(HEADER)}, found {found}")])
    for number, (line, cells) in enumerate(records, start=1):
        if is_blank_row(cells):
            problems.add(line, "empty row")
            continue
        row = _row(line, number, cells)
        if isinstance(row, str):
            problems.add(line, row)
            continue
        seen = first_line.setdefault(row.text.strip(), line)  # plain questions are unique by their stripped text
        if seen != line:
            problems.add(line, f"the same question as line {seen}")
        rows.append(row)
    if problems:
        raise problems.rejected()
    return rows


def import_contextsrh(source: Source | None = None, *, dataset: str = CONTEXTSRH_DATASET) -> ImportReport:
    """Create or complete the dataset from the ContextSRH file (default: the committed copy). All or nothing."""
    rows = read_questions(source if source is not None else (lambda: CONTEXTSRH_FILE.open("rb")))
    report = ImportReport(rows=len(rows))
    with transaction.atomic():
        target, created = Dataset.objects.get_or_create(
            name=dataset, defaults={"description": DESCRIPTION, "licence": LICENCE, "source": SOURCE}
        )
        (report.datasets_created if created else report.datasets_used).append(target.name)
        stored = {
            question.external_id: question
            for question in target.questions.only(
                "id", "external_id", "text", "text_hash", "metadata", "levels", "base_id"
            )
        }
        by_hash = {question.text_hash: question.external_id for question in stored.values()}
        problems = RowErrors()
        new = []
        for row in rows:
            question = stored.get(row.external_id)
            if question is None:
                other = by_hash.get(text_fingerprint(row.text))
                if other is not None:
                    problems.add(
                        row.line, f"{row.external_id}: {target.name!r} holds its text under another id ({other})"
                    )
                new.append(row)
            elif question.text != row.text:
                problems.add(
                    row.line,
                    f"{row.external_id}: {target.name!r} holds it with a different text ({question.text[:80]!r}); "
                    "it is never overwritten: import into another dataset",
                )
            elif question.metadata != row.metadata or question.levels or question.base_id is not None:
                problems.add(
                    row.line, f"{row.external_id}: {target.name!r} holds it with other metadata; never overwritten"
                )
        if problems:
            raise problems.rejected()
        Question.objects.bulk_create(
            Question(dataset=target, external_id=row.external_id, text=row.text, text_hash=text_fingerprint(row.text),
                     metadata=row.metadata)
            for row in new
        )  # fmt: skip
        report.questions_created = len(new)
        report.questions_existing = len(rows) - len(new)
    counts = {attribute: sum(attribute in row.metadata["attributes"] for row in rows) for attribute in ATTRIBUTES}
    report.notes.append("Questions per attribute: " + ", ".join(f"{name} {n}" for name, n in counts.items()))
    return report
