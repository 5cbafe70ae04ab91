"""Lanes: the Celery side of the engine. An endpoint has `concurrency` lanes, each one request at a time,
whatever kind of work the request is for.

A lane task first takes its lane (a row with a token and a heartbeat); if a live task holds it, it leaves.
Then it loops: claim the endpoint's oldest due call, make it, store, repeat; it waits while calls are backing
off or in flight elsewhere, and leaves when the endpoint has nothing unfinished.
"""

import os
import socket
import time
import uuid
from datetime import timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from . import calls
from .models import Call, Endpoint, Lane

MAX_IDLE_SLEEP = 1.0  # seconds between looks while nothing is due: keeps hand-over and cancellation quick


def lane_stale_seconds(endpoint: Endpoint) -> float:
    # A lane's heartbeat is refreshed between requests, so one request (up to the timeout) may separate two.
    return calls.lease_seconds(endpoint)


def check_interval(endpoint: Endpoint) -> float:
    """Seconds between a lane's heartbeats: below the lease margin, so a live lane never looks stale."""
    return min(2.0, settings.GENERATION_LEASE_MARGIN_SECONDS / 2, lane_stale_seconds(endpoint) / 3)


def queue_options() -> dict:
    queue = settings.CELERY_GENERATION_QUEUE
    return {"queue": queue} if queue else {}


def dispatch_lanes(endpoint: Endpoint) -> int:
    """Send a task for each of the endpoint's lanes; a lane held by a live task ignores it.

    A lane whose holder looks alive may belong to a worker that has just died (its heartbeat is still fresh),
    so it gets a task too, delayed until the heartbeat would be stale.
    """
    from .tasks import run_engine_lane

    now = timezone.now()
    stale = lane_stale_seconds(endpoint)
    for index in range(endpoint.concurrency):
        lane, _ = Lane.objects.get_or_create(endpoint=endpoint, index=index)
        options = queue_options()
        if lane.heartbeat_at is not None:
            delay = (lane.heartbeat_at + timedelta(seconds=stale) - now).total_seconds()
            if delay > 0:
                options["countdown"] = delay + 1
        run_engine_lane.apply_async((endpoint.id, index), **options)
    return endpoint.concurrency


def resume_unfinished() -> int:
    """Dispatch lanes for every endpoint with unfinished calls: run when a worker starts."""
    endpoints = Endpoint.objects.filter(id__in=Call.objects.filter(status__in=calls.UNFINISHED).values("endpoint_id"))
    for endpoint in endpoints:
        dispatch_lanes(endpoint)
    return len(endpoints)


def _take_lane(endpoint: Endpoint, index: int, token: str, holder: str) -> bool:
    now = timezone.now()
    stale_before = now - timedelta(seconds=lane_stale_seconds(endpoint))
    Lane.objects.get_or_create(endpoint=endpoint, index=index)
    free = Q(heartbeat_at__isnull=True) | Q(heartbeat_at__lt=stale_before)
    return bool(
        Lane.objects.filter(free, endpoint=endpoint, index=index).update(token=token, holder=holder, heartbeat_at=now)
    )


def run_lane(endpoint_id: int, index: int, *, budget_seconds: float | None = None) -> str:
    """Work the endpoint's calls in lane `index` until none is left; returns why it stopped.

    "handed over" means the budget ran out with work left; the caller sends a fresh task for the lane.
    """
    endpoint = Endpoint.objects.filter(id=endpoint_id).first()
    if endpoint is None:
        return "endpoint deleted"
    token = uuid.uuid4().hex
    holder = f"{socket.gethostname()} pid {os.getpid()} lane {index}"
    if not _take_lane(endpoint, index, token, holder):
        return "lane held by a live task"
    mine = {"endpoint_id": endpoint_id, "index": index, "token": token}
    budget = settings.GENERATION_LANE_BUDGET_SECONDS if budget_seconds is None else budget_seconds
    try:
        reason = _loop(endpoint_id, index, mine, holder, time.monotonic() + budget)
    finally:
        Lane.objects.filter(**mine).update(token="", holder="", heartbeat_at=None)
    if reason == "no work left" and calls.seconds_until_due(endpoint) is not None:
        # Calls committed while this lane was leaving could have seen it as alive: look once more.
        return run_lane(endpoint_id, index, budget_seconds=budget_seconds)
    return reason


def _loop(endpoint_id: int, index: int, mine: dict, holder: str, deadline: float) -> str:
    endpoint, checked_at = None, float("-inf")
    next_request_at = 0.0  # monotonic; spaces this lane's requests to honour the endpoint's rate limit
    while True:
        now = time.monotonic()
        if endpoint is None or now - checked_at >= check_interval(endpoint):
            # Re-read the endpoint (concurrency and rate may change mid-run) and beat, every few seconds.
            endpoint, checked_at = Endpoint.objects.get(id=endpoint_id), now
            if index >= endpoint.concurrency:
                return "lane retired (concurrency lowered)"
            if not Lane.objects.filter(**mine).update(heartbeat_at=timezone.now()):
                return "lane taken over"
        if now > deadline:
            return "handed over"
        wait = next_request_at - now
        if wait > 0:
            time.sleep(min(wait, MAX_IDLE_SLEEP))
            continue
        call = calls.claim_next(endpoint, holder)
        if call is None:
            due_in = calls.seconds_until_due(endpoint)
            if due_in is None:
                return "no work left"
            time.sleep(min(max(due_in, 0.05), MAX_IDLE_SLEEP))
            continue
        if endpoint.rate_limit_per_minute:
            # Each of the `concurrency` lanes takes its share of the per-minute budget.
            next_request_at = time.monotonic() + 60.0 * endpoint.concurrency / endpoint.rate_limit_per_minute
        calls.execute(call, endpoint)
