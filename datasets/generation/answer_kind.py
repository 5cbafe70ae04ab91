"""The engine's `answer` kind: one call answers one question of a generation job (engine/DESIGN.md, "Kinds").

A call's subject is `{"job": <GenerationJob id>, "question": <Question id>}` and its batch
`"generation-job:<id>"`; it is sent to the job's source's endpoint. `prepare` builds the job's request for the
question (the first call of a queued job marks it running), `store` keeps the answer once (its unique key
finds the first on a duplicate) linked to the job's study, and `failed` adds nothing: the call keeps the
error and its history.
"""

from django.db import transaction

import engine
from engine import calls as engine_calls
from engine.models import Call

from ..models import GenerationJob, Question
from . import work

KIND = "answer"


def batch_of(job_id: int) -> str:
    return f"generation-job:{job_id}"


def subject_for(job_id: int, question_id: int) -> dict:
    return {"job": job_id, "question": question_id}


def _job(call) -> GenerationJob:
    job = GenerationJob.objects.select_related("source").filter(pk=call.subject.get("job")).first()
    if job is None:
        raise engine.CallRefused(f"generation job {call.subject.get('job')} no longer exists")
    return job


def _question(call) -> Question:
    question = Question.objects.filter(pk=call.subject.get("question")).first()
    if question is None:
        raise engine.CallRefused(f"question {call.subject.get('question')} no longer exists")
    return question


class AnswerKind:
    def prepare(self, call) -> engine.Request:
        job = _job(call)
        if job.cancelled_at is not None:
            # Only a call in flight at the cancel that then backed off gets here: the cancel took the others.
            raise engine.CallRefused(f"generation job {job.id} was cancelled")
        if job.status == GenerationJob.Status.QUEUED:
            GenerationJob.claim(job.id)  # the job's first question: it is running from now
        prepared = work.prepare_question(job, _question(call))
        call.answer_prepared = prepared  # what the answer keeps of it, for `store` on the same call
        return prepared.request

    def store(self, call, completion) -> dict:
        job, question = _job(call), _question(call)
        prepared = getattr(call, "answer_prepared", None) or work.prepare_question(job, question)
        answer = work.keep_answer(job, question.id, job.source, completion, prepared, attempt=call.attempts)
        finish_if_complete(job.id, besides=call.id)  # this call is done once the transaction commits
        return {"answer": answer.id}

    def failed(self, call, error) -> None:
        """Nothing more to record (the call holds the error and the history of its attempts) but the job's end."""
        finish_if_complete(call.subject.get("job"))


def finish_if_complete(job_id: int, *, besides: int | None = None) -> int:
    """Mark the job done when its batch has no pending or in-flight call left (but `besides`); how many ended.

    Decided under the job's row lock, held until the caller's transaction commits: of two calls ending at
    once, the second to take the lock sees the first one ended (READ COMMITTED), so one of them ends the job.
    The job's page checks again all the same (`jobs.job_progress`).
    """
    with transaction.atomic():
        if GenerationJob.objects.live().select_for_update().filter(id=job_id).first() is None:
            return 0
        unfinished = Call.objects.filter(kind=KIND, batch=batch_of(job_id), status__in=engine_calls.UNFINISHED)
        if besides is not None:
            unfinished = unfinished.exclude(id=besides)
        if unfinished.exists():
            return 0
        return GenerationJob.objects.live().filter(id=job_id).finish()


def register() -> None:
    engine.register(KIND, AnswerKind())
