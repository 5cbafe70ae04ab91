"""One call at a time: submit, claim, make the request, store once or back off and fail (engine/DESIGN.md)."""

import logging
import random
from collections.abc import Iterable
from datetime import timedelta
from typing import Protocol

from django.conf import settings
from django.db import transaction
from django.db.models import Min, Q
from django.utils import timezone

from . import registry
from .llm_client import Completion, LLMError, chat_completion, text_completion
from .models import Call, Endpoint

logger = logging.getLogger(__name__)

UNFINISHED = [Call.Status.PENDING, Call.Status.RUNNING]


def submit(kind: str, endpoint: Endpoint, subjects: Iterable[dict], *, batch: str = "") -> int:
    """Queue one call of `kind` per subject; the endpoint's lanes are sent once the transaction commits."""
    from .lanes import dispatch_lanes

    calls = [Call(kind=kind, endpoint=endpoint, subject=subject, batch=batch) for subject in subjects]
    Call.objects.bulk_create(calls, batch_size=2000)
    if calls:
        transaction.on_commit(lambda: dispatch_lanes(endpoint))
    return len(calls)


def cancel(kind: str, batch: str) -> int:
    """Stop the batch's pending calls; calls in flight still finish and are stored."""
    return Call.objects.filter(kind=kind, batch=batch, status=Call.Status.PENDING).update(
        status=Call.Status.CANCELLED, not_before=None
    )


def lease_seconds(endpoint: Endpoint) -> float:
    """How long a request may be in flight before its worker is presumed dead."""
    return endpoint.request_timeout_seconds + settings.GENERATION_LEASE_MARGIN_SECONDS


def _claimable(endpoint: Endpoint, now):
    due = Q(status=Call.Status.PENDING) & (Q(not_before__isnull=True) | Q(not_before__lte=now))
    abandoned = Q(status=Call.Status.RUNNING, lease_expires_at__lt=now)
    return Call.objects.filter(due | abandoned, endpoint=endpoint)


def claim_next(endpoint: Endpoint, holder: str) -> Call | None:
    """Take the endpoint's oldest due call of any kind, or one whose worker died; None if none is due.

    PostgreSQL hands each row to one caller (SKIP LOCKED); the UPDATE only applies if the row is as it was
    read (any claim bumps `attempts`), which makes the claim safe on SQLite too, where the lock is a no-op.
    """
    for _ in range(10):
        now = timezone.now()
        lease_expires_at = now + timedelta(seconds=lease_seconds(endpoint))
        with transaction.atomic():
            call = _claimable(endpoint, now).order_by("id").select_for_update(skip_locked=True).first()
            if call is None:
                return None
            claimed = Call.objects.filter(id=call.id, status=call.status, attempts=call.attempts).update(
                status=Call.Status.RUNNING,
                lease_expires_at=lease_expires_at,
                claimed_by=holder[:200],
                attempts=call.attempts + 1,
            )
        if claimed:
            call.status, call.claimed_by = Call.Status.RUNNING, holder[:200]
            call.lease_expires_at, call.attempts = lease_expires_at, call.attempts + 1
            return call
    return None


def seconds_until_due(endpoint: Endpoint) -> float | None:
    """When the endpoint's next call becomes claimable; None when it has nothing unfinished."""
    times = Call.objects.filter(endpoint=endpoint, status__in=UNFINISHED).aggregate(
        backoff=Min("not_before", filter=Q(status=Call.Status.PENDING)),
        lease=Min("lease_expires_at", filter=Q(status=Call.Status.RUNNING)),
        any_pending_now=Min("id", filter=Q(status=Call.Status.PENDING, not_before__isnull=True)),
        any_call=Min("id"),
    )
    if times["any_call"] is None:
        return None
    if times["any_pending_now"] is not None:
        return 0.0
    due = [moment for moment in (times["backoff"], times["lease"]) if moment is not None]
    return max(0.0, (min(due) - timezone.now()).total_seconds()) if due else 0.0


def execute(call: Call, endpoint: Endpoint) -> str:
    """Make one claimed call and record the outcome; returns the call's new status."""
    handler = registry.handler_for(call.kind)
    if handler is None:
        # A worker without the kind's app must not guess: the call fails with the reason, and can be retried.
        return record_failure(call, LLMError(f"no handler for the kind {call.kind!r} in this worker"))
    try:
        request = handler.prepare(call)
        call.request = request.body
        completion = send(endpoint, request)
    except registry.CallRefused as refused:
        return record_failure(call, LLMError(str(refused)))
    except LLMError as error:
        return record_failure(call, error)
    except Exception as error:  # a bug or an error the client does not know: recorded, and the lane goes on
        logger.exception("engine call %s: unexpected error", call.id)
        return record_failure(call, LLMError(f"unexpected error: {error!r}"))
    try:
        return store(call, completion)
    except Exception as error:  # the kind could not keep the reply: nothing of it was kept, and the lane goes on
        logger.exception("engine call %s: storing failed", call.id)
        return record_failure(call, LLMError(f"storing the reply failed: {error!r}"))


class Connection(Protocol):
    """Where a request goes: an Endpoint, or anything with the same three fields (a model source today)."""

    base_url: str
    api_key_env: str
    request_timeout_seconds: float


def send(endpoint: Connection, request: registry.Request) -> Completion:
    """Send the body as it is (the kind built it exactly); only the connection comes from the endpoint."""
    body = request.body
    common = {
        "base_url": endpoint.base_url, "model": body.get("model", ""), "temperature": body.get("temperature"),
        "max_tokens": body.get("max_tokens", 1024), "timeout": endpoint.request_timeout_seconds,
        "api_key_env": endpoint.api_key_env, "stop": body.get("stop"), "seed": body.get("seed"),
    }  # fmt: skip
    if request.mode == "completion":
        return text_completion(prompt=body["prompt"], logprobs=body.get("logprobs"), **common)
    return chat_completion(
        messages=body["messages"], logprobs=bool(body.get("logprobs")), top_logprobs=body.get("top_logprobs"),
        response_format=body.get("response_format"), **common,
    )  # fmt: skip


def store(call: Call, completion: Completion) -> str:
    """The kind keeps what came back and the call is done, in one transaction: neither happens without the other.

    A kind's `store` may instead return `AskAgain` (its writes kept, the call queued again) or `GiveUp` (its
    writes kept, the call failed for good); returns the call's new status.
    """
    handler = registry.handler_for(call.kind)
    assert handler is not None  # execute checked it
    with transaction.atomic():
        outcome = handler.store(call, completion)
        if isinstance(outcome, registry.AskAgain | registry.GiveUp):
            return _store_not_done(call, outcome, handler)
        Call.objects.filter(id=call.id).exclude(status=Call.Status.DONE).update(
            status=Call.Status.DONE, result=outcome, request=call.request, lease_expires_at=None, not_before=None
        )
    call.status, call.result = Call.Status.DONE, outcome
    return Call.Status.DONE


def _store_not_done(call: Call, outcome: registry.AskAgain | registry.GiveUp, handler: registry.Handler) -> str:
    """Within the store's transaction: back in the queue (AskAgain) or failed (GiveUp), the reason in the history.

    Only while this claim still stands (status and attempts as claimed): when the lease ran out and another
    worker claimed the call, or a store already finished it, that one decides; what this store wrote is kept.
    """
    again = isinstance(outcome, registry.AskAgain)
    status = Call.Status.PENDING if again else Call.Status.FAILED
    entry = {"at": timezone.now().isoformat(), "attempt": call.attempts, "error": outcome.reason[:2000]}
    updated = Call.objects.filter(id=call.id, status=Call.Status.RUNNING, attempts=call.attempts).update(
        status=status, not_before=None, lease_expires_at=None, error=outcome.reason[:2000],
        history=[*call.history, entry], request=call.request, result=outcome.result,
    )  # fmt: skip
    if not updated:
        return Call.objects.values_list("status", flat=True).get(id=call.id)
    call.status, call.error, call.result = status, outcome.reason[:2000], outcome.result
    call.history = [*call.history, entry]
    if not again:
        handler.failed(call, LLMError(outcome.reason))
    return status


def record_failure(call: Call, error: LLMError) -> str:
    """Back off and retry a passing error within the attempt budget; otherwise fail with the server's words."""
    now = timezone.now()
    entry = {"at": now.isoformat(), "attempt": call.attempts, "error": str(error)}
    if error.retryable and call.attempts < settings.GENERATION_MAX_ATTEMPTS:
        status, not_before = Call.Status.PENDING, now + timedelta(seconds=backoff_seconds(call.attempts, error))
    else:
        status, not_before = Call.Status.FAILED, None
    # Only while this claim still stands: a duplicate worker that already stored it wins.
    updated = Call.objects.filter(id=call.id, status=Call.Status.RUNNING).update(
        status=status, not_before=not_before, lease_expires_at=None, error=str(error)[:2000],
        history=[*call.history, entry], request=call.request,
    )  # fmt: skip
    if updated and status == Call.Status.FAILED:
        call.status, call.error = status, str(error)[:2000]
        handler = registry.handler_for(call.kind)
        if handler is not None:
            handler.failed(call, error)
    return status


def backoff_seconds(attempts: int, error: LLMError | None = None) -> float:
    """Exponential back-off with jitter (so lanes don't retry in step), at least what the server asked for."""
    ceiling = min(settings.GENERATION_BACKOFF_MAX_SECONDS, settings.GENERATION_BACKOFF_SECONDS * 2 ** (attempts - 1))
    delay = ceiling * random.uniform(0.5, 1.0)
    if error is not None and error.retry_after:
        delay = max(delay, min(error.retry_after, 10 * settings.GENERATION_BACKOFF_MAX_SECONDS))
    return delay


def retry_failed(kind: str, batch: str) -> int:
    """Put the batch's failed calls back in the queue with a fresh attempt budget."""
    from .lanes import dispatch_lanes

    failed = Call.objects.filter(kind=kind, batch=batch, status=Call.Status.FAILED)
    endpoints = list(Endpoint.objects.filter(id__in=failed.values("endpoint_id")))
    count = failed.update(status=Call.Status.PENDING, attempts=0, not_before=None)
    for endpoint in endpoints:
        transaction.on_commit(lambda endpoint=endpoint: dispatch_lanes(endpoint))
    return count


def requeue(call_ids: Iterable[int]) -> int:
    """Put these failed or cancelled calls back in the queue with a fresh attempt budget (their history stays);
    a call that is pending, in flight or done is left as it is."""
    from .lanes import dispatch_lanes

    stopped = Call.objects.filter(id__in=list(call_ids), status__in=[Call.Status.FAILED, Call.Status.CANCELLED])
    endpoints = list(Endpoint.objects.filter(id__in=stopped.values("endpoint_id")))
    count = stopped.update(status=Call.Status.PENDING, attempts=0, not_before=None)
    for endpoint in endpoints:
        transaction.on_commit(lambda endpoint=endpoint: dispatch_lanes(endpoint))
    return count
