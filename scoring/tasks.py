from celery import shared_task

from . import services


# Embedding scorers load their model once per worker process (scoring/embeddings.py) and read it here, so the
# web process never holds it. Idempotent: a re-run (or a redelivery after a lost worker) scores only what is
# still unscored.
@shared_task(acks_late=True)
def score_answers_task(
    scorer: str,
    dataset: str | None = None,
    source: str | None = None,
    study: int | None = None,
    batch_size: int | None = None,
) -> dict[str, int]:
    answers = services.select_answers(dataset=dataset, source=source, study=study)
    return services.score_missing(scorer=scorer, answers=answers, batch_size=batch_size)
