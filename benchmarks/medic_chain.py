"""Benchmark MEDIC's chain on a real Celery worker against the 200 ms stand-in: 1,000 generated questions (10
desires -> 10 patient questions -> 50 styles x 2 samples restyled, the restyling flowing from each question as it
is made), answered by 2 sources, read by 2 judge models (three judges each: hallucinations, omissions, treatment
categories). Each source allows C requests in flight; the stages run one after another (steps, answers, judges),
each timed from its submission to its last call's end and set against the ideal: the sum of the concurrency limits
of the sources it uses, over the stand-in's latency. Prints a Markdown table, the load average before and after,
and checks the bookkeeping: every call ended once, nothing doubled, never more in flight than the limits allow.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/test .venv/bin/python benchmarks/medic_chain.py \\
        [--desires 10] [--styles 50] [--samples 2] [--concurrency 8] [--latency 0.2]
"""

import argparse
import os
import secrets
import tempfile
import time
import uuid
from contextlib import ExitStack
from pathlib import Path

from _django import own_test_database
from django.db import connection  # noqa: E402
from django.test import override_settings  # noqa: E402

from config.celery import app  # noqa: E402
from datasets.chains import question_kind  # noqa: E402
from datasets.chains.medic_templates import ensure_medic_recipes  # noqa: E402
from datasets.generation import jobs  # noqa: E402
from datasets.models import Answer, AnswerSource, Dataset, PromptRecipe, Question  # noqa: E402
from engine import calls as engine_calls  # noqa: E402
from engine.models import Call, Lane  # noqa: E402
from studies.assignment import items_for_answers  # noqa: E402
from studies.judge_kind import submit_judge  # noqa: E402
from studies.medic_study import medic_file  # noqa: E402
from studies.models import JudgeRating  # noqa: E402
from studies.study_files import load_study_text  # noqa: E402
from studies.study_steps import steps_of  # noqa: E402
from tests import celery_process  # noqa: E402
from tests.datasets.test_generation_worker import CountingLLM  # noqa: E402

PRODUCTION_LIKE = {"DEBUG": "false", "SECRET_KEY": secrets.token_urlsafe(50), "ALLOWED_HOSTS": "localhost"}
SPECIAL = ("capitalization", "typos")  # the stand-in writes these alike across grades: left out, so texts differ
DESCRIPTORS = ["tends to write longer sentences", "tends to write shorter sentences", "writes concisely",
               "writes with a formal tone", "writes with a lack of clarity", "writes with a lack of details",
               "writes with a mix of present and past tense", "writes with a technical vocabulary",
               "writes with an attention to detail", "writes with an informal tone",
               "writes with an objective perspective", "writes with complex sentence structures",
               "writes with examples and analogy", "writes with inconsistent punctuation",
               "writes with inconsistent spacing", "writes with simple or simplistic sentence structures"]  # fmt: skip


def styles(count: int) -> list[str]:
    found = [f"person with a {grade}th grade level of education who {descriptor}"
             for grade in (6, 8, 10, 12, 14) for descriptor in DESCRIPTORS]  # fmt: skip
    return found[:count]


def wait_for(seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while Call.objects.filter(status__in=engine_calls.UNFINISHED).exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"calls left after {seconds:g} s: {list(Call.objects.values_list('kind', 'status'))[:20]}")
        time.sleep(0.1)
    while Lane.objects.exclude(token="").exists():  # the lanes leave within a second
        time.sleep(0.05)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--desires", type=int, default=10)
    parser.add_argument("--styles", type=int, default=50)
    parser.add_argument("--samples", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=8, help="each source's limit of requests in flight")
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--broker", default="redis://127.0.0.1:6379/14")
    args = parser.parse_args()
    load_before = os.getloadavg()
    queue = f"equityrate-bench-{uuid.uuid4().hex[:8]}"
    logs = Path(tempfile.mkdtemp(prefix="equityrate-bench-"))
    c = args.concurrency
    rows = []
    with (
        own_test_database(),
        override_settings(CELERY_GENERATION_QUEUE=queue),
        celery_process.using_broker(app, broker_url=args.broker, queue=queue),
        ExitStack() as stack,
        CountingLLM(latency=args.latency) as server,
    ):
        common = {"kind": AnswerSource.Kind.MODEL, "base_url": server.base_url, "concurrency": c,
                  "request_timeout_seconds": 30, "max_tokens": 200}  # fmt: skip
        AnswerSource.objects.create(name="Maker", model_name="maker", **common)
        answerers = [AnswerSource.objects.create(name=f"Answerer {n}", model_name=f"answerer-{n}", **common)
                     for n in "AB"]  # fmt: skip
        judges = [AnswerSource.objects.create(name=f"Judge model {n}", model_name=f"judge-{n}", **common)
                  for n in "AB"]  # fmt: skip
        ensure_medic_recipes(PromptRecipe)  # import_medic makes them with MEDIC's data
        desires = Dataset.objects.create(name="Benchmark desires")
        for n in range(args.desires):
            Question.objects.create(dataset=desires, external_id=f"d{n}", text=f"managing condition {n} at home",
                                    levels={"step": "desire"})  # fmt: skip
        study = load_study_text(medic_file(
            name="MEDIC benchmark", description="", desires=desires.name, desire_levels={"step": "desire"},
            maker="Maker", family="mistral", styles=styles(args.styles), samples=args.samples,
            answerers=[s.name for s in answerers], judge_models=[s.name for s in judges],
        )).study  # fmt: skip
        database = celery_process.database_url(connection.settings_dict)
        worker = stack.enter_context(celery_process.running_worker(
            app, name=f"{queue}-0", log=logs / "worker-0.log", queue=queue, broker_url=args.broker,
            database_url=database, pool="threads", concurrency=5 * c, env=PRODUCTION_LIKE))  # fmt: skip

        start = time.perf_counter()
        question_kind.run_steps(steps_of(study.definition))
        wait_for(3600)
        made = Question.objects.filter(metadata__has_key="step_id").count()
        rows.append(("steps (maker)", Call.objects.filter(kind="question").count(), time.perf_counter() - start, c,
                     f"{made} questions"))  # fmt: skip

        start = time.perf_counter()
        for entry in study.definition["questions"]:
            for source in answerers:
                jobs.start_job(dataset=Dataset.objects.get(name=entry["dataset"]), source=source, study_id=study.pk)
        wait_for(3600)
        answers = Answer.objects.filter(study_links__study=study).count()
        rows.append(("answers (2 sources)", Call.objects.filter(kind="answer").count(), time.perf_counter() - start,
                     2 * c, f"{answers} answers"))  # fmt: skip

        items_for_answers(study=study)
        start = time.perf_counter()
        for judge in study.judges.all():
            submit_judge(judge, study)
        wait_for(3600)
        ratings = JudgeRating.objects.filter(item__study=study).count()
        rows.append(("judges (2 models x 3 parts)", Call.objects.filter(kind="judge").count(),
                     time.perf_counter() - start, 2 * c, f"{ratings} judge ratings"))  # fmt: skip
        failed = Call.objects.filter(status=Call.Status.FAILED).count()
        peak = server.peak_in_flight
        log_tail = worker.log_tail()
    load_after = os.getloadavg()
    print(f"MEDIC's chain: {args.desires} desires -> {args.desires} questions -> {args.styles} styles x "
          f"{args.samples} samples restyled; 2 answering sources; 2 judge models x 3 parts. Stand-in latency "
          f"{args.latency:g} s, each source C = {c}, 1 worker process (threads pool, {5 * c} threads), PostgreSQL, "
          "Redis\n")  # fmt: skip
    print("| stage | calls | seconds | calls/s | ideal (sum of C / latency) | efficiency | made |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for stage, count, seconds, limits, made_text in rows:
        rate, ideal = count / seconds, limits / args.latency
        print(f"| {stage} | {count:,} | {seconds:.1f} | {rate:.1f} | {ideal:.0f} | {100 * rate / ideal:.0f} % | "
              f"{made_text} |")  # fmt: skip
    total = sum(row[1] for row in rows)
    print(f"\nall stages: {total:,} calls in {sum(row[2] for row in rows):.1f} s; peak in flight {peak} (at most "
          f"{2 * c} for the two sources a stage shares); failed calls {failed}")  # fmt: skip
    print(f"load average (1, 5, 15 min) before {' '.join(f'{v:.2f}' for v in load_before)}, "
          f"after {' '.join(f'{v:.2f}' for v in load_after)} on {os.cpu_count()} CPUs")  # fmt: skip
    if failed or peak > 2 * c:
        raise SystemExit(f"bookkeeping broken: {failed} failed calls, peak {peak}\n{log_tail}")


if __name__ == "__main__":
    main()
