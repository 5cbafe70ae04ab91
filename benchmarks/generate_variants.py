"""Benchmark BiasMedQA's variant generator: 1,273 MedQA questions x 7 biases = 8,911 variants on PostgreSQL.

Imports MedQA into a throw-away database, then times a variant run (in-process, as `generate_variants`
runs it) making the 8,911 variants, and a second run that finds them all (the idempotent path).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/test .venv/bin/python benchmarks/generate_variants.py
"""

import resource
import time

from _django import REPO, own_test_database
from django.db import connection  # noqa: E402

from datasets.importers.questions import QuestionOptions  # noqa: E402
from datasets.models import Dataset  # noqa: E402
from datasets.services import import_questions  # noqa: E402
from datasets.variants.runs import run_variant_run, start_variant_run  # noqa: E402

MEDQA = REPO.parent / "shared" / "datasets" / "biasmedqa" / "questions" / "test.jsonl"


def timed_run(base: Dataset, seed: int):
    start = time.perf_counter()
    run = start_variant_run(generator="biasmedqa", base_dataset=base, seed=seed, queue=False)
    run = run_variant_run(run.id)
    seconds = time.perf_counter() - start
    if run.status != "done":
        raise SystemExit(f"run failed: {run.error}")
    return run, seconds


def main() -> None:
    with own_test_database():
        import_questions(data=MEDQA.read_bytes(), filename=MEDQA.name, options=QuestionOptions(format="medqa"))
        base = Dataset.objects.get(name="MedQA (USMLE test)")
        print(f"database: {connection.vendor}; base: {base.questions.count()} questions\n")
        print("| run | variants | created | existing | seconds | variants/s |")
        print("|---|---:|---:|---:|---:|---:|")
        for label in ("first (seed 0)", "again (seed 0)", "seed 1"):
            run, seconds = timed_run(base, 1 if label == "seed 1" else 0)
            print(f"| {label} | {run.total} | {run.created} | {run.existing} | {seconds:.2f} | "
                  f"{run.total / seconds:,.0f} |")  # fmt: skip
        peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"\npeak resident memory: {peak_mib:.0f} MiB")


if __name__ == "__main__":
    main()
