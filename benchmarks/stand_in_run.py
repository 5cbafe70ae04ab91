"""Benchmark a BiasMedQA condition end to end: 8,911 variants x the no-mitigation recipe, through the real
engine (a Celery worker's lanes over Redis, PostgreSQL) against the stand-in model (tests/llm_server.py).

Generates the variants, starts one job with the recipe, and times it to done; checks that 8,911 distinct
prompts were sent once each and that every answer is a letter.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/test .venv/bin/python benchmarks/stand_in_run.py \\
        [--concurrency 16] [--latency 0] [--broker redis://127.0.0.1:6379/14] [--questions 1273]
"""

import argparse
import secrets
import tempfile
import time
import uuid
from pathlib import Path

from _django import REPO, own_test_database
from django.db import connection  # noqa: E402
from django.db.models import Count  # noqa: E402
from django.test import override_settings  # noqa: E402

from config.celery import app  # noqa: E402
from datasets.generation import jobs  # noqa: E402
from datasets.importers.questions import QuestionOptions  # noqa: E402
from datasets.models import Answer, AnswerSource, Dataset  # noqa: E402
from datasets.services import import_questions  # noqa: E402
from datasets.variants.biasmedqa_recipes import ensure_biasmedqa_recipes  # noqa: E402
from datasets.variants.runs import run_variant_run, start_variant_run  # noqa: E402
from tests import celery_process  # noqa: E402
from tests.llm_server import FakeLLM  # noqa: E402

MEDQA = REPO.parent / "shared" / "datasets" / "biasmedqa" / "questions" / "test.jsonl"
MEDQA_QUESTIONS, BIASES = 1273, 7
PRODUCTION_LIKE = {"DEBUG": "false", "SECRET_KEY": secrets.token_urlsafe(50), "ALLOWED_HOSTS": "localhost"}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds the stand-in takes to answer")
    parser.add_argument("--broker", default="redis://127.0.0.1:6379/14")
    parser.add_argument("--questions", type=int, default=MEDQA_QUESTIONS, help="the first N MedQA questions")
    args = parser.parse_args()
    expected = args.questions * BIASES
    queue = f"equityrate-bench-{uuid.uuid4().hex[:8]}"
    log = Path(tempfile.mkdtemp(prefix="equityrate-bench-")) / "worker.log"
    with (
        own_test_database(),
        override_settings(CELERY_GENERATION_QUEUE=queue),
        celery_process.using_broker(app, broker_url=args.broker, queue=queue),
        FakeLLM(latency=args.latency) as server,
    ):
        import_questions(data=MEDQA.read_bytes(), filename=MEDQA.name, options=QuestionOptions(format="medqa"))
        base = Dataset.objects.get(name="MedQA (USMLE test)")
        options = {"limit": args.questions} if args.questions != MEDQA_QUESTIONS else None
        run = start_variant_run(generator="biasmedqa", base_dataset=base, options=options, queue=False)
        variants = run_variant_run(run.id).dataset
        source = AnswerSource.objects.create(
            name="Stand-in", kind=AnswerSource.Kind.MODEL, model_name="stand-in", base_url=server.base_url,
            concurrency=args.concurrency, request_timeout_seconds=30,
        )  # fmt: skip
        recipe = ensure_biasmedqa_recipes()[0]
        database = celery_process.database_url(connection.settings_dict)
        with celery_process.running_worker(
            app, name=f"{queue}-0", log=log, queue=queue, broker_url=args.broker, database_url=database,
            pool="threads", concurrency=args.concurrency, env=PRODUCTION_LIKE,
        ):  # fmt: skip
            start = time.perf_counter()
            job = jobs.start_job(dataset=variants, source=source, recipe=recipe)
            deadline = time.monotonic() + 1800
            while not job.is_finished:
                if time.monotonic() > deadline:
                    raise SystemExit(f"job {job.id} did not finish: {jobs.job_progress(job).as_dict()}")
                time.sleep(0.1)
                job.refresh_from_db(fields=["status"])
            seconds = time.perf_counter() - start
        answers = Answer.objects.filter(source=source)
        stored = answers.aggregate(rows=Count("id"), questions=Count("question", distinct=True))
        letters = dict(answers.values_list("text").annotate(n=Count("id")))
        prompts = {request["messages"][-1]["content"] for request in server.requests}
    print(f"{expected:,} BiasMedQA variants x '{recipe.name}', stand-in latency {args.latency:g} s, source concurrency "
          f"{args.concurrency}, 1 worker (threads), PostgreSQL, Redis\n")  # fmt: skip
    print("| requests | distinct prompts | answers | seconds | answers/s |")
    print("|---:|---:|---:|---:|---:|")
    print(f"| {len(server.requests)} | {len(prompts)} | {stored['rows']} | {seconds:.1f} | "
          f"{stored['rows'] / seconds:.0f} |")  # fmt: skip
    print(f"\nanswers by letter: {dict(sorted(letters.items()))}")
    if not len(server.requests) == len(prompts) == stored["rows"] == stored["questions"] == expected:
        raise SystemExit(f"expected {expected:,} distinct prompts, each asked and answered once")


if __name__ == "__main__":
    main()
