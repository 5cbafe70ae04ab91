"""Benchmark Q-Pain's requests (issue 12): the 400 variants x five models = 2,000 completion requests with top-5
log-probabilities, through the real engine (a Celery worker's lanes over Redis, PostgreSQL) against the stand-in
(tests/llm_server.py) answering after a fixed latency; throughput against each source's concurrency limit.

Imports the Q-Pain vignettes, makes the 400 race x gender variants with the qpain generator and creates the
Q-Pain recipes (the completion one is used). Then, per limit L: five fresh sources ("stand-in-1".."stand-in-5",
each allowing L requests in flight), a fresh worker process with 5 x L threads (one per lane: no lane waits for
a thread), one job per source started at once, timed until all five are done. Each round checks that the
stand-in got 2,000 distinct (model, prompt) requests, each once, never more than 5 x L in flight, and that 2,000
answers were stored, one per (source, variant), each with its log-probabilities; then scores them with P(No)
(timed) and checks 2,000 measured scores. Prints a Markdown table and the load average around each round.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/test .venv/bin/python benchmarks/qpain_requests.py \\
        [--limits 1 2 4 8 16] [--latency 0.2] [--broker redis://127.0.0.1:6379/14] [--vignettes 50]
"""

import argparse
import os
import resource
import secrets
import tempfile
import time
import uuid
from pathlib import Path

from _django import own_test_database
from django.db import connection  # noqa: E402
from django.test import override_settings  # noqa: E402

from config.celery import app  # noqa: E402
from datasets.generation import jobs  # noqa: E402
from datasets.importers.qpain import import_qpain_vignettes  # noqa: E402
from datasets.models import Answer, AnswerSource, Dataset, GenerationJob, PromptRecipe  # noqa: E402
from datasets.variants.qpain_recipes import COMPLETION, ensure_qpain_recipes  # noqa: E402
from datasets.variants.runs import run_variant_run, start_variant_run  # noqa: E402
from engine.models import Lane  # noqa: E402
from scoring.services import score_missing  # noqa: E402
from tests import celery_process  # noqa: E402
from tests.datasets.test_generation_worker import CountingLLM  # noqa: E402

MODELS = 5
VIGNETTES, PROFILES = 50, 8  # "Yes" vignettes; 4 races x 2 genders
# The worker runs as in production: with DEBUG on, Django also records and times every query it makes.
PRODUCTION_LIKE = {"DEBUG": "false", "SECRET_KEY": secrets.token_urlsafe(50), "ALLOWED_HOSTS": "localhost"}


def make_variants(limit: int) -> tuple[Dataset, PromptRecipe]:
    """The variants of the first `limit` vignettes (all 50: 400 variants) and the completion recipe (its examples
    drawn from the vignettes)."""
    import_qpain_vignettes()
    vignettes = Dataset.objects.get(name="Q-Pain vignettes")
    options = {"limit": limit} if limit != VIGNETTES else None
    run = run_variant_run(start_variant_run(generator="qpain", base_dataset=vignettes, options=options, queue=False).id)
    if run.status != run.Status.DONE or run.dataset.questions.count() != limit * PROFILES:
        raise SystemExit(f"the qpain generator did not make {limit * PROFILES} variants: {run.status} {run.error}")
    recipe = next(recipe for recipe in ensure_qpain_recipes(vignettes) if recipe.name == COMPLETION)
    return run.dataset, recipe


def run_round(server: CountingLLM, variants: Dataset, recipe: PromptRecipe, *, limit: int, args, log: Path) -> dict:
    sources = [
        AnswerSource.objects.create(
            name=f"Stand-in {n} (limit {limit})",
            kind=AnswerSource.Kind.MODEL,
            model_name=f"stand-in-{n}",
            base_url=server.base_url,
            concurrency=limit,
            request_timeout_seconds=30,
        )  # fmt: skip
        for n in range(1, MODELS + 1)
    ]
    threads = MODELS * limit
    first_request = len(server.requests)
    server.peak_in_flight = 0
    database = celery_process.database_url(connection.settings_dict)
    worker_cpu_before = _cpu(resource.RUSAGE_CHILDREN)
    with celery_process.running_worker(
        app, name=f"{args.queue}-L{limit}", log=log, queue=args.queue, broker_url=args.broker,
        database_url=database, pool="threads", concurrency=threads, env=PRODUCTION_LIKE,
    ):  # fmt: skip
        load_before = os.getloadavg()
        own_cpu_before = _cpu(resource.RUSAGE_SELF)
        start = time.perf_counter()
        started = [jobs.start_job(dataset=variants, source=source, recipe=recipe) for source in sources]
        ids = [job.id for job in started]
        finished = [GenerationJob.Status.DONE, GenerationJob.Status.CANCELLED]
        deadline = time.monotonic() + 120 + 10 * args.variants * args.latency / limit
        # One query a tenth of a second: the watching should not take CPU from the worker it measures.
        while GenerationJob.objects.filter(id__in=ids, status__in=finished).count() < len(ids):
            if time.monotonic() > deadline:
                progress = [jobs.job_progress(job).as_dict() for job in started]
                raise SystemExit(f"limit {limit}: jobs did not finish in time: {progress}\n{log.read_text()[-3000:]}")
            time.sleep(0.1)
        seconds = time.perf_counter() - start
        own_cpu = _cpu(resource.RUSAGE_SELF) - own_cpu_before
        load_after = os.getloadavg()
        # The lanes leave within a second of their job's end; let them before the worker is stopped.
        while Lane.objects.filter(endpoint__answer_sources__in=sources).exclude(token="").exists():
            time.sleep(0.05)
    worker_cpu = _cpu(resource.RUSAGE_CHILDREN) - worker_cpu_before  # counted once the worker has exited
    requests = server.requests[first_request:]
    answers = Answer.objects.filter(source__in=sources)
    logprobs = list(answers.values_list("response_metadata__logprobs", flat=True))
    scoring_start = time.perf_counter()
    counts = score_missing(scorer="p_no", answers=answers)
    scoring_seconds = time.perf_counter() - scoring_start
    return {
        "variants": args.variants,
        "limit": limit,
        "threads": threads,
        "requests": len(requests),
        "distinct": len({(request["model"], request.get("prompt")) for request in requests}),
        "completions_with_logprobs": sum(request.get("logprobs") == 5 for request in requests),
        "peak": server.peak_in_flight,
        "seconds": seconds,
        "answers": len(logprobs),
        "pairs": answers.values("source", "question").distinct().count(),
        "with_logprobs": sum(bool(read and read.get("top_logprobs")) for read in logprobs),
        "jobs_done": GenerationJob.objects.filter(id__in=ids, status=GenerationJob.Status.DONE).count(),
        "scored": counts["scored"],
        "measured": counts["measured"],
        "scoring_seconds": scoring_seconds,
        "own_cpu": own_cpu,
        "worker_cpu": worker_cpu,
        "load_before": load_before,
        "load_after": load_after,
    }


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def problems(r: dict) -> list[str]:
    expected = MODELS * r["variants"]
    found = []
    for key in ("requests", "distinct", "completions_with_logprobs", "answers", "pairs", "with_logprobs", "scored",
                "measured"):  # fmt: skip
        if r[key] != expected:
            found.append(f"{key} = {r[key]}, expected {expected}")
    if r["jobs_done"] != MODELS:
        found.append(f"{r['jobs_done']} of {MODELS} jobs done")
    if r["peak"] > MODELS * r["limit"]:
        found.append(f"{r['peak']} requests in flight, above {MODELS} x {r['limit']}")
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--limits", type=int, nargs="+", default=[1, 2, 4, 8, 16], help="concurrency per source")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds the stand-in takes to answer")
    parser.add_argument("--broker", default="redis://127.0.0.1:6379/14")
    parser.add_argument("--vignettes", type=int, default=VIGNETTES, help="the first N Yes vignettes (8 variants each)")
    args = parser.parse_args()
    args.variants = args.vignettes * PROFILES
    args.queue = f"equityrate-bench-{uuid.uuid4().hex[:8]}"
    logs = Path(tempfile.mkdtemp(prefix="equityrate-bench-"))
    with (
        own_test_database(),
        override_settings(CELERY_GENERATION_QUEUE=args.queue),
        celery_process.using_broker(app, broker_url=args.broker, queue=args.queue),
        CountingLLM(latency=args.latency) as server,
    ):
        variants, recipe = make_variants(args.vignettes)
        results = []
        for limit in args.limits:
            results.append(run_round(server, variants, recipe, limit=limit, args=args, log=logs / f"L{limit}.log"))
            print(f"limit {limit}: {results[-1]['seconds']:.1f} s", flush=True)
    print(f"\n{args.variants} Q-Pain variants x {MODELS} sources, recipe '{recipe.name}' (top-5 log-probabilities), "
          f"stand-in latency {args.latency:g} s; per limit L: 5 fresh sources, a fresh worker (threads pool, "
          f"5 x L threads), PostgreSQL, Redis; {os.cpu_count()} CPUs\n")  # fmt: skip
    print("| limit per source | concurrent requests | requests | seconds | requests/s | ideal (5 x L / latency) "
          "| share of ideal | peak in flight | P(No) scoring s | worker CPU s | stand-in CPU s | load before "
          "| load after |")  # fmt: skip
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
    for r in results:
        rate, ideal = r["requests"] / r["seconds"], MODELS * r["limit"] / args.latency
        load = [" / ".join(f"{value:.2f}" for value in r[key]) for key in ("load_before", "load_after")]
        print(f"| {r['limit']} | {MODELS * r['limit']} | {r['requests']} | {r['seconds']:.1f} | {rate:.1f} | "
              f"{ideal:.0f} | {100 * rate / ideal:.0f} % | {r['peak']} | {r['scoring_seconds']:.2f} | "
              f"{r['worker_cpu']:.1f} | {r['own_cpu']:.1f} | {load[0]} | {load[1]} |")  # fmt: skip
    failed = {r["limit"]: problems(r) for r in results if problems(r)}
    if failed:
        raise SystemExit(f"checks failed: {failed}")
    print(f"\nworker CPU: the worker process's user + system seconds, start-up and shutdown included; stand-in "
          f"CPU: this process's during the timed run (the stand-in's threads and the polling). load: 1 / 5 / "
          f"15-minute averages just before the jobs start and as the last one finishes.\nEvery round: "
          f"{MODELS * args.variants} requests to /completions with "
          f"logprobs 5, {MODELS * args.variants} distinct (model, prompt) pairs, each sent once; requests in flight "
          f"never above 5 x L; {MODELS * args.variants} answers stored, one per (source, variant), each with "
          f"log-probabilities in response_metadata; {MODELS * args.variants} P(No) scores, all measured.")  # fmt: skip


if __name__ == "__main__":
    main()
