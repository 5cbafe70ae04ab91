"""Benchmark scoring BiasMedQA's released responses with `letter` (answers/s and peak memory).

On a throw-away PostgreSQL database: the base MedQA questions and the released responses (216,288 rows) are
imported (not timed), then a fresh child process runs `score_missing(scorer="letter")` over every answer, and
a second child runs it again (nothing left to score: the cost of finding that out).

    .venv/bin/python benchmarks/score_answers.py [--path FILE]
"""

import argparse
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from import_biasmedqa_release import BASE_PATH, DEFAULT_PATH, database_url, loadavg  # noqa: E402


def child_score() -> None:
    import _django  # noqa: F401
    from django.conf import settings

    settings.DEBUG = False
    from import_memory import peak_rss_mib, reset_peak_rss, rss_mib

    from datasets.models import Answer
    from scoring.services import score_missing

    reset_peak_rss()
    before = rss_mib()
    start = time.perf_counter()
    counts = score_missing(scorer="letter", answers=Answer.objects.all())
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "before": before, "peak": peak_rss_mib(), "counts": counts}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--path", default=str(DEFAULT_PATH))
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child_score()
        return

    import _django
    from django.conf import settings
    from django.db import connection

    settings.DEBUG = False
    from datasets.importers.questions import QuestionOptions
    from datasets.models import Answer
    from datasets.services import import_questions
    from scoring.release_import import import_biasmedqa_responses

    print(f"load average before: {loadavg()}")
    with _django.own_test_database():
        import_questions(data=BASE_PATH.read_bytes(), filename=BASE_PATH.name, options=QuestionOptions(format="medqa"))
        path = Path(args.path)
        import_biasmedqa_responses(lambda: path.open("rb"), path.name)
        answers = Answer.objects.count()
        url = database_url()
        connection.close()
        print(f"load average after the import (not timed): {loadavg()}")
        for label in ("first run", "second run"):
            result = _run(url)
            rate = answers / result["seconds"]
            print(f"{label}: {answers} answers in {result['seconds']:.1f} s = {rate:.0f} answers/s; RSS before "
                  f"{result['before']:.0f} MiB, peak {result['peak']:.0f} MiB; {result['counts']}")  # fmt: skip
    print(f"load average after: {loadavg()}")


def _run(url: str) -> dict:
    import os
    import subprocess

    env = {**os.environ, "DATABASE_URL": url}
    result = subprocess.run([sys.executable, __file__, "--child"], env=env, capture_output=True, text=True,
                            check=False)  # fmt: skip
    if result.returncode:
        raise SystemExit(f"scoring failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    main()
