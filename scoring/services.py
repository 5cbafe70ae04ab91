"""Store scorers' readings of answers (scoring/DESIGN.md). Scores are only ever added, never updated or deleted."""

from django.db import reset_queries
from django.db.models import QuerySet

from datasets.models import Answer

from . import scorers
from .models import Score


def score_missing(*, scorer: str, answers: QuerySet[Answer], batch_size: int = 2000) -> dict[str, int]:
    """Score the answers that have no score from the scorer's current version, a batch at a time.

    Answers whose question lacks a field the scorer needs (e.g. `answer_idx`) are skipped and counted; an
    optional one (`optional_question_fields`, e.g. `options`) and a response field arrive as None when missing.
    Concurrent runs are safe: the unique (answer, scorer, version) constraint with ignore_conflicts means a
    score another run wrote first is kept and ours dropped, so `scored` counts what this run tried to write.
    Returns counts: scored, skipped_no_key, one per outcome (correct, wrong, non_response, measured, missing),
    and the version used.
    """
    rule = scorers.current(scorer)
    fields = [f"question__metadata__{name}" for name in rule.question_fields]
    optional = [f"question__metadata__{name}" for name in rule.optional_question_fields]
    response = [f"response_metadata__{name}" for name in rule.response_fields]
    names = (*rule.question_fields, *rule.optional_question_fields, *rule.response_fields)
    ordered = answers.order_by("pk")
    outcomes = (*scorers.OUTCOMES, *scorers.NUMERIC_OUTCOMES)
    counts = {"scored": 0, "skipped_no_key": 0, **{outcome: 0 for outcome in outcomes}}
    last = 0
    while True:
        reset_queries()  # with DEBUG on, Django logs every query: a long run would keep them all
        # Keyset pages of ids, then the page's stored scores by index: each query is bounded and linear
        # (an anti-join over the whole table let PostgreSQL hash every score of the scorer on every page).
        ids = list(ordered.filter(pk__gt=last).values_list("pk", flat=True)[:batch_size])
        if not ids:
            break
        last = ids[-1]
        stored = Score.objects.filter(answer_id__in=ids, scorer=rule.name, version=rule.version)
        todo = set(ids) - set(stored.values_list("answer_id", flat=True))
        if not todo:
            continue
        new = []
        rows = Answer.objects.filter(pk__in=todo).values_list("pk", "text", "refusal", *fields, *optional, *response)
        for pk, text, refusal, *values in rows:
            if any(value in (None, "") for value in values[: len(fields)]):
                counts["skipped_no_key"] += 1
                continue
            read = dict(zip(names, values, strict=True))
            reading = rule.read(text, refusal, read)
            counts[reading.outcome] += 1
            new.append(Score(answer_id=pk, scorer=rule.name, version=rule.version, outcome=reading.outcome,
                             value=reading.value, number=reading.number))  # fmt: skip
        Score.objects.bulk_create(new, ignore_conflicts=True)
        counts["scored"] += len(new)
    return {"version": rule.version, **counts}
