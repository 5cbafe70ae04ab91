"""Store scorers' readings of answers (scoring/DESIGN.md). Scores are only ever added, never updated or deleted."""

from django.db.models import Exists, OuterRef, QuerySet

from datasets.models import Answer

from . import scorers
from .models import Score


def score_missing(*, scorer: str, answers: QuerySet[Answer], batch_size: int = 2000) -> dict[str, int]:
    """Score the answers that have no score from the scorer's current version, a batch at a time.

    Answers whose question lacks a field the scorer needs (e.g. `answer_idx`) are skipped and counted.
    Concurrent runs are safe: the unique (answer, scorer, version) constraint with ignore_conflicts means a
    score another run wrote first is kept and ours dropped, so `scored` counts what this run tried to write.
    Returns counts: scored, skipped_no_key, correct, wrong, non_response, and the version used.
    """
    rule = scorers.current(scorer)
    fields = [f"question__metadata__{name}" for name in rule.question_fields]
    already = Score.objects.filter(answer=OuterRef("pk"), scorer=rule.name, version=rule.version)
    pending = answers.filter(~Exists(already)).order_by("pk")
    counts = {"scored": 0, "skipped_no_key": 0, **{outcome: 0 for outcome in scorers.OUTCOMES}}
    last = 0
    while True:
        # Keyset pages: each query is bounded, and skipped answers are not read again.
        batch = list(pending.filter(pk__gt=last).values_list("pk", "text", "refusal", *fields)[:batch_size])
        if not batch:
            break
        last = batch[-1][0]
        new = []
        for pk, text, refusal, *values in batch:
            if any(value in (None, "") for value in values):
                counts["skipped_no_key"] += 1
                continue
            reading = rule.read(text, refusal, dict(zip(rule.question_fields, values, strict=True)))
            counts[reading.outcome] += 1
            new.append(Score(answer_id=pk, scorer=rule.name, version=rule.version, outcome=reading.outcome,
                             value=reading.value))  # fmt: skip
        Score.objects.bulk_create(new, ignore_conflicts=True)
        counts["scored"] += len(new)
    return {"version": rule.version, **counts}
