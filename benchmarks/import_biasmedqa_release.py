"""Benchmark importing BiasMedQA's released responses (216,288 rows): rows/s and peak memory.

On a throw-away PostgreSQL database: the base MedQA questions are imported, then a fresh child process imports
the responses file as `import_biasmedqa_responses` does (streamed from the .csv.gz, two passes, one
transaction). Memory is the child's resident-set high-water mark, reset just before the import (as in
import_memory.py). A second child imports the file again (idempotent: nothing new).

    .venv/bin/python benchmarks/import_biasmedqa_release.py [--path FILE]
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_PATH = HERE.parents[1] / "shared" / "datasets" / "biasmedqa" / "model_responses" / "model_responses_all.csv.gz"
BASE_PATH = HERE.parents[1] / "shared" / "datasets" / "biasmedqa" / "questions" / "test.jsonl"


def child_import(path: str) -> None:
    sys.path.insert(0, str(HERE))
    import _django  # noqa: F401
    from django.conf import settings

    settings.DEBUG = False  # DEBUG would keep every query's SQL in memory
    from import_memory import peak_rss_mib, reset_peak_rss, rss_mib

    from scoring.release_import import import_biasmedqa_responses

    reset_peak_rss()
    before = rss_mib()
    start = time.perf_counter()
    file = Path(path)
    report = import_biasmedqa_responses(lambda: file.open("rb"), file.name)
    seconds = time.perf_counter() - start
    print(json.dumps({"rows": report.rows, "seconds": seconds, "before": before, "peak": peak_rss_mib(),
                      "answers_created": report.answers_created, "answers_existing": report.answers_existing,
                      "variants_created": report.questions_created, "scores": report.released_outcomes}))  # fmt: skip


def run_child(args: list[str], database_url: str) -> dict:
    env = {**os.environ, "DATABASE_URL": database_url}
    result = subprocess.run([sys.executable, __file__, *args], env=env, capture_output=True, text=True, check=False)
    if result.returncode:
        raise SystemExit(f"{args} failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def database_url() -> str:
    from django.db import connection

    s = connection.settings_dict
    return f"postgres://{s['USER']}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


def loadavg() -> str:
    return Path("/proc/loadavg").read_text().strip()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--path", default=str(DEFAULT_PATH))
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child_import(args.child)
        return

    sys.path.insert(0, str(HERE))
    import _django
    from django.db import connection

    from datasets.importers.questions import QuestionOptions
    from datasets.services import import_questions

    print(f"load average before: {loadavg()}")
    with _django.own_test_database():
        import_questions(data=BASE_PATH.read_bytes(), filename=BASE_PATH.name, options=QuestionOptions(format="medqa"))
        url = database_url()
        connection.close()
        for label in ("first import", "second import"):
            result = run_child(["--child", args.path], url)
            rate = result["rows"] / result["seconds"]
            print(f"{label}: {result['rows']} rows in {result['seconds']:.1f} s = {rate:.0f} rows/s; "
                  f"RSS before {result['before']:.0f} MiB, peak {result['peak']:.0f} MiB "
                  f"(growth {result['peak'] - result['before']:.0f} MiB); answers {result['answers_created']} new, "
                  f"{result['answers_existing']} present; variants {result['variants_created']} new; "
                  f"released outcomes {result['scores']}")  # fmt: skip
    print(f"load average after: {loadavg()}")


if __name__ == "__main__":
    main()
