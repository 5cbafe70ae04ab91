"""Benchmark answer generation on a real Celery worker: throughput against the ideal, per source concurrency.

A local chat-completions server (tests/llm_server.py) answers each request after a fixed latency; a real
`celery worker` (threads pool) over Redis runs the lanes against a throw-away PostgreSQL database. For each
concurrency C: a fresh dataset of N questions and a source allowing C requests in flight, one job, timed from
`start_job` to the job marked done. The ideal is C / latency answers per second. Prints a Markdown table,
and checks that no question was asked or answered twice.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/test .venv/bin/python benchmarks/generation.py \\
        [--answers 400] [--concurrency 1 4 16 32] [--latency 0.2] [--broker redis://127.0.0.1:6379/14]
"""

import argparse
import secrets
import tempfile
import time
import uuid
from contextlib import ExitStack
from pathlib import Path

from _django import own_test_database
from django.db import connection  # noqa: E402
from django.db.models import Count  # noqa: E402
from django.test import override_settings  # noqa: E402

from config.celery import app  # noqa: E402
from datasets.generation import jobs  # noqa: E402
from datasets.models import Answer, AnswerSource, Dataset, Question, text_fingerprint  # noqa: E402
from engine.models import Lane  # noqa: E402
from tests import celery_process  # noqa: E402
from tests.datasets.test_generation_worker import CountingLLM  # noqa: E402

# The worker runs as in production: with DEBUG on, Django also records and times every query it makes.
PRODUCTION_LIKE = {"DEBUG": "false", "SECRET_KEY": secrets.token_urlsafe(50), "ALLOWED_HOSTS": "localhost"}


def make_dataset(name: str, size: int) -> Dataset:
    dataset = Dataset.objects.create(name=name)
    texts = [f"{name}, question {n}: which dose suits this patient?" for n in range(size)]
    Question.objects.bulk_create(
        [Question(dataset=dataset, external_id=str(n), text=text, text_hash=text_fingerprint(text))
         for n, text in enumerate(texts)]
    )  # fmt: skip
    return dataset


def run(server: CountingLLM, *, answers: int, concurrency: int, latency: float, workers: list) -> dict:
    name = f"Benchmark C={concurrency} {uuid.uuid4().hex[:6]}"
    dataset = make_dataset(name, answers)
    source = AnswerSource.objects.create(
        name=name, kind=AnswerSource.Kind.MODEL, model_name="bench-model", base_url=server.base_url,
        concurrency=concurrency, request_timeout_seconds=30,
    )  # fmt: skip
    requests_before = len(server.requests)
    server.peak_in_flight = 0
    start = time.perf_counter()
    job = jobs.start_job(dataset=dataset, source=source)
    deadline = time.monotonic() + 60 + 10 * answers * latency / concurrency
    while not job.is_finished:
        if time.monotonic() > deadline:
            tails = "\n".join(f"--- {worker.name} ---\n{worker.log_tail()}" for worker in workers)
            raise SystemExit(f"job {job.id} did not finish in time; the workers' logs end:\n{tails}")
        time.sleep(0.02)
        job.refresh_from_db(fields=["status"])
    seconds = time.perf_counter() - start
    # The other lanes leave within a second; let them, so that the next run has the workers' threads.
    while Lane.objects.filter(endpoint=source.endpoint_id).exclude(token="").exists():
        time.sleep(0.05)
    stored = Answer.objects.filter(source=source).aggregate(
        rows=Count("id"), questions=Count("question", distinct=True)
    )
    return {
        "concurrency": concurrency,
        "answers": stored["rows"],
        "distinct": stored["questions"],
        "seconds": seconds,
        "requests": len(server.requests) - requests_before,
        "peak": server.peak_in_flight,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--answers", type=int, default=400)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16, 32])
    parser.add_argument("--latency", type=float, default=0.2, help="seconds the fake model takes to answer")
    parser.add_argument("--workers", type=int, default=1, help="worker processes sharing the lanes")
    parser.add_argument("--broker", default="redis://127.0.0.1:6379/14")
    args = parser.parse_args()
    queue = f"equityrate-bench-{uuid.uuid4().hex[:8]}"
    logs = Path(tempfile.mkdtemp(prefix="equityrate-bench-"))
    threads = -(-max(args.concurrency) // args.workers)  # each worker takes as many lanes as it has threads
    with (
        own_test_database(),
        override_settings(CELERY_GENERATION_QUEUE=queue),
        celery_process.using_broker(app, broker_url=args.broker, queue=queue),
        CountingLLM(latency=args.latency) as server,
        ExitStack() as workers,
    ):
        database = celery_process.database_url(connection.settings_dict)  # the test database, once set up
        options = {"queue": queue, "broker_url": args.broker, "database_url": database, "pool": "threads",
                   "concurrency": threads, "env": PRODUCTION_LIKE}  # fmt: skip
        running = [
            workers.enter_context(
                celery_process.running_worker(app, name=f"{queue}-{n}", log=logs / f"worker-{n}.log", **options)
            )
            for n in range(args.workers)
        ]
        results = [
            run(server, answers=args.answers, concurrency=c, latency=args.latency, workers=running)
            for c in args.concurrency
        ]
    print(f"{args.answers} questions per run, fake model latency {args.latency:g} s, {args.workers} worker "
          f"process(es) (threads pool, {threads} threads each), PostgreSQL, Redis\n")  # fmt: skip
    print("| C | answers | seconds | answers/s | ideal (C / latency) | efficiency | requests sent | peak in flight |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        rate, ideal = r["answers"] / r["seconds"], r["concurrency"] / args.latency
        print(f"| {r['concurrency']} | {r['answers']} | {r['seconds']:.1f} | {rate:.1f} | {ideal:.0f} | "
              f"{100 * rate / ideal:.0f} % | {r['requests']} | {r['peak']} |")  # fmt: skip
    doubled = [r for r in results if not r["answers"] == r["distinct"] == r["requests"] == args.answers]
    if doubled:
        raise SystemExit(f"duplicates or missing answers: {doubled}")
    if any(r["peak"] > r["concurrency"] for r in results):
        raise SystemExit("more requests in flight than the source allows")
    print(f"\nno duplicates: every run stored exactly {args.answers} answers, one per question, from "
          f"{args.answers} requests; requests in flight never exceeded C.")  # fmt: skip


if __name__ == "__main__":
    main()
