"""One question at a time: claim it, ask the model, store the answer once or record why not."""

import logging
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Exists, Min, OuterRef, Q
from django.utils import timezone

import engine
from engine import calls as engine_calls
from engine.llm_client import Completion, LLMError, build_messages

from .. import answer_links
from ..models import Answer, AnswerSource, GenerationJob, GenerationTask, PromptRecipe, Question
from ..recipes import RecipeError, build_request

logger = logging.getLogger(__name__)


def lease_seconds(source: AnswerSource) -> float:
    """How long a request may be in flight before its worker is presumed dead."""
    return source.request_timeout_seconds + settings.GENERATION_LEASE_MARGIN_SECONDS


def _claimable(source: AnswerSource, now):
    due = Q(status=GenerationTask.Status.PENDING) & (Q(not_before__isnull=True) | Q(not_before__lte=now))
    abandoned = Q(status=GenerationTask.Status.RUNNING, lease_expires_at__lt=now)
    return GenerationTask.objects.filter(due | abandoned, source=source, job__cancelled_at__isnull=True)


def claim_next_task(source: AnswerSource, holder: str) -> GenerationTask | None:
    """Take the oldest due question of the source's live jobs, or one whose worker died; None if none is due.

    PostgreSQL hands each row to one caller (SKIP LOCKED); the UPDATE only applies if the row is as it was
    read (any claim bumps `attempts`), which makes the claim safe on SQLite too, where the lock is a no-op.
    """
    for _ in range(10):
        now = timezone.now()
        lease_expires_at = now + timedelta(seconds=lease_seconds(source))
        with transaction.atomic():
            task = (
                _claimable(source, now)
                .order_by("job_id", "id")
                .select_for_update(skip_locked=True, of=("self",))
                .select_related("job", "question")
                .first()
            )
            if task is None:
                return None
            claimed = GenerationTask.objects.filter(id=task.id, status=task.status, attempts=task.attempts).update(
                status=GenerationTask.Status.RUNNING,
                lease_expires_at=lease_expires_at,
                claimed_by=holder[:200],
                attempts=task.attempts + 1,
            )
        if claimed:
            task.status, task.claimed_by = GenerationTask.Status.RUNNING, holder
            task.lease_expires_at, task.attempts = lease_expires_at, task.attempts + 1
            if task.job.status == GenerationJob.Status.QUEUED:
                GenerationJob.claim(task.job_id)  # the job's first question: it is running from now
            return task
    return None


def seconds_until_due(source: AnswerSource) -> float | None:
    """When the next question of the source becomes claimable; None when its live jobs have nothing left."""
    unfinished = GenerationTask.objects.filter(
        source=source,
        job__cancelled_at__isnull=True,
        status__in=[GenerationTask.Status.PENDING, GenerationTask.Status.RUNNING],
    )
    times = unfinished.aggregate(
        backoff=Min("not_before", filter=Q(status=GenerationTask.Status.PENDING)),
        lease=Min("lease_expires_at", filter=Q(status=GenerationTask.Status.RUNNING)),
        any_pending_now=Min("id", filter=Q(status=GenerationTask.Status.PENDING, not_before__isnull=True)),
        any_task=Min("id"),
    )
    if times["any_task"] is None:
        return None
    if times["any_pending_now"] is not None:
        return 0.0
    due = [moment for moment in (times["backoff"], times["lease"]) if moment is not None]
    return max(0.0, (min(due) - timezone.now()).total_seconds()) if due else 0.0


@dataclass(frozen=True)
class Prepared:
    """One question's request, and what its answer keeps of it (the answer kind's `prepare`, engine/DESIGN.md)."""

    request: engine.Request
    messages: list[dict]
    prompt: str | None = None  # a recipe's prompt text; else the last message is the prompt
    sent: dict | None = None  # a recipe's exact body, kept on the answer
    examples: tuple[str, ...] = ()


def prepare(task: GenerationTask) -> Prepared:
    return prepare_question(task.job, task.question)


def prepare_question(job: GenerationJob, question: Question) -> Prepared:
    """The request for one question: the job's frozen settings, or its recipe's exact body.

    Raises `engine.CallRefused` when it can never be sent (the recipe cannot render the question, or was edited).
    """
    parameters = job.parameters
    if job.recipe_id is None:
        messages = build_messages(
            question=question.text,
            prompt_template=parameters["prompt_template"],
            system_prompt=parameters.get("system_prompt", ""),
        )
        body = {"model": parameters["model"], "messages": messages, "temperature": parameters["temperature"],
                "max_tokens": parameters["max_tokens"], "logprobs": parameters.get("logprobs", False),
                "top_logprobs": parameters.get("top_logprobs")}  # fmt: skip
        return Prepared(request=engine.Request(mode="chat", body=body), messages=messages)
    recipe = PromptRecipe.objects.select_related("examples_pool").get(pk=job.recipe_id)
    if any(parameters.get(key) != value for key, value in recipe.settings().items()):
        # The job froze the recipe's settings; sending the edited recipe would store answers whose
        # parameters do not say how they were asked.
        raise engine.CallRefused(f"the recipe {recipe.name!r} was edited after job {job.id} started: start a new job")
    try:
        request = build_request(recipe, question, model=parameters["model"])
    except RecipeError as error:
        raise engine.CallRefused(f"the recipe cannot render this question: {error}") from None
    mode = "completion" if request.mode == PromptRecipe.Mode.COMPLETION else "chat"
    return Prepared(request=engine.Request(mode=mode, body=request.body), messages=request.body.get("messages") or [],
                    prompt=request.prompt, sent=request.body, examples=request.examples)  # fmt: skip


def execute_task(task: GenerationTask, source: AnswerSource) -> GenerationTask.Status:
    """Ask the model for one claimed question (sent by the engine, as every kind of work) and record the outcome."""
    try:
        prepared = prepare(task)
        completion = engine_calls.send(source, prepared.request)
    except engine.CallRefused as refused:
        return record_failure(task, LLMError(str(refused)))
    except LLMError as error:
        return record_failure(task, error)
    except Exception as error:  # a bug or an error the client does not know: recorded, and the lane goes on
        logger.exception("generation task %s: unexpected error", task.id)
        return record_failure(task, LLMError(f"unexpected error: {error!r}"))
    keep_answer(task.job, task.question_id, source, completion, prepared, attempt=task.attempts,
                mark_done=lambda answer: _mark_done(task, answer))  # fmt: skip
    return GenerationTask.Status.DONE


def store_answer(
    task: GenerationTask, source: AnswerSource, completion: Completion, messages: list[dict], *,
    prompt: str | None = None, request: dict | None = None, examples: tuple[str, ...] = (),
) -> Answer:  # fmt: skip
    prepared = Prepared(request=engine.Request(mode="chat", body={}), messages=messages, prompt=prompt, sent=request,
                        examples=examples)  # fmt: skip
    return keep_answer(task.job, task.question_id, source, completion, prepared, attempt=task.attempts,
                       mark_done=lambda answer: _mark_done(task, answer))  # fmt: skip


def keep_answer(
    job: GenerationJob, question_id: int, source: AnswerSource, completion: Completion, prepared: Prepared, *,
    attempt: int, mark_done=None,
) -> Answer:  # fmt: skip
    """Keep the answer exactly once: a second worker answering the same question finds the first answer.

    A recipe's answer keeps the exact request body sent (`response_metadata["request"]`) and the prompt text.
    The answer is linked to the job's study, and `mark_done(answer)` runs, in the answer's transaction.
    """
    messages = prepared.messages
    metadata = {
        "response_id": completion.response_id,
        "finish_reason": completion.finish_reason,
        "usage": completion.usage,
        "endpoint": source.base_url,
        "messages": messages,
        "generation_job": job.id,
        "attempt": attempt,
    }
    if prepared.sent is not None:
        metadata["request"] = prepared.sent
        if prepared.examples:
            metadata["examples"] = list(prepared.examples)
    if completion.logprobs is not None:
        metadata["logprobs"] = completion.logprobs
    fields = {
        "text": completion.text,
        "model_name": completion.model,
        "prompt": prepared.prompt if prepared.prompt is not None else messages[-1]["content"],
        "parameters": job.parameters,
        "response_metadata": metadata,
        "generated_at": timezone.now(),
        "latency_ms": completion.latency_ms,
        "refusal": completion.is_refusal,
        "provenance_note": f"Generated by job {job.id} from {source.base_url}",
    }

    def stored(answer: Answer) -> Answer:
        answer_links.link_answers(study_id=job.for_study, answer_ids=[answer.id], via=answer_links.GENERATED)
        if mark_done is not None:
            mark_done(answer)
        return answer

    try:
        # Insert first: the usual case costs no lookup. The unique key turns a duplicate into an error.
        with transaction.atomic():
            return stored(Answer.objects.create(question_id=question_id, source=source, **fields))
    except IntegrityError:
        with transaction.atomic():
            return stored(Answer.objects.get(question_id=question_id, source=source, settings_hash=job.settings_hash))


def _mark_done(task: GenerationTask, answer: Answer) -> None:
    """Inside the answer's transaction: the task is done."""
    GenerationTask.objects.filter(id=task.id).exclude(status=GenerationTask.Status.DONE).update(
        status=GenerationTask.Status.DONE, answer=answer, lease_expires_at=None, not_before=None
    )


def record_failure(task: GenerationTask, error: LLMError) -> GenerationTask.Status:
    """Back off and retry a passing error within the attempt budget; otherwise fail with the server's words."""
    now = timezone.now()
    entry = {"at": now.isoformat(), "attempt": task.attempts, "error": str(error)}
    if error.retryable and task.attempts < settings.GENERATION_MAX_ATTEMPTS:
        delay = timedelta(seconds=backoff_seconds(task.attempts, error))
        status, not_before = GenerationTask.Status.PENDING, now + delay
    else:
        status, not_before = GenerationTask.Status.FAILED, None
    # Only while this claim still stands: a duplicate worker that already answered it wins.
    GenerationTask.objects.filter(id=task.id, status=GenerationTask.Status.RUNNING).update(
        status=status, not_before=not_before, lease_expires_at=None, error=str(error)[:2000],
        history=[*task.history, entry],
    )  # fmt: skip
    return status


# One back-off for every kind of model call: exponential with jitter, at least what the server asked for.
backoff_seconds = engine_calls.backoff_seconds


def finish_completed_jobs(source: AnswerSource) -> int:
    """Mark the source's live jobs with no pending or in-flight question as done."""
    unfinished = GenerationTask.objects.filter(
        job=OuterRef("pk"), status__in=[GenerationTask.Status.PENDING, GenerationTask.Status.RUNNING]
    )
    return GenerationJob.objects.live().filter(source=source).exclude(Exists(unfinished)).finish()
