"""Import a question file in two streaming passes: check every row, then write them all in one transaction.

Pass 1 reads the file row by row, checks each row on its own, against the rows before it and against the
database (in batches), and keeps only small keys per row (64-bit hashes), never the rows. If anything is
wrong the file is rejected with every bad line and nothing is written. Pass 2 reads the file again and
writes it in batches inside one transaction, so an import is still all or nothing.
"""

from array import array
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from django.db import reset_queries, transaction

from ..catalogue import known_dataset
from ..models import CounterfactualPair, Dataset, Question, text_fingerprint
from ..text_diff import describe_difference
from .errors import ImportRejected, RowErrors
from .questions import (
    MEDQA_DATASET,
    Injection,
    Item,
    PairRow,
    ParsedQuestions,
    QuestionOptions,
    QuestionRow,
    question_format,
    question_items,
    render_injection,
)
from .reading import Source, json_problem, text_problem
from .report import ImportReport

# A batch is written (or checked against the database) at this many rows or this much text, whichever comes
# first: the batch, and the SQL built from it, are what an import holds in memory.
BATCH_ROWS = 1000
BATCH_CHARS = 1024 * 1024


def batches[T](items: Iterable[T], size: Callable[[T], int]) -> Iterator[list[T]]:
    """Rows in batches of at most BATCH_ROWS rows or BATCH_CHARS of text.

    Each batch starts with an empty query log: with DEBUG on (the demo), Django keeps every query's SQL with its
    parameters, so a long import would otherwise hold the text of the whole file (400 MB for BiasMedQA's
    responses)."""
    batch: list[T] = []
    chars = 0
    for item in items:
        batch.append(item)
        chars += size(item)
        if len(batch) >= BATCH_ROWS or chars >= BATCH_CHARS:
            reset_queries()
            yield batch
            batch, chars = [], 0
    if batch:
        reset_queries()
        yield batch


def _item_size(item: Item) -> int:
    if isinstance(item, Injection):
        return 2000  # rendered from a MedQA question (about 1 KB) later
    return sum(len(row.text) for row in _questions_of(item)) + 100


def short_hash(*parts: str) -> int:
    """64 bits of SHA-256 over the parts: a compact per-row key (collisions are beyond reach at file sizes)."""
    return int(text_fingerprint("\x00".join(parts))[:16], 16)


def import_question_file(source: Source, filename: str, options: QuestionOptions) -> ImportReport:
    fmt = question_format(source, filename, options)
    checked = ParsedQuestions(format=fmt)
    _check_file(source, filename, options, checked)
    report = ImportReport(rows=checked.rows)
    with transaction.atomic():
        written = ParsedQuestions(format=fmt)
        _write_file(source, filename, options, written, report)
        if written.errors:  # the file changed between the passes
            raise written.errors.rejected()
    return report


# --- Pass 1: check ---------------------------------------------------------------------------


@dataclass
class _FileChecks:
    """What pass 1 remembers across rows: hashes and line numbers, not texts."""

    text_by_id: dict[int, int] = field(default_factory=dict)  # hash(dataset, id) -> hash(text)
    seen: set[int] = field(default_factory=set)  # hash(dataset, text)
    pair_datasets: set[str] = field(default_factory=set)
    single_lines: dict[str, array] = field(default_factory=dict)  # dataset -> lines of rows that are no pair
    datasets: dict[str, Dataset | None] = field(default_factory=dict)
    database: RowErrors = field(default_factory=RowErrors)  # conflicts with the database, reported if no others


def _check_file(source: Source, filename: str, options: QuestionOptions, parsed: ParsedQuestions) -> None:
    checks = _FileChecks()
    renderer = _InjectionRenderer(checks.database)
    for batch in batches(question_items(source, filename, options, parsed), _item_size):
        rows = []
        for item in renderer.rendered(batch):
            if isinstance(item, PairRow) and (problem := json_problem(item.metadata)):
                parsed.error(item.line, problem)
                continue
            for row in _questions_of(item):
                if problem := _row_problem(row):
                    parsed.error(row.line, problem)
                    continue
                _check_row(row, isinstance(item, PairRow), checks, parsed)
                rows.append(row)
        _check_against_database(rows, checks)
    for dataset in checks.pair_datasets & checks.single_lines.keys():
        for line in checks.single_lines[dataset]:
            parsed.error(line, f"a pair with one side missing: other rows of {dataset!r} are counterfactual pairs")
    if parsed.errors:
        raise parsed.errors.rejected()
    if checks.database:
        raise checks.database.rejected()


def _questions_of(item: Item) -> list[QuestionRow]:
    return [item.first, item.second] if isinstance(item, PairRow) else [item]


def _row_problem(row: QuestionRow) -> str | None:
    return text_problem(row.dataset) or text_problem(row.external_id) or text_problem(row.text) or (
        json_problem(row.metadata))  # fmt: skip


def _check_row(row: QuestionRow, in_pair: bool, checks: _FileChecks, parsed: ParsedQuestions) -> None:
    """Within one file: one id is one text, and a dataset's rows are all pairs or all single questions."""
    digest = short_hash(row.text.strip())
    known = checks.text_by_id.setdefault(short_hash(row.dataset, row.external_id), digest)
    if known != digest:
        parsed.error(row.line, f"id {row.external_id!r} is used twice in {row.dataset!r} for different questions")
    if in_pair:
        checks.pair_datasets.add(row.dataset)
    else:
        checks.single_lines.setdefault(row.dataset, array("Q")).append(row.line)


def _check_against_database(rows: list[QuestionRow], checks: _FileChecks) -> None:
    """A row whose id belongs to another question already in its dataset is a conflict (checked once per text)."""
    by_dataset: dict[str, list[QuestionRow]] = {}
    for row in rows:
        key = short_hash(row.dataset, text_fingerprint(row.text))
        if key not in checks.seen:
            checks.seen.add(key)
            by_dataset.setdefault(row.dataset, []).append(row)
    for name, dataset_rows in by_dataset.items():
        if name not in checks.datasets:
            checks.datasets[name] = Dataset.objects.filter(name__iexact=name).first()
        dataset = checks.datasets[name]
        if dataset is None:
            continue
        hashes = {text_fingerprint(row.text) for row in dataset_rows}
        existing = set(dataset.questions.filter(text_hash__in=hashes).values_list("text_hash", flat=True))
        taken = set(
            dataset.questions.filter(external_id__in={row.external_id for row in dataset_rows}).values_list(
                "external_id", flat=True
            )
        )
        for row in dataset_rows:
            if text_fingerprint(row.text) not in existing and row.external_id in taken:
                checks.database.add(
                    row.line, f"id {row.external_id!r} already belongs to a different question in {dataset.name!r}"
                )


class _InjectionRenderer:
    """BiasMedQA injections get their text from the base MedQA question, looked up a batch at a time."""

    def __init__(self, errors: RowErrors):
        self.errors = errors
        self.base: Dataset | None = None
        self.looked_up = False

    def rendered(self, batch: Iterable[Item]) -> Iterator[Item]:
        batch = list(batch)
        injections = [item for item in batch if isinstance(item, Injection)]
        questions = self._base_questions(injections) if injections else {}
        for item in batch:
            if not isinstance(item, Injection):
                yield item
                continue
            if self.base is None:
                continue
            question = questions.get(str(item.value["qid"]))
            if question is None:
                self.errors.add(item.row.line, f"qid {item.value['qid']} is not a question of {self.base.name!r}")
                continue
            row, value = item.row, item.value
            row.text = render_injection(question.text, value["injected_sentence"], value["injection_position"])
            for key in ("options", "answer", "meta_info"):
                if key in question.metadata:
                    row.metadata.setdefault(key, question.metadata[key])
            yield row

    def _base_questions(self, injections: list[Injection]) -> dict[str, Question]:
        if not self.looked_up:
            self.looked_up = True
            self.base = Dataset.objects.filter(name__iexact=MEDQA_DATASET).first()
            if self.base is None:
                self.errors.add(
                    0, f"the base dataset {MEDQA_DATASET!r} is not imported yet: import questions/test.jsonl first"
                )
        if self.base is None:
            return {}
        qids = {str(item.value["qid"]) for item in injections}
        return {q.external_id: q for q in self.base.questions.filter(external_id__in=qids)}


# --- Pass 2: write ---------------------------------------------------------------------------


def get_or_create_datasets(names: Iterable[str], report: ImportReport) -> dict[str, Dataset]:
    found = {}
    for name in dict.fromkeys(names):
        dataset = Dataset.objects.filter(name__iexact=name).first()
        if dataset is None:
            known = known_dataset(name)
            dataset = Dataset.objects.create(
                name=known.name if known else name,
                description=known.description if known else "",
                licence=known.licence if known else "",
                source=known.source if known else "",
            )
            report.datasets_created.append(dataset.name)
        else:
            report.datasets_used.append(dataset.name)
        found[name] = dataset
    return found


def _write_file(
    source: Source, filename: str, options: QuestionOptions, parsed: ParsedQuestions, report: ImportReport
) -> None:
    datasets: dict[str, Dataset] = {}
    seen: set[int] = set()  # hash(dataset, text) of the questions created or counted so far
    renderer = _InjectionRenderer(parsed.errors)
    for batch in batches(question_items(source, filename, options, parsed), _item_size):
        items = list(renderer.rendered(batch))
        names = [row.dataset for item in items for row in _questions_of(item) if row.dataset not in datasets]
        datasets.update(get_or_create_datasets(names, report))
        ids = _write_questions(items, datasets, seen, report)
        _write_pairs([item for item in items if isinstance(item, PairRow)], datasets, ids, report)


def _write_questions(
    items: list[Item], datasets: dict[str, Dataset], seen: set[int], report: ImportReport
) -> dict[tuple[str, str], int]:
    """Create the batch's new questions; return (dataset name in file, text hash) -> question id."""
    by_dataset: dict[str, list[QuestionRow]] = {}
    for item in items:
        for row in _questions_of(item):
            by_dataset.setdefault(row.dataset, []).append(row)
    ids: dict[tuple[str, str], int] = {}
    for name, rows in by_dataset.items():
        dataset = datasets[name]
        hashes = {text_fingerprint(row.text) for row in rows}
        existing = dict(dataset.questions.filter(text_hash__in=hashes).values_list("text_hash", "id"))
        new: dict[str, Question] = {}
        for row in rows:
            digest = text_fingerprint(row.text)
            key = short_hash(name, digest)
            if key in seen:
                continue  # The same question again in this file (counterfactual sets repeat questions).
            seen.add(key)
            if digest in existing:
                report.questions_existing += 1
            else:
                new[digest] = Question(
                    dataset=dataset, external_id=row.external_id, text=row.text, text_hash=digest, metadata=row.metadata
                )
        Question.objects.bulk_create(new.values(), batch_size=BATCH_ROWS)
        report.questions_created += len(new)
        for digest, question_id in dataset.questions.filter(text_hash__in=hashes).values_list("text_hash", "id"):
            ids[(name, digest)] = question_id
    return ids


def _write_pairs(
    pairs: list[PairRow], datasets: dict[str, Dataset], ids: dict[tuple[str, str], int], report: ImportReport
) -> None:
    if not pairs:
        return
    keys = [
        (ids[(pair.dataset, text_fingerprint(side_1.text))], ids[(pair.dataset, text_fingerprint(side_2.text))])
        for pair in pairs
        for side_1, side_2 in [(pair.first, pair.second)]
    ]
    existing = set(
        CounterfactualPair.objects.filter(question_1_id__in={key[0] for key in keys}).values_list(
            "question_1_id", "question_2_id"
        )
    )
    new = []
    for pair, key in zip(pairs, keys, strict=True):
        if key in existing:
            report.pairs_existing += 1
            continue
        existing.add(key)
        new.append(
            CounterfactualPair(
                dataset=datasets[pair.dataset],
                question_1_id=key[0],
                question_2_id=key[1],
                external_id=pair.external_id,
                difference=describe_difference(pair.first.text, pair.second.text),
                metadata=pair.metadata,
            )
        )
    CounterfactualPair.objects.bulk_create(new, batch_size=BATCH_ROWS)
    report.pairs_created += len(new)


__all__ = ["ImportRejected", "get_or_create_datasets", "import_question_file"]
