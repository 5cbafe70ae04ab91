"""Benchmark a judge on the real local model (scripts/local_model.sh: SmolLM2-135M, llama-cpp-python's server, 2
threads): how many of its replies the rubric's validator takes, and how long a judge's call takes.

Starts the server, makes a one-answer study of --items made-up questions and answers and a judge on the local model
(tests/local_model.py: two yes/no questions, one worked example, temperature 0.7, response_format json_object,
since the server refuses json_schema) in a throw-away PostgreSQL database, and runs `submit_judge` eagerly (no
broker: the engine's one lane runs in this process, as `judge_study` does without a broker). Prints the share of
(item, repeat) pairs valid at the first reply and after retries (up to JUDGE_INVALID_REPLY_ATTEMPTS replies),
the failures, the seconds per call (mean, median), the total time and the load average before and after.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/test .venv/bin/python benchmarks/judge_local_model.py \\
        [--items 50]
"""

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from _django import own_test_database
from django.conf import settings  # noqa: E402

from config.celery import app  # noqa: E402
from studies.judge_kind import submit_judge  # noqa: E402
from tests import local_model  # noqa: E402


def load(values: tuple[float, float, float]) -> str:
    return " ".join(f"{value:.2f}" for value in values)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=50)
    args = parser.parse_args()
    if not local_model.is_installed():
        local_model.install()
    app.conf.task_always_eager = True  # whatever the environment names as a broker: the lanes run here
    load_before = os.getloadavg()
    log = Path(tempfile.mkdtemp(prefix="equityrate-local-judge-")) / "server.log"
    with own_test_database(), local_model.running_server(log) as server:
        study, judge = local_model.judge_study(server.base_url, items=args.items)
        start = time.perf_counter()
        queued = submit_judge(judge, study)  # eager: returns once the lane has asked every call
        total = time.perf_counter() - start
        figures = local_model.judge_figures(judge, study)
    load_after = os.getloadavg()
    pairs, calls, seconds = figures["pairs"], figures["calls"], figures["seconds"]
    rated, failed = figures["rated"], figures["failed_invalid"] + figures["failed_unanswered"]
    print(f"{args.items} items x {judge.repeats} repeat(s), judge on {local_model.MODEL} (llama-cpp-python server, "
          f"2 threads, response_format {local_model.JUDGE_STRUCTURED_OUTPUT}, temperature {judge.source.temperature:g}"
          f", max_tokens {judge.source.max_tokens}), up to {settings.JUDGE_INVALID_REPLY_ATTEMPTS} replies per "
          f"(item, repeat), {queued} calls queued, eager (one lane in this process)\n")  # fmt: skip
    print("| figure | value |")
    print("|---|---:|")
    first = figures["valid_first"]
    rows = [
        ("valid at the first reply", f"{first} / {pairs} = {100 * first / pairs:.0f} %"),
        ("valid after retries (rated)", f"{rated} / {pairs} = {100 * rated / pairs:.0f} %"),
        ("failed (every reply invalid)", f"{figures['failed_invalid']}"),
        ("failed without a reply (HTTP errors)", f"{figures['failed_unanswered']}"),
        ("replies (invalid)", f"{figures['replies']} ({figures['invalid']})"),
        ("retries (replies after the first)", f"{figures['retries']}"),
        ("seconds per call: mean / median", f"{statistics.mean(seconds):.2f} / {statistics.median(seconds):.2f}"),
        ("seconds per call: min / max", f"{min(seconds):.2f} / {max(seconds):.2f}"),
        ("total seconds (submit_judge to every call ended)", f"{total:.1f}"),
    ]  # fmt: skip
    for label, value in rows:
        print(f"| {label} | {value} |")
    print(
        f"\nload average (1, 5, 15 min) before {load(load_before)}, after {load(load_after)} on {os.cpu_count()} CPUs"
    )
    unfinished = calls["pending"] + calls["running"]
    if unfinished or rated + failed != pairs or figures["rated_pairs"] != rated:
        raise SystemExit(f"the run did not finish cleanly: calls {calls}, rated {rated}, failed {failed}")
    print(f"finished: every (item, repeat) ended rated ({rated}) or failed ({failed}); no call left")


if __name__ == "__main__":
    main()
