"""Validate parsed rows against the database and write them in one transaction."""

from collections import defaultdict

from django.db import transaction

from ..catalogue import known_dataset
from ..models import CounterfactualPair, Dataset, Question, text_fingerprint
from ..text_diff import describe_difference
from .errors import ImportRejected, RowError
from .questions import MEDQA_DATASET, ParsedQuestions, QuestionRow, render_injection
from .report import ImportReport


def get_or_create_datasets(names: list[str], report: ImportReport) -> dict[str, Dataset]:
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


def store_questions(parsed: ParsedQuestions, report: ImportReport) -> ImportReport:
    errors: list[RowError] = []
    report.rows = parsed.rows
    with transaction.atomic():
        _render_injections(parsed, errors)
        names = [row.dataset for row in parsed.questions]
        datasets = get_or_create_datasets(names, report)
        ids = _store_question_rows(parsed.questions, datasets, errors, report)
        if not errors:
            _store_pairs(parsed, datasets, ids, report)
        if errors:
            raise ImportRejected(errors)  # rolls back the datasets created above
    return report


def _render_injections(parsed: ParsedQuestions, errors: list[RowError]) -> None:
    if not parsed.injections:
        return
    base = Dataset.objects.filter(name__iexact=MEDQA_DATASET).first()
    if base is None:
        errors.append(
            RowError(0, f"the base dataset {MEDQA_DATASET!r} is not imported yet: import questions/test.jsonl first")
        )
        return
    qids = {str(value["qid"]) for _, value in parsed.injections}
    base_questions = {q.external_id: q for q in base.questions.filter(external_id__in=qids)}
    for row, value in parsed.injections:
        question = base_questions.get(str(value["qid"]))
        if question is None:
            errors.append(RowError(row.line, f"qid {value['qid']} is not a question of {base.name!r}"))
            continue
        row.text = render_injection(question.text, value["injected_sentence"], value["injection_position"])
        for key in ("options", "answer", "meta_info"):
            if key in question.metadata:
                row.metadata.setdefault(key, question.metadata[key])
        parsed.questions.append(row)


def _store_question_rows(
    rows: list[QuestionRow], datasets: dict[str, Dataset], errors: list[RowError], report: ImportReport
) -> dict[tuple[str, str], int]:
    """Create the new questions; return (dataset name in file, text hash) → question id."""
    by_dataset: dict[str, list[QuestionRow]] = defaultdict(list)
    for row in rows:
        by_dataset[row.dataset].append(row)
    ids: dict[tuple[str, str], int] = {}
    for name, dataset_rows in by_dataset.items():
        dataset = datasets[name]
        hashes = {text_fingerprint(row.text) for row in dataset_rows}
        existing = dict(dataset.questions.filter(text_hash__in=hashes).values_list("text_hash", "id"))
        taken_ids = dict(
            dataset.questions.filter(external_id__in={row.external_id for row in dataset_rows}).values_list(
                "external_id", "text_hash"
            )
        )
        new: dict[str, Question] = {}
        for row in dataset_rows:
            digest = text_fingerprint(row.text)
            if digest in new or (name, digest) in ids:
                continue  # The same question again in this file (counterfactual sets repeat questions).
            if digest in existing:
                ids[(name, digest)] = existing[digest]
                report.questions_existing += 1
            elif row.external_id in taken_ids:
                errors.append(
                    RowError(
                        row.line,
                        f"id {row.external_id!r} already belongs to a different question in {dataset.name!r}",
                    )
                )
            else:
                new[digest] = Question(
                    dataset=dataset,
                    external_id=row.external_id,
                    text=row.text,
                    text_hash=digest,
                    metadata=row.metadata,
                )
        if errors:
            continue
        Question.objects.bulk_create(new.values(), batch_size=1000)
        report.questions_created += len(new)
        for digest, question_id in dataset.questions.filter(text_hash__in=new.keys()).values_list("text_hash", "id"):
            ids[(name, digest)] = question_id
    return ids


def _store_pairs(
    parsed: ParsedQuestions, datasets: dict[str, Dataset], ids: dict[tuple[str, str], int], report: ImportReport
) -> None:
    if not parsed.pairs:
        return
    dataset_ids = {datasets[pair.dataset].id for pair in parsed.pairs}
    existing = set(
        CounterfactualPair.objects.filter(dataset_id__in=dataset_ids).values_list("question_1_id", "question_2_id")
    )
    new = []
    for pair in parsed.pairs:
        key = (
            ids[(pair.dataset, text_fingerprint(pair.first.text))],
            ids[(pair.dataset, text_fingerprint(pair.second.text))],
        )
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
    CounterfactualPair.objects.bulk_create(new, batch_size=1000)
    report.pairs_created += len(new)
