"""Import the Q-Pain release's five vignette files as the dataset "Q-Pain vignettes" (DESIGN.md, Q-Pain).

One question per CSV row, 55 in all: `{context}-{NN}` for the "Yes" rows (NN = their order in the file, 00-09),
`{context}-no` for the "No" row. The text is the raw `Vignette` (placeholders and trailing spaces kept, as the
notebook sends it); the metadata holds the raw `Question` as `query`, the gold answer, dosage (the "No" row's
N/A as `nan`, as pandas renders it in the notebook's prompt) and explanation, and the two dose options the
question offers (`dose_low`, `dose_high`, case-normalised). All five files are read and checked before anything
is written; a re-import finds every question and writes nothing; a stored question that differs is an error,
never overwritten.
"""

import re
from dataclasses import dataclass
from pathlib import Path

from django.db import transaction

from ..models import Dataset, Question, text_fingerprint
from ..variants import qpain
from .errors import ImportRejected, RowError
from .reading import csv_rows, is_blank_row, text_problem
from .report import ImportReport

QPAIN_DATASET = "Q-Pain vignettes"
QPAIN_DIR = Path(__file__).resolve().parent.parent / "demo_data" / "qpain"
LICENCE = "CC BY-SA 4.0"
HEADER = ["Vignette", "Question", "Answer", "Dosage", "Explanation"]
# "Low (0.5 mg), or High (1 mg)" and, once in post-op, "low (1 week) or high (4 weeks)"
DOSES = re.compile(r"\b(low \([^()]*\)),? or (high \([^()]*\))", re.IGNORECASE)
NOT_GIVEN = {"N/A", "NA", "", "nan", "NaN"}  # what pandas reads as NaN: the notebook prints it `nan`
NO_DOSAGE = "nan"
YES_PLACEHOLDERS = ("Patient D", "[race]", "[gender]")
DESCRIPTION = (
    'The 55 clinical vignettes of Q-Pain (5 pain contexts x 10 "Yes" vignettes with demographic placeholders, '
    'plus each context\'s "No" vignette, used only as a worked example). Make the race x gender variants with '
    "the qpain generator."
)
SOURCE = (
    "Logé, Ross, Dadey, Jain, Saporta, Ng & Rajpurkar, 'Q-Pain: A Question Answering Dataset to Measure Social "
    "Bias in Pain Management', NeurIPS 2021 Datasets & Benchmarks (arXiv:2108.01764); PhysioNet q-pain 1.0.0 "
    "(doi:10.13026/2tdv-hj07; Goldberger et al., Circulation 2000). Files: datasets/demo_data/qpain/ (SOURCE.md)."
)


@dataclass(frozen=True)
class Vignette:
    filename: str
    line: int
    external_id: str
    text: str
    metadata: dict
    levels: dict


def _capitalised(option: str) -> str:
    return option[:1].upper() + option[1:]


def _row(filename: str, context: str, line: int, cells: list[str], yes_seen: int) -> Vignette | str:
    """One row as a Vignette, or what is wrong with it."""
    if len(cells) != len(HEADER):
        return f"{len(cells)} cells where the header has {len(HEADER)} columns"
    vignette, query, answer, dosage, explanation = cells
    for column, value in zip(HEADER, cells, strict=True):
        if problem := text_problem(value):
            return f"{column}: {problem}"
    for column, value in (("Vignette", vignette), ("Question", query), ("Explanation", explanation)):
        if not value.strip():
            return f"{column} is empty"
    kind = answer.strip().rstrip(".").lower()
    if kind not in (qpain.YES, qpain.NO):
        return f"Answer must be Yes or No (with or without a full stop), found {answer!r}"
    doses = DOSES.search(query)
    if doses is None:
        return "the Question offers no dose options 'Low (...) or High (...)'"
    metadata = {
        "query": query,
        "answer": answer,
        "dosage": dosage,
        "explanation": explanation,
        "kind": kind,
        "vignette_idx": yes_seen if kind == qpain.YES else None,
        "context_name": qpain.CONTEXTS[context],
        "dose_low": _capitalised(doses.group(1)),
        "dose_high": _capitalised(doses.group(2)),
    }
    if kind == qpain.NO:
        if dosage.strip() not in NOT_GIVEN:
            return f'the "No" row\'s Dosage must be N/A, found {dosage!r}'
        metadata["dosage"] = NO_DOSAGE
        external_id = f"{context}-no"
    else:
        missing = [placeholder for placeholder in YES_PLACEHOLDERS if placeholder not in vignette]
        if missing:
            return f'the "Yes" vignette lacks the placeholder(s) {", ".join(missing)}'
        if dosage.strip() in NOT_GIVEN:
            return 'a "Yes" row needs a Dosage'
        external_id = f"{context}-{yes_seen:02d}"
    return Vignette(filename, line, external_id, vignette, metadata, {"context": context})


def read_file(path: Path, context: str) -> tuple[list[Vignette], list[str]]:
    """The vignettes of one context's file and its problems, each naming the file and line."""
    filename = path.name
    if not path.is_file():
        return [], [f"{filename}: no such file in {path.parent}"]
    rows: list[Vignette] = []
    problems: list[str] = []
    try:
        records = csv_rows(lambda: path.open("rb"))
        header = next(records, None)
        if header is None or header[1] != HEADER:
            found = ", ".join(header[1]) if header else "nothing"
            return [], [f"{filename}, line 1: expected the columns {', '.join(HEADER)}, found {found}"]
        yes_seen = 0
        for line, cells in records:
            if is_blank_row(cells):
                problems.append(f"{filename}, line {line}: empty row")
                continue
            row = _row(filename, context, line, cells, yes_seen)
            if isinstance(row, str):
                problems.append(f"{filename}, line {line}: {row}")
                continue
            yes_seen += row.metadata["kind"] == qpain.YES
            rows.append(row)
    except ImportRejected as rejected:  # not UTF-8, NUL bytes, a broken quote: the rest of the file is unreadable
        return [], [f"{filename}, {error}" if error.line else f"{filename}: {error}" for error in rejected.errors]
    except OSError as error:
        return [], [f"{filename}: cannot be read ({error.strerror or error})"]
    kinds = [row.metadata["kind"] for row in rows]
    if not problems:
        if kinds.count(qpain.NO) != 1:
            problems.append(f'{filename}: expected one "No" row, found {kinds.count(qpain.NO)}')
        if not 1 <= kinds.count(qpain.YES) <= 100:
            problems.append(f'{filename}: expected 1 to 100 "Yes" rows, found {kinds.count(qpain.YES)}')
    return rows, problems


def read_vignettes(directory: Path = QPAIN_DIR) -> list[Vignette]:
    """The 55 vignettes of the five files (`data_<context>.csv`); ImportRejected naming every bad file and row."""
    rows: list[Vignette] = []
    problems: list[str] = []
    for context in qpain.CONTEXTS:
        found, wrong = read_file(Path(directory) / f"data_{context}.csv", context)
        rows.extend(found)
        problems.extend(wrong)
    if problems:
        raise ImportRejected([RowError(0, problem) for problem in problems])
    return rows


def import_qpain_vignettes(directory: Path = QPAIN_DIR) -> ImportReport:
    """Create or complete the dataset "Q-Pain vignettes" from the five files in `directory` (default the
    committed copy). All or nothing."""
    rows = read_vignettes(directory)
    report = ImportReport(rows=len(rows))
    with transaction.atomic():
        dataset, created = Dataset.objects.get_or_create(
            name=QPAIN_DATASET, defaults={"description": DESCRIPTION, "licence": LICENCE, "source": SOURCE}
        )
        (report.datasets_created if created else report.datasets_used).append(dataset.name)
        stored = {
            question.external_id: question
            for question in dataset.questions.only("id", "external_id", "text", "metadata", "levels", "base_id")
        }
        by_hash = {text_fingerprint(question.text): question.external_id for question in stored.values()}
        problems, new = [], []
        for row in rows:
            where = f"{row.filename}, line {row.line}: {row.external_id}"
            question = stored.get(row.external_id)
            if question is None:
                other = by_hash.get(text_fingerprint(row.text))
                if other is not None:
                    problems.append(f"{where}: {dataset.name!r} holds its text under another id ({other})")
                new.append(row)
            elif question.text != row.text:
                problems.append(f"{where}: {dataset.name!r} holds it with a different text; it is never overwritten")
            elif question.metadata != row.metadata or question.levels != row.levels or question.base_id is not None:
                problems.append(f"{where}: {dataset.name!r} holds it with other metadata or levels; never overwritten")
        if problems:
            raise ImportRejected([RowError(0, problem) for problem in problems])
        Question.objects.bulk_create(
            Question(dataset=dataset, external_id=row.external_id, text=row.text, text_hash=text_fingerprint(row.text),
                     metadata=row.metadata, levels=row.levels)
            for row in new
        )  # fmt: skip
        report.questions_created = len(new)
        report.questions_existing = len(rows) - len(new)
    return report
