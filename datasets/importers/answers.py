"""Import answers from a CSV (with a header) or JSONL file and attach them to questions.

A row names its question by id (`question_id`) or by exact text (`question`); the answer
text is in `answer`. Provenance columns are optional: `model`, `prompt`, `parameters`
(a JSON object of generation settings), `generated_at` (ISO 8601), `latency_ms`, and
`dataset` (otherwise --dataset, or a question id that is unique across datasets).
Other columns are kept as the answer's response metadata.
"""

from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db import transaction
from django.utils.dateparse import parse_datetime

from .. import answer_links
from ..catalogue import dataset_name_for_stem
from ..models import Answer, AnswerSource, Dataset, Question, settings_fingerprint, text_fingerprint
from .errors import ImportRejected, RowError, RowErrors
from .questions import ParsedQuestions, is_jsonl, table_records
from .reading import Source, first_text, loads_json
from .report import ImportReport
from .store import BATCH_ROWS, batches, short_hash

MAX_LATENCY_MS = 2**31 - 1
PROVENANCE_COLUMNS = {"model", "prompt", "parameters", "generated_at", "latency_ms", "dataset"}


@dataclass
class AnswerOptions:
    source: str
    source_kind: str = AnswerSource.Kind.IMPORTED
    model: str = ""
    dataset: str | None = None
    question_id_column: str = "question_id"
    question_column: str = "question"
    answer_column: str = "answer"
    provenance_note: str = ""
    study: int | None = None  # the study the answers are imported into: each one created or found is linked


@dataclass
class AnswerRow:
    line: int
    dataset: str | None
    question_id: str
    question_text: str
    text: str
    model_name: str = ""
    prompt: str = ""
    parameters: dict = field(default_factory=dict)
    generated_at: object = None
    latency_ms: int | None = None
    response_metadata: dict = field(default_factory=dict)


def import_answers_file(source: Source, filename: str, options: AnswerOptions) -> ImportReport:
    """Two streaming passes, as for questions (see store.py): check every row, then write in one transaction."""
    first = first_text(source)
    if first is None:
        raise ImportRejected([RowError(0, "the file is empty")])
    check_study(options.study, sources=[options.source])
    checked = ParsedQuestions(format="answers")  # counts rows read and collects errors
    _check_file(source, first, filename, options, checked)
    report = ImportReport(rows=checked.rows)
    with transaction.atomic():
        answer_source = _source(options, report)
        written = ParsedQuestions(format="answers")
        resolver = _QuestionResolver(written.errors)
        datasets_used: set[str] = set()
        for batch in batches(_rows(source, first, filename, options, written), _row_size):
            questions = resolver.resolve(list(batch))
            answers, found = _new_answers(batch, questions, answer_source, options, written.errors, report)
            Answer.objects.bulk_create(answers, batch_size=BATCH_ROWS)
            report.answers_created += len(answers)
            answer_ids = [*found, *(answer.pk for answer in answers)]
            link_imported(options.study, answer_ids)
            datasets_used.update(q.dataset.name for q in questions.values())
        if written.errors:  # the file or the database changed between the passes
            raise written.errors.rejected()
        report.datasets_used = sorted(datasets_used)
    return report


def check_study(study: int | None, *, sources: Iterable[str] = (), datasets: Iterable[str] = ()) -> None:
    """The study an import is for must exist and declare the sources and datasets known before reading: else the
    file is rejected before anything is read."""
    try:
        answer_links.check_study(study, sources=sources, datasets=datasets)
    except answer_links.StudyRefused as refused:
        raise ImportRejected([RowError(0, str(refused))]) from None


def link_imported(study: int | None, answer_ids: Iterable[int]) -> None:
    """Link a batch's answers to the study, inside the import's transaction: answers the study's file does not
    declare reject the whole file (the transaction rolls back), never a part of it."""
    try:
        answer_links.link_answers(study_id=study, answer_ids=answer_ids, via=answer_links.IMPORTED)
    except answer_links.StudyRefused as refused:
        raise ImportRejected([RowError(0, str(refused))]) from None


def _check_file(source: Source, first: str, filename: str, options: AnswerOptions, parsed: ParsedQuestions) -> None:
    database = RowErrors()  # conflicts with the database: reported only when the file itself is well formed
    resolver = _QuestionResolver(database)
    answer_source = AnswerSource.objects.filter(name=options.source).first()
    text_by_key: dict[int, int] = {}  # hash(question, settings) -> hash(answer text), for the file's rows
    for batch in batches(_rows(source, first, filename, options, parsed), _row_size):
        questions = resolver.resolve(list(batch))
        existing = {}
        if answer_source is not None:
            existing = _existing_answers(answer_source, questions.values())
        for row in batch:
            question = questions.get(row.line)
            if question is None:
                continue
            key = (question.id, settings_fingerprint(row.parameters))
            if key in existing:
                conflict = existing[key][1] != row.text
            else:
                digest = short_hash(row.text)
                conflict = text_by_key.setdefault(short_hash(str(key[0]), key[1]), digest) != digest
            if conflict:
                database.add(row.line, _conflict_message(options.source, question))
    resolver.report_unknown_datasets()
    if parsed.errors:
        raise parsed.errors.rejected()
    if database:
        raise database.rejected()


def _row_size(row: AnswerRow) -> int:
    return len(row.text) + len(row.prompt) + len(row.question_text) + 100


def _conflict_message(source_name: str, question: Question) -> str:
    return (
        f"{source_name!r} already has a different answer to question {question.external_id!r} "
        "with these settings; give the new one other parameters or another source"
    )


def _rows(source: Source, first: str, filename: str, options: AnswerOptions, parsed: ParsedQuestions):
    checked_columns = False
    for line, record in table_records(source, first, filename, parsed):
        if not checked_columns:
            problem = _column_problem(record, options)
            if problem:
                raise ImportRejected([RowError(line if is_jsonl(filename, first) else 1, problem)])
            checked_columns = True
        row = _row(line, record, options, parsed)
        if row is not None:
            yield row


def _column_problem(record: dict, options: AnswerOptions) -> str | None:
    if options.answer_column not in record:
        return f"missing column {options.answer_column!r}; the file has: {', '.join(record)}"
    if options.question_id_column not in record and options.question_column not in record:
        return (
            f"name each row's question with a {options.question_id_column!r} or {options.question_column!r} "
            f"column; the file has: {', '.join(record)}"
        )
    return None


def _row(line: int, record: dict, options: AnswerOptions, parsed: ParsedQuestions) -> AnswerRow | None:
    text_columns = [options.question_id_column, options.question_column, options.answer_column, "model", "prompt",
                    "dataset", "generated_at"]  # fmt: skip
    not_text = [column for column in text_columns if not isinstance(record.get(column) or "", str)]
    if not_text:
        parsed.error(line, f"{', '.join(not_text)} must be text, not a JSON object or list")
        return None
    question_id = (record.get(options.question_id_column) or "").strip()
    question_text = (record.get(options.question_column) or "").strip()
    if not question_id and not question_text:
        parsed.error(line, "the row names no question (question id and question text are both empty)")
        return None
    parameters = record.get("parameters") or {}
    if isinstance(parameters, str):
        parameters, problem = loads_json(parameters) if parameters.strip() else ({}, None)
        if problem:
            parsed.error(line, f'parameters must be a JSON object, e.g. {{"temperature": 0}}: {problem}')
            return None
    if not isinstance(parameters, dict):
        parsed.error(line, 'parameters must be a JSON object, e.g. {"temperature": 0}')
        return None
    generated_at = None
    if record.get("generated_at"):
        generated_at = _datetime(str(record["generated_at"]))
        if generated_at is None:
            parsed.error(line, f"generated_at {record['generated_at']!r} is not an ISO 8601 date and time")
            return None
    latency = record.get("latency_ms")
    if latency not in (None, ""):
        latency = _milliseconds(latency)
        if latency is None:
            parsed.error(line, f"latency_ms {record['latency_ms']!r} is not a number of milliseconds")
            return None
    used = PROVENANCE_COLUMNS | {options.question_id_column, options.question_column, options.answer_column}
    dataset = options.dataset or (record.get("dataset") or "").strip() or None
    return AnswerRow(
        line=line,
        dataset=(dataset_name_for_stem(dataset) or dataset) if dataset else None,
        question_id=question_id,
        question_text=question_text,
        text=record.get(options.answer_column) or "",
        model_name=(record.get("model") or options.model or "").strip(),
        prompt=record.get("prompt") or "",
        parameters=parameters,
        generated_at=generated_at,
        latency_ms=latency if latency not in (None, "") else None,
        response_metadata={k: v for k, v in record.items() if k not in used and v not in ("", None)},
    )


def _datetime(value: str):
    try:
        return parse_datetime(value)
    except ValueError:  # Well formed but impossible, e.g. 30 February.
        return None


def _milliseconds(value) -> int | None:
    try:
        number = int(float(value))
    except (ValueError, OverflowError):
        return None
    # The column is a PostgreSQL integer with a check for >= 0: out of range would fail the whole insert.
    return number if 0 <= number <= MAX_LATENCY_MS else None


def _source(options: AnswerOptions, report: ImportReport) -> AnswerSource:
    source = AnswerSource.objects.filter(name=options.source).first()
    if source is None:
        source = AnswerSource.objects.create(name=options.source, kind=options.source_kind, model_name=options.model)
        report.sources_created.append(source.name)
    return source


class _QuestionResolver:
    """Finds each row's question (by line), a batch at a time; ambiguous or unknown questions are errors."""

    def __init__(self, errors: RowErrors):
        self.errors = errors
        self.datasets: dict[str, Dataset | None] = {}
        self.unknown: dict[str, list[int]] = {}  # dataset name -> [first line, rows]

    def resolve(self, rows: list[AnswerRow]) -> dict[int, Question]:
        for name in {r.dataset for r in rows if r.dataset} - self.datasets.keys():
            self.datasets[name] = Dataset.objects.filter(name__iexact=name).first()
        ids = {r.question_id for r in rows if r.question_id}
        hashes = {text_fingerprint(r.question_text) for r in rows if r.question_text and not r.question_id}
        candidates = Question.objects.select_related("dataset").filter(external_id__in=ids) | Question.objects.filter(
            text_hash__in=hashes
        ).select_related("dataset")
        by_id: dict[str, list[Question]] = {}
        by_hash: dict[str, list[Question]] = {}
        for question in candidates:
            by_id.setdefault(question.external_id, []).append(question)
            by_hash.setdefault(question.text_hash, []).append(question)
        found: dict[int, Question] = {}
        for row in rows:
            dataset = self.datasets.get(row.dataset) if row.dataset else None
            if row.dataset and dataset is None:
                self.unknown.setdefault(row.dataset, [row.line, 0])[1] += 1
                continue
            if row.question_id:
                matches, what = by_id.get(row.question_id, []), f"question id {row.question_id!r}"
            else:
                matches, what = by_hash.get(text_fingerprint(row.question_text), []), "question text"
            if dataset is not None:
                matches = [q for q in matches if q.dataset_id == dataset.id]
            if not matches:
                where = f" in {dataset.name!r}" if dataset else ""
                self.errors.add(row.line, f"no question matches the {what}{where}")
            elif len(matches) > 1:
                names = ", ".join(sorted(q.dataset.name for q in matches))
                self.errors.add(row.line, f"the {what} is in several datasets ({names}): name the dataset")
            else:
                found[row.line] = matches[0]
        return found

    def report_unknown_datasets(self) -> None:
        for name, (line, count) in self.unknown.items():
            self.errors.add(line, f"no dataset named {name!r} (on {count} row(s))")


def _existing_answers(source: AnswerSource, questions) -> dict[tuple[int, str], tuple[int, str]]:
    """(question id, settings hash) -> (answer id, text) of the source's stored answers to these questions."""
    return {
        (question_id, digest): (pk, text)
        for question_id, digest, pk, text in Answer.objects.filter(
            source=source, question_id__in={q.id for q in questions}
        ).values_list("question_id", "settings_hash", "id", "text")
    }


def _new_answers(
    rows: Iterable[AnswerRow],
    questions: dict[int, Question],
    source: AnswerSource,
    options: AnswerOptions,
    errors: RowErrors,
    report: ImportReport,
) -> tuple[list[Answer], list[int]]:
    """(the answers to create, the ids of the rows' answers already stored)."""
    existing: dict[tuple[int, str], tuple[int | None, str]] = {**_existing_answers(source, questions.values())}
    new: list[Answer] = []
    found: list[int] = []
    for row in rows:
        question = questions.get(row.line)
        if question is None:
            continue
        key = (question.id, settings_fingerprint(row.parameters))
        if key in existing:
            pk, text = existing[key]
            if text != row.text:
                errors.add(row.line, _conflict_message(source.name, question))
                continue
            report.answers_existing += 1
            if pk is not None:
                found.append(pk)
            continue
        existing[key] = (None, row.text)  # a second row of the file with the same key: created once
        if not row.text.strip():
            report.empty_answers += 1
        new.append(
            Answer(
                question=question,
                source=source,
                text=row.text,
                model_name=row.model_name or source.model_name,
                prompt=row.prompt,
                parameters=row.parameters,
                settings_hash=key[1],
                response_metadata=row.response_metadata,
                generated_at=row.generated_at,
                latency_ms=row.latency_ms,
                provenance_note=options.provenance_note,
            )
        )
    return new, found
