"""One question at a time: claim it, ask the model, store the answer once or record why not."""

import logging
import random
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Exists, Min, OuterRef, Q
from django.utils import timezone

from ..llm_client import Completion, LLMError, build_messages, chat_completion, text_completion
from ..models import Answer, AnswerSource, GenerationJob, GenerationTask, PromptRecipe
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
                GenerationJob.objects.filter(id=task.job_id, status=GenerationJob.Status.QUEUED).update(
                    status=GenerationJob.Status.RUNNING, started_at=now
                )
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


def execute_task(task: GenerationTask, source: AnswerSource) -> GenerationTask.Status:
    """Ask the model for one claimed question and record the outcome."""
    if task.job.recipe_id is not None:
        return _execute_recipe_task(task, source)
    parameters = task.job.parameters
    messages = build_messages(
        question=task.question.text,
        prompt_template=parameters["prompt_template"],
        system_prompt=parameters.get("system_prompt", ""),
    )
    try:
        completion = chat_completion(
            base_url=source.base_url,
            model=parameters["model"],
            messages=messages,
            temperature=parameters["temperature"],
            max_tokens=parameters["max_tokens"],
            timeout=source.request_timeout_seconds,
            api_key_env=source.api_key_env,
            logprobs=parameters.get("logprobs", False),
            top_logprobs=parameters.get("top_logprobs"),
        )
    except LLMError as error:
        return record_failure(task, error)
    except Exception as error:  # a bug or an error the client does not know: recorded, and the lane goes on
        logger.exception("generation task %s: unexpected error", task.id)
        return record_failure(task, LLMError(f"unexpected error: {error!r}"))
    store_answer(task, source, completion, messages)
    return GenerationTask.Status.DONE


def _execute_recipe_task(task: GenerationTask, source: AnswerSource) -> GenerationTask.Status:
    """A condition's question: the recipe renders the exact body, which is sent as is and stored."""
    job = task.job
    parameters = job.parameters
    try:
        recipe = PromptRecipe.objects.select_related("examples_pool").get(pk=job.recipe_id)
        current = recipe.settings()
        if any(parameters.get(key) != value for key, value in current.items()):
            # The job froze the recipe's settings; sending the edited recipe would store answers whose
            # parameters do not say how they were asked.
            raise LLMError(f"the recipe {recipe.name!r} was edited after job {job.id} started: start a new job")
        request = build_request(recipe, task.question, model=parameters["model"])
        body = request.body
        common = {
            "base_url": source.base_url, "model": body["model"], "temperature": body.get("temperature"),
            "max_tokens": body["max_tokens"], "timeout": source.request_timeout_seconds,
            "api_key_env": source.api_key_env, "stop": body.get("stop"),
        }  # fmt: skip
        if request.mode == PromptRecipe.Mode.COMPLETION:
            completion = text_completion(prompt=body["prompt"], logprobs=body.get("logprobs"), **common)
        else:
            completion = chat_completion(
                messages=body["messages"], logprobs=bool(body.get("logprobs")), top_logprobs=body.get("top_logprobs"),
                **common,
            )  # fmt: skip
    except RecipeError as error:
        return record_failure(task, LLMError(f"the recipe cannot render this question: {error}"))
    except LLMError as error:
        return record_failure(task, error)
    except Exception as error:  # as above: recorded, and the lane goes on
        logger.exception("generation task %s: unexpected error", task.id)
        return record_failure(task, LLMError(f"unexpected error: {error!r}"))
    store_answer(task, source, completion, body.get("messages") or [], prompt=request.prompt, request=body,
                 examples=request.examples)  # fmt: skip
    return GenerationTask.Status.DONE


def store_answer(
    task: GenerationTask, source: AnswerSource, completion: Completion, messages: list[dict], *,
    prompt: str | None = None, request: dict | None = None, examples: tuple[str, ...] = (),
) -> Answer:  # fmt: skip
    """Keep the answer exactly once: a second worker answering the same question finds the first answer.

    A recipe's answer keeps the exact request body sent (`response_metadata["request"]`) and the prompt text.
    """
    job = task.job
    metadata = {
        "response_id": completion.response_id,
        "finish_reason": completion.finish_reason,
        "usage": completion.usage,
        "endpoint": source.base_url,
        "messages": messages,
        "generation_job": job.id,
        "attempt": task.attempts,
    }
    if request is not None:
        metadata["request"] = request
        if examples:
            metadata["examples"] = list(examples)
    if completion.logprobs is not None:
        metadata["logprobs"] = completion.logprobs
    fields = {
        "text": completion.text,
        "model_name": completion.model,
        "prompt": prompt if prompt is not None else messages[-1]["content"],
        "parameters": job.parameters,
        "response_metadata": metadata,
        "generated_at": timezone.now(),
        "latency_ms": completion.latency_ms,
        "refusal": completion.is_refusal,
        "provenance_note": f"Generated by job {job.id} from {source.base_url}",
    }
    try:
        # Insert first: the usual case costs no lookup. The unique key turns a duplicate into an error.
        with transaction.atomic():
            answer = Answer.objects.create(question_id=task.question_id, source=source, **fields)
            _mark_done(task, answer)
    except IntegrityError:
        with transaction.atomic():
            answer = Answer.objects.get(question_id=task.question_id, source=source, settings_hash=job.settings_hash)
            _mark_done(task, answer)
    return answer


def _mark_done(task: GenerationTask, answer: Answer) -> None:
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


def backoff_seconds(attempts: int, error: LLMError | None = None) -> float:
    """Exponential back-off with jitter (so lanes don't retry in step), at least what the server asked for."""
    ceiling = min(settings.GENERATION_BACKOFF_MAX_SECONDS, settings.GENERATION_BACKOFF_SECONDS * 2 ** (attempts - 1))
    delay = ceiling * random.uniform(0.5, 1.0)
    if error is not None and error.retry_after:
        delay = max(delay, min(error.retry_after, 10 * settings.GENERATION_BACKOFF_MAX_SECONDS))
    return delay


def finish_completed_jobs(source: AnswerSource) -> int:
    """Mark the source's live jobs with no pending or in-flight question as done."""
    unfinished = GenerationTask.objects.filter(
        job=OuterRef("pk"), status__in=[GenerationTask.Status.PENDING, GenerationTask.Status.RUNNING]
    )
    return (
        GenerationJob.objects.filter(
            source=source, status__in=[GenerationJob.Status.QUEUED, GenerationJob.Status.RUNNING]
        )
        .exclude(Exists(unfinished))
        .update(status=GenerationJob.Status.DONE, finished_at=timezone.now())
    )
