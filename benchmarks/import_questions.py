"""Benchmark the question importer on the largest seed files.

Imports MedQA (1,273 questions) and the BiasMedQA injections (8,911 rendered items), then imports both
again (the idempotent path), on the database named by DATABASE_URL (default: a throw-away SQLite file).
Prints rows/s for each step and the peak resident memory of the process.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/test .venv/bin/python benchmarks/import_questions.py
"""

import os
import resource
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "datasets" / "biasmedqa"
sys.path.insert(0, str(REPO))
os.environ.setdefault("DEBUG", "true")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
if not os.environ.get("DATABASE_URL"):
    os.environ["VAR_DIR"] = tempfile.mkdtemp(prefix="equityrate-bench-")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test.utils import setup_databases, teardown_databases  # noqa: E402

from datasets.importers.questions import QuestionOptions  # noqa: E402
from datasets.services import import_questions  # noqa: E402


def timed_import(path: Path) -> tuple[int, float, str]:
    data = path.read_bytes()
    start = time.perf_counter()
    report = import_questions(data=data, filename=path.name, options=QuestionOptions())
    elapsed = time.perf_counter() - start
    return report.rows, elapsed, f"{report.questions_created} new / {report.questions_existing} present"


def main() -> None:
    if connection.vendor == "postgresql":
        # A database of this run's own (as benchmarks/_django.py makes), so it can run beside the tests.
        connection.settings_dict.setdefault("TEST", {})["NAME"] = f"test_benchmark_{os.getpid()}"
        databases = setup_databases(verbosity=0, interactive=False)  # dropped at the end
    else:
        call_command("migrate", verbosity=0)
        databases = None
    print(f"database: {connection.vendor} ({connection.settings_dict['NAME']})")
    try:
        for label in ("first import", "re-import"):
            for path in (SHARED / "questions" / "test.jsonl", SHARED / "biasmedqa_injections.jsonl"):
                rows, seconds, outcome = timed_import(path)
                print(f"{label:12} {path.name:28} {rows:6d} rows in {seconds:6.2f} s = {rows / seconds:8.0f} rows/s"
                      f"  ({outcome})")  # fmt: skip
        peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"peak resident memory: {peak_mib:.0f} MiB")
    finally:
        if databases is not None:
            teardown_databases(databases, verbosity=0)


if __name__ == "__main__":
    main()
