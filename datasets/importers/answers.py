"""Import answers from a CSV (with a header) or JSONL file and attach them to questions.

A row names its question by id (`question_id`) or by exact text (`question`); the answer
text is in `answer`. Provenance columns are optional: `model`, `prompt`, `parameters`
(a JSON object of generation settings), `generated_at` (ISO 8601), `latency_ms`, and
`dataset` (otherwise --dataset, or a question id that is unique across datasets).
Other columns are kept as the answer's response metadata.
"""

import json
from dataclasses import dataclass, field

from django.db import transaction
from django.utils.dateparse import parse_datetime

from ..catalogue import dataset_name_for_stem
from ..models import Answer, AnswerSource, Dataset, Question, settings_fingerprint, text_fingerprint
from .errors import ImportRejected, RowError
from .questions import ParsedQuestions, is_jsonl, table_records
from .reading import decode_text
from .report import ImportReport

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


def import_answers_file(data: bytes, filename: str, options: AnswerOptions) -> ImportReport:
    rows, parsed = _parse(data, filename, options)
    report = ImportReport(rows=parsed.rows)
    errors: list[RowError] = list(parsed.errors)
    if errors:
        raise ImportRejected(errors)
    with transaction.atomic():
        source = _source(options, report)
        questions = _resolve_questions(rows, errors)
        answers = _new_answers(rows, questions, source, options, errors, report)
        if errors:
            raise ImportRejected(errors)
        Answer.objects.bulk_create(answers, batch_size=1000)
        report.answers_created = len(answers)
        report.datasets_used = sorted({q.dataset.name for q in questions.values()})
    return report


def _parse(data: bytes, filename: str, options: AnswerOptions) -> tuple[list[AnswerRow], ParsedQuestions]:
    text = decode_text(data)
    if not text.strip():
        raise ImportRejected([RowError(0, "the file is empty")])
    parsed = ParsedQuestions(format="answers")  # collects rows read and errors
    rows: list[AnswerRow] = []
    checked_columns = False
    for line, record in table_records(text, filename, parsed):
        if not checked_columns:
            problem = _column_problem(record, options)
            if problem:
                raise ImportRejected([RowError(line if is_jsonl(filename, text) else 1, problem)])
            checked_columns = True
        row = _row(line, record, options, parsed)
        if row is not None:
            rows.append(row)
    return rows, parsed


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
    question_id = (record.get(options.question_id_column) or "").strip()
    question_text = (record.get(options.question_column) or "").strip()
    if not question_id and not question_text:
        parsed.error(line, "the row names no question (question id and question text are both empty)")
        return None
    parameters = record.get("parameters") or {}
    if isinstance(parameters, str):
        try:
            parameters = json.loads(parameters) if parameters.strip() else {}
        except json.JSONDecodeError:
            parameters = None
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


def _resolve_questions(rows: list[AnswerRow], errors: list[RowError]) -> dict[int, Question]:
    """Find each row's question (by line); ambiguous or unknown questions are errors."""
    datasets = {
        name: Dataset.objects.filter(name__iexact=name).first() for name in {r.dataset for r in rows if r.dataset}
    }
    for name, dataset in datasets.items():
        if dataset is None:
            lines = [r.line for r in rows if r.dataset == name]
            errors.append(RowError(lines[0], f"no dataset named {name!r} (on {len(lines)} row(s))"))
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
        dataset = datasets.get(row.dataset) if row.dataset else None
        if row.dataset and dataset is None:
            continue
        if row.question_id:
            matches, what = by_id.get(row.question_id, []), f"question id {row.question_id!r}"
        else:
            matches, what = by_hash.get(text_fingerprint(row.question_text), []), "question text"
        if dataset is not None:
            matches = [q for q in matches if q.dataset_id == dataset.id]
        if not matches:
            where = f" in {dataset.name!r}" if dataset else ""
            errors.append(RowError(row.line, f"no question matches the {what}{where}"))
        elif len(matches) > 1:
            names = ", ".join(sorted(q.dataset.name for q in matches))
            errors.append(RowError(row.line, f"the {what} is in several datasets ({names}): name the dataset"))
        else:
            found[row.line] = matches[0]
    return found


def _new_answers(
    rows: list[AnswerRow],
    questions: dict[int, Question],
    source: AnswerSource,
    options: AnswerOptions,
    errors: list[RowError],
    report: ImportReport,
) -> list[Answer]:
    existing = {
        (question_id, digest): text
        for question_id, digest, text in Answer.objects.filter(
            source=source, question_id__in={q.id for q in questions.values()}
        ).values_list("question_id", "settings_hash", "text")
    }
    new: list[Answer] = []
    for row in rows:
        question = questions.get(row.line)
        if question is None:
            continue
        key = (question.id, settings_fingerprint(row.parameters))
        if key in existing:
            if existing[key] != row.text:
                errors.append(
                    RowError(
                        row.line,
                        f"{source.name!r} already has a different answer to question {question.external_id!r} "
                        "with these settings; give the new one other parameters or another source",
                    )
                )
            else:
                report.answers_existing += 1
            continue
        existing[key] = row.text
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
    return new
