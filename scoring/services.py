"""Store scorers' readings of answers (scoring/DESIGN.md). Scores are only ever added, never updated or deleted."""

from dataclasses import replace

from django.db import reset_queries
from django.db.models import QuerySet

from datasets.models import Answer

from . import embedding_cache, references, scorers
from .models import Score

NO_BASE = {"reason": "the question has no base question"}


def select_answers(
    *, dataset: str | None = None, source: str | None = None, study: int | None = None
) -> QuerySet[Answer]:
    """The answers to score: all, or those of a dataset (by name), a source (by name) and a study (by id; through
    the answers' study links: scoring never imports studies/)."""
    answers = Answer.objects.all()
    if dataset:
        answers = answers.filter(question__dataset__name=dataset)
    if source:
        answers = answers.filter(source__name=source)
    if study is not None:
        answers = answers.filter(studies__id=study)
    return answers


def score_missing(*, scorer: str, answers: QuerySet[Answer], batch_size: int | None = None) -> dict[str, int]:
    """Score the answers that have no score from the scorer's current version, a batch at a time.

    Each batch (`batch_size` answers, else the scorer's own `batch_size`) is read by the scorer at once, and a
    scorer that reads a reference gets the batch's references from one query (scoring/references.py).
    Answers whose question lacks a field the scorer needs (e.g. `answer_idx`) are skipped and counted; an
    optional one (`optional_question_fields`, e.g. `options`) and a response field arrive as None when missing.
    For a scorer that reads a reference, an answer whose question has no base is stored as `missing` (final),
    and one whose reference does not exist yet is counted in `no_reference_yet` and tried again next run.
    Concurrent runs are safe: the unique (answer, scorer, version) constraint with ignore_conflicts means a
    score another run wrote first is kept and ours dropped, so `scored` counts what this run tried to write.
    Returns counts: scored, skipped_no_key, no_reference_yet, one per outcome (correct, wrong, non_response,
    measured, missing), and the version used.
    """
    rule = scorers.current(scorer)
    size = batch_size or rule.batch_size
    ordered = answers.order_by("pk")
    outcomes = (*scorers.OUTCOMES, *scorers.NUMERIC_OUTCOMES)
    counts = {"scored": 0, "skipped_no_key": 0, "no_reference_yet": 0, **{outcome: 0 for outcome in outcomes}}
    last = 0
    while True:
        reset_queries()  # with DEBUG on, Django logs every query: a long run would keep them all
        # Keyset pages of ids, then the page's stored scores by index: each query is bounded and linear
        # (an anti-join over the whole table let PostgreSQL hash every score of the scorer on every page).
        ids = list(ordered.filter(pk__gt=last).values_list("pk", flat=True)[:size])
        if not ids:
            break
        last = ids[-1]
        stored = Score.objects.filter(answer_id__in=ids, scorer=rule.name, version=rule.version)
        todo = set(ids) - set(stored.values_list("answer_id", flat=True))
        if not todo:
            continue
        new = _read_page(rule, _replies(rule, todo, counts), counts)
        Score.objects.bulk_create(new, ignore_conflicts=True)
        counts["scored"] += len(new)
    return {"version": rule.version, **counts}


def _replies(
    rule: scorers.Scorer, todo: set[int], counts: dict[str, int]
) -> list[tuple[references.Referring, scorers.Reply]]:
    """The page's answers as the scorer reads them, with what a reference rule needs; those whose question
    lacks a field the scorer needs are counted in `skipped_no_key` and left out."""
    fields = [f"question__metadata__{name}" for name in rule.question_fields]
    optional = [f"question__metadata__{name}" for name in rule.optional_question_fields]
    response = [f"response_metadata__{name}" for name in rule.response_fields]
    names = (*rule.question_fields, *rule.optional_question_fields, *rule.response_fields)
    rows = Answer.objects.filter(pk__in=todo).order_by("pk").values_list(
        "pk", "text", "refusal", "question__base_id", "source_id", "settings_hash", *fields, *optional, *response
    )  # fmt: skip
    replies = []
    for pk, text, refusal, base_id, source_id, settings_hash, *values in rows:
        if any(value in (None, "") for value in values[: len(fields)]):
            counts["skipped_no_key"] += 1
            continue
        reply = scorers.Reply(text, refusal, dict(zip(names, values, strict=True)))
        replies.append((references.Referring(pk, base_id, source_id, settings_hash), reply))
    return replies


def _read_page(
    rule: scorers.Scorer, replies: list[tuple[references.Referring, scorers.Reply]], counts: dict[str, int]
) -> list[Score]:
    """The page's new scores: the scorer reads its answers (with their references) in one batch."""
    find = references.RULES[rule.reference] if rule.reference is not None else None
    found = find([referring for referring, _ in replies]) if find is not None else {}
    new = []
    pairs: list[scorers.Pair] = []
    paired: list[tuple[int, int | None]] = []  # (answer id, its reference answer's id) per pair
    for referring, reply in replies:
        if find is None:
            pairs.append(scorers.Pair(reply))
            paired.append((referring.answer_id, None))
        elif referring.base_question_id is None:
            counts[scorers.MISSING] += 1
            new.append(Score(answer_id=referring.answer_id, scorer=rule.name, version=rule.version,
                             outcome=scorers.MISSING, value=dict(NO_BASE)))  # fmt: skip
        elif (reference := found.get(referring.answer_id)) is None:
            counts["no_reference_yet"] += 1  # not stored: a later run reads the reference once it exists
        else:
            pairs.append(scorers.Pair(reply, reference.reply))
            paired.append((referring.answer_id, reference.answer_id))
    if rule.embedding_model is not None and pairs:
        pairs = _with_embeddings(rule.embedding_model, pairs, paired)
    readings = rule.score_batch(pairs) if pairs else []
    for (answer_id, reference_id), reading in zip(paired, readings, strict=True):
        counts[reading.outcome] += 1
        # A two-answer score keeps which answer it was compared with, whatever the scorer returned.
        value = reading.value if reference_id is None else {**reading.value, "reference_answer": reference_id}
        new.append(Score(answer_id=answer_id, scorer=rule.name, version=rule.version, outcome=reading.outcome,
                         value=value, number=reading.number))  # fmt: skip
    return new


def _with_embeddings(model: str, pairs: list[scorers.Pair], paired: list[tuple[int, int | None]]) -> list[scorers.Pair]:
    """The pairs with each text's embedding attached, the page's distinct answers embedded at once through the
    cache: a reference shared by several answers of the page (or of earlier runs) is embedded once."""
    texts: dict[int, str] = {}
    for pair, (answer_id, reference_id) in zip(pairs, paired, strict=True):
        texts[answer_id] = pair.answer.text
        if pair.reference is not None and reference_id is not None:
            texts[reference_id] = pair.reference.text
    found = embedding_cache.vectors_for(texts, model=model)
    attached = []
    for pair, (answer_id, reference_id) in zip(pairs, paired, strict=True):
        reference = pair.reference
        if reference is not None and reference_id is not None:
            reference = replace(reference, embedding=found.get(reference_id))
        attached.append(scorers.Pair(replace(pair.answer, embedding=found.get(answer_id)), reference))
    return attached
