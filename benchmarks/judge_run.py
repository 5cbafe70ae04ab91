"""Benchmark a judge on a real Celery worker: throughput against the ideal, per source concurrency.

A one-answer study of N items (EquityMedQA's independent rubric) is judged through the model-call engine by the
stand-in model (tests/llm_server.py), which answers each request after a fixed latency with JSON valid for the
rubric's schema, or (at --invalid-rate, drawn anew for every time an item is asked) with prose the validator
refuses, so the judge kind asks again, up to JUDGE_INVALID_REPLY_ATTEMPTS replies, then fails the call. A real
`celery worker` (threads pool) over Redis runs the lanes against a throw-away PostgreSQL database. For each
concurrency C: a fresh judge on a source allowing C requests in flight and a fresh stand-in, timed from
`submit_judge` to every call ended. The ideal is C / latency replies per second. Prints a Markdown table and
the load average before and after, and checks that every (item, repeat) ended with exactly one rating, or
failed after its invalid replies and has none, that every request made one reply, and that requests in flight
never exceeded C.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/test .venv/bin/python benchmarks/judge_run.py \\
        [--items 10000] [--concurrency 8 32 64] [--latency 0.2] [--invalid-rate 0.05] [--repeats 1] \\
        [--broker redis://127.0.0.1:6379/14]
"""

import argparse
import os
import secrets
import tempfile
import time
import uuid
from collections import Counter
from contextlib import ExitStack
from pathlib import Path

from _django import own_test_database
from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import override_settings  # noqa: E402

from config.celery import app  # noqa: E402
from datasets.models import Answer, AnswerSource, Dataset, Question, settings_fingerprint, text_fingerprint  # noqa: E402
from engine.models import Call, Lane  # noqa: E402
from studies.judge_kind import KIND, batch_counts, batch_of, submit_judge  # noqa: E402
from studies.models import Judge, JudgeRating, JudgeReply, RubricVersion, Study, StudyItem  # noqa: E402
from studies.rubric_defaults import NAME_BY_RELEASE  # noqa: E402
from tests import celery_process  # noqa: E402
from tests.datasets.test_generation_worker import CountingLLM  # noqa: E402

# The worker runs as in production: with DEBUG on, Django also records and times every query it makes.
PRODUCTION_LIKE = {"DEBUG": "false", "SECRET_KEY": secrets.token_urlsafe(50), "ALLOWED_HOSTS": "localhost"}


def make_study(size: int) -> Study:
    """A one-answer study of `size` items: one answer to each of `size` questions."""
    name = f"Judge benchmark {uuid.uuid4().hex[:6]}"
    dataset = Dataset.objects.create(name=name)
    texts = [f"Question {n}: which dose of ibuprofen suits patient {n}, who has a cold?" for n in range(size)]
    questions = Question.objects.bulk_create(
        [Question(dataset=dataset, external_id=str(n), text=text, text_hash=text_fingerprint(text))
         for n, text in enumerate(texts)]
    )  # fmt: skip
    writer = AnswerSource.objects.create(name=f"{name} answers", kind=AnswerSource.Kind.MODEL, model_name="answers")
    answers = Answer.objects.bulk_create(
        [Answer(question=q, source=writer, text=f"Answer {n}: 400 mg every 6 hours with food, at most 1,200 mg a "
                "day without a doctor's advice.", settings_hash=settings_fingerprint({}))
         for n, q in enumerate(questions)]
    )  # fmt: skip
    rubric = RubricVersion.objects.get(rubric__name=NAME_BY_RELEASE["independent"], number=1)
    study = Study.objects.create(name=name, rubric_version=rubric)
    StudyItem.objects.bulk_create([StudyItem(study=study, answer=answer) for answer in answers])
    return study


def run(study: Study, *, concurrency: int, latency: float, invalid_rate: float, repeats: int, workers: list) -> dict:
    pairs = study.items.count() * repeats
    with CountingLLM(latency=latency, judge_invalid_rate=invalid_rate) as server:
        source = AnswerSource.objects.create(
            name=f"Judge model C={concurrency} {uuid.uuid4().hex[:6]}", kind=AnswerSource.Kind.MODEL,
            model_name="stand-in", base_url=server.base_url, concurrency=concurrency, request_timeout_seconds=30,
        )  # fmt: skip
        judge = Judge.objects.create(name=source.name, source=source, rubric_version=study.rubric_version,
                                     instructions="Rate the answer as a physician would.", repeats=repeats)  # fmt: skip
        study.judges.add(judge)
        start = time.perf_counter()
        queued = submit_judge(judge, study)
        deadline = time.monotonic() + 120 + 10 * pairs * (1 + 2 * invalid_rate) * latency / concurrency
        while (counts := batch_counts(judge, study))["pending"] + counts["running"]:
            if time.monotonic() > deadline:
                tails = "\n".join(f"--- {worker.name} ---\n{worker.log_tail()}" for worker in workers)
                raise SystemExit(f"the judge's calls did not end in time: {counts}; the workers' logs end:\n{tails}")
            time.sleep(0.05)
        seconds = time.perf_counter() - start
        # The lanes leave within a second; let them, so that the next run has the workers' threads.
        while Lane.objects.filter(endpoint=source.endpoint_id).exclude(token="").exists():
            time.sleep(0.05)
        requests, peak = len(server.requests), server.peak_in_flight
    replies = list(JudgeReply.objects.filter(judge=judge).values_list("item_id", "repeat", "attempt", "errors"))
    ratings = Counter(JudgeRating.objects.filter(judge=judge).values_list("item_id", "repeat"))
    failed = set(
        (subject["item"], subject["repeat"])
        for subject in Call.objects.filter(kind=KIND, batch=batch_of(judge.pk, study.pk), status=Call.Status.FAILED)
        .values_list("subject", flat=True)
    )  # fmt: skip
    invalid_per_pair = Counter((item, repeat) for item, repeat, _, errors in replies if errors)
    return {
        "concurrency": concurrency,
        "pairs": pairs,
        "queued": queued,
        "seconds": seconds,
        "requests": requests,
        "replies": len(replies),
        "peak": peak,
        "valid_first": sum(1 for _, _, attempt, errors in replies if attempt == 0 and not errors),
        "retries": sum(1 for _, _, attempt, _ in replies if attempt > 0),
        "rated": len(ratings),
        "doubled": sum(1 for n in ratings.values() if n > 1),
        "failed": len(failed),
        "failed_and_rated": len(failed & set(ratings)),
        "failed_short": sum(1 for pair in failed if invalid_per_pair[pair] != settings.JUDGE_INVALID_REPLY_ATTEMPTS),
        "other_calls": counts["cancelled"] + counts["done"] + counts["failed"] - pairs,
    }


def problems(r: dict) -> list[str]:
    """What breaks the bookkeeping: a pair without exactly one ending, a lost or doubled reply, too many in flight."""
    found = []
    if r["queued"] != r["pairs"] or r["other_calls"]:
        found.append(f"{r['queued']} calls queued for {r['pairs']} (item, repeat) pairs")
    if r["doubled"] or r["failed_and_rated"] or r["rated"] + r["failed"] != r["pairs"]:
        found.append(f"rated {r['rated']} (doubled {r['doubled']}) + failed {r['failed']} "
                     f"(of which rated {r['failed_and_rated']}) != {r['pairs']} pairs")  # fmt: skip
    if r["failed_short"]:
        found.append(
            f"{r['failed_short']} failed calls without {settings.JUDGE_INVALID_REPLY_ATTEMPTS} invalid replies"
        )
    if r["requests"] != r["replies"]:
        found.append(f"{r['requests']} requests but {r['replies']} replies stored")
    if r["peak"] > r["concurrency"]:
        found.append(f"{r['peak']} requests in flight at once, above C = {r['concurrency']}")
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[8, 32, 64])
    parser.add_argument("--latency", type=float, default=0.2, help="seconds the stand-in takes to answer")
    parser.add_argument(
        "--invalid-rate", type=float, default=0.05, help="share of the stand-in's replies that are prose"
    )
    parser.add_argument("--repeats", type=int, default=1, help="the judge's repeats per item")
    parser.add_argument("--broker", default="redis://127.0.0.1:6379/14")
    args = parser.parse_args()
    load_before = os.getloadavg()
    queue = f"equityrate-bench-{uuid.uuid4().hex[:8]}"
    logs = Path(tempfile.mkdtemp(prefix="equityrate-bench-"))
    threads = max(args.concurrency)  # one worker takes as many lanes as it has threads
    with (
        own_test_database(),
        override_settings(CELERY_GENERATION_QUEUE=queue),
        celery_process.using_broker(app, broker_url=args.broker, queue=queue),
        ExitStack() as workers,
    ):
        study = make_study(args.items)
        database = celery_process.database_url(connection.settings_dict)  # the test database, once set up
        worker = workers.enter_context(
            celery_process.running_worker(
                app, name=f"{queue}-0", log=logs / "worker-0.log", queue=queue, broker_url=args.broker,
                database_url=database, pool="threads", concurrency=threads, env=PRODUCTION_LIKE,
            )
        )  # fmt: skip
        options = {"latency": args.latency, "invalid_rate": args.invalid_rate, "repeats": args.repeats}
        results = [run(study, concurrency=c, workers=[worker], **options) for c in args.concurrency]
    load_after = os.getloadavg()
    print(f"{args.items:,} items x {args.repeats} repeat(s) of a one-answer study (EquityMedQA independent rubric), "
          f"stand-in latency {args.latency:g} s, invalid replies at {args.invalid_rate:g} (asked again up to "
          f"{settings.JUDGE_INVALID_REPLY_ATTEMPTS} replies), 1 worker process (threads pool, {threads} threads), "
          f"PostgreSQL, Redis\n")  # fmt: skip
    print("| C | (item, repeat) | seconds | replies | replies/s | ideal (C / latency) | efficiency | peak in flight | "
          "valid first replies | retries | rated | failed |")  # fmt: skip
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        rate, ideal = r["replies"] / r["seconds"], r["concurrency"] / args.latency
        print(f"| {r['concurrency']} | {r['pairs']:,} | {r['seconds']:.1f} | {r['replies']:,} | {rate:.1f} | "
              f"{ideal:.0f} | {100 * rate / ideal:.0f} % | {r['peak']} | {100 * r['valid_first'] / r['pairs']:.1f} % | "
              f"{r['retries']:,} | {r['rated']:,} | {r['failed']:,} |")  # fmt: skip
    print(f"\nload average (1, 5, 15 min) before {' '.join(f'{v:.2f}' for v in load_before)}, "
          f"after {' '.join(f'{v:.2f}' for v in load_after)} on {os.cpu_count()} CPUs")  # fmt: skip
    broken = {r["concurrency"]: found for r in results if (found := problems(r))}
    if broken:
        raise SystemExit(f"bookkeeping broken: {broken}")
    print(f"bookkeeping: every (item, repeat) ended with exactly one rating, or failed after "
          f"{settings.JUDGE_INVALID_REPLY_ATTEMPTS} invalid replies and has none; every request made one stored "
          "reply; requests in flight never exceeded C.")  # fmt: skip


if __name__ == "__main__":
    main()
