"""Lanes: the Celery side of generation. A source has `concurrency` lanes, each one request at a time.

A lane task first takes its lane (a row with a token and a heartbeat); if a live task holds it, it leaves.
Then it loops: claim a due question of the source, ask the model, store, repeat; it waits while questions
are backing off or in flight elsewhere, and leaves when the source's live jobs have nothing left.
"""

import os
import socket
import time
import uuid
from datetime import timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from ..models import AnswerSource, GenerationJob, GenerationLane
from . import work

MAX_IDLE_SLEEP = 1.0  # seconds between looks while nothing is due: keeps hand-over and cancellation quick


def lane_stale_seconds(source: AnswerSource) -> float:
    # A lane's heartbeat is refreshed between requests, so one request (up to the timeout) may separate two.
    return work.lease_seconds(source)


def check_interval(source: AnswerSource) -> float:
    """Seconds between a lane's heartbeats. A request (up to the timeout) can separate two looks, so the gap
    between beats must stay below the lease margin for a live lane never to look stale."""
    return min(2.0, settings.GENERATION_LEASE_MARGIN_SECONDS / 2, lane_stale_seconds(source) / 3)


def dispatch_lanes(source: AnswerSource) -> int:
    """Send a task for each of the source's lanes; a lane held by a live task ignores it.

    A lane whose holder looks alive may belong to a worker that has just died (its heartbeat is still fresh),
    so it gets a task too, delayed until the heartbeat would be stale.
    """
    from ..tasks import run_generation_lane

    now = timezone.now()
    stale = lane_stale_seconds(source)
    queue = settings.CELERY_GENERATION_QUEUE or None
    for index in range(source.concurrency):
        lane, _ = GenerationLane.objects.get_or_create(source=source, index=index)
        delay = 0.0
        if lane.heartbeat_at is not None:
            delay = max(0.0, (lane.heartbeat_at + timedelta(seconds=stale) - now).total_seconds())
        options = {"queue": queue} if queue else {}
        if delay > 0:
            options["countdown"] = delay + 1
        run_generation_lane.apply_async((source.id, index), **options)
    return source.concurrency


def resume_unfinished_jobs() -> int:
    """Dispatch lanes for every source with a live job: run when a worker starts, and by the Resume button."""
    live = GenerationJob.objects.live()
    sources = AnswerSource.objects.filter(id__in=live.values("source_id"))
    for source in sources:
        dispatch_lanes(source)
    return len(sources)


def _take_lane(source: AnswerSource, index: int, token: str, holder: str) -> bool:
    now = timezone.now()
    stale_before = now - timedelta(seconds=lane_stale_seconds(source))
    GenerationLane.objects.get_or_create(source=source, index=index)
    free = Q(heartbeat_at__isnull=True) | Q(heartbeat_at__lt=stale_before)
    return bool(
        GenerationLane.objects.filter(free, source=source, index=index).update(
            token=token, holder=holder, heartbeat_at=now
        )
    )


def _beat(lane_filter: dict) -> bool:
    return bool(GenerationLane.objects.filter(**lane_filter).update(heartbeat_at=timezone.now()))


def run_lane(source_id: int, index: int, *, budget_seconds: float | None = None) -> str:
    """Work the source's questions in lane `index` until none is left; returns why it stopped.

    "handed over" means the budget ran out with work left; the caller sends a fresh task for the lane.
    """
    source = AnswerSource.objects.filter(id=source_id).first()
    if source is None:
        return "source deleted"
    token = uuid.uuid4().hex
    holder = f"{socket.gethostname()} pid {os.getpid()} lane {index}"
    if not _take_lane(source, index, token, holder):
        return "lane held by a live task"
    mine = {"source_id": source_id, "index": index, "token": token}
    budget = settings.GENERATION_LANE_BUDGET_SECONDS if budget_seconds is None else budget_seconds
    deadline = time.monotonic() + budget
    try:
        reason = _loop(source_id, index, mine, holder, deadline)
    finally:
        GenerationLane.objects.filter(**mine).update(token="", holder="", heartbeat_at=None)
    if reason == "no work left" and work.seconds_until_due(source) is not None:
        # A job committed while this lane was leaving could have seen it as alive: look once more.
        return run_lane(source_id, index, budget_seconds=budget_seconds)
    return reason


def _loop(source_id, index, mine, holder, deadline) -> str:
    source, checked_at = None, float("-inf")
    next_request_at = 0.0  # monotonic; spaces this lane's requests to honour the source's rate limit
    while True:
        now = time.monotonic()
        if source is None or now - checked_at >= check_interval(source):
            # Re-read the source (concurrency and rate may change mid-job) and beat, every few seconds
            # rather than per answer: at high throughput the queries per answer are what limit a worker.
            source, checked_at = AnswerSource.objects.get(id=source_id), now
            if index >= source.concurrency:
                return "lane retired (concurrency lowered)"
            if not _beat(mine):
                return "lane taken over"
        if now > deadline:
            return "handed over"
        wait = next_request_at - now
        if wait > 0:
            time.sleep(min(wait, MAX_IDLE_SLEEP))
            continue
        task = work.claim_next_task(source, holder)
        if task is None:
            due_in = work.seconds_until_due(source)
            if due_in is None:
                work.finish_completed_jobs(source)
                return "no work left"
            time.sleep(min(max(due_in, 0.05), MAX_IDLE_SLEEP))
            continue
        if source.rate_limit_per_minute:
            # Each of the `concurrency` lanes takes its share of the per-minute budget.
            next_request_at = time.monotonic() + 60.0 * source.concurrency / source.rate_limit_per_minute
        work.execute_task(task, source)
