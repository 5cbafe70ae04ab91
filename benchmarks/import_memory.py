"""Benchmark the memory of the upload + import path: peak memory must not grow with the file's size.

Builds question CSV files and answer JSONL files of growing size (5, 20, 45 MB by default) and a workbook
whose shared strings expand to 1 GB from a file of about 1 MB, on disk, without holding any of them. Each
import runs in a fresh child process: the upload is stored as the web process stores it (start_import_job
from the file's chunks) and imported as the worker imports it (run_import_job), on a throw-away PostgreSQL
database. Memory is the child's resident-set high-water mark (VmHWM in /proc/self/status), reset just before the
import (Linux's /proc/self/clear_refs) and printed with the resident size at that moment, so the growth is
what the import itself cost, not Django's start-up.

    .venv/bin/python benchmarks/import_memory.py [--sizes 5,20,45] [--bomb-mb 1024]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from _memory import status_mib

ROW_TEXT = 1000  # characters of question or answer text a row


def rss_mib() -> float:
    return status_mib("VmRSS")


def reset_peak_rss() -> None:
    """Start the high-water mark from the current resident size (Linux: 5 > /proc/self/clear_refs)."""
    with open("/proc/self/clear_refs", "w") as clear_refs:
        clear_refs.write("5")


def peak_rss_mib() -> float:
    """The resident-set high-water mark (VmHWM; getrusage's ru_maxrss also keeps the mark from before a reset
    once a thread has exited, so it is not used)."""
    return status_mib("VmHWM")


# --- Files, written a row at a time --------------------------------------------------------------


def rows_for(megabytes: int) -> int:
    return megabytes * 1024 * 1024 // (ROW_TEXT + 30)


def write_questions_csv(path: Path, rows: int) -> None:
    with path.open("w") as handle:
        handle.write("id,question\n")
        filler = "x" * ROW_TEXT
        for n in range(rows):
            handle.write(f"q{n},Question {n}: {filler}\n")


def write_answers_jsonl(path: Path, rows: int) -> None:
    with path.open("w") as handle:
        filler = "y" * (ROW_TEXT - 60)
        for n in range(rows):
            handle.write(json.dumps({"question_id": f"q{n}", "answer": f"Answer {n}: {filler}",
                                     "parameters": {"temperature": 0}}) + "\n")  # fmt: skip


def write_workbook_bomb(path: Path, megabytes: int) -> None:
    """A real workbook whose xl/sharedStrings.xml expands to MEGABYTES (streamed into the zip)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from openpyxl import Workbook

    plain = path.with_suffix(".plain.xlsx")
    book = Workbook()
    book.active.title = "Independent"
    book.active.append(["question_id", "dataset"])
    book.save(plain)
    string = b"<si><t>" + b"a" * 1009 + b"</t></si>"  # 1 KiB
    with zipfile.ZipFile(plain) as source, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as target:
        for part in source.infolist():
            if part.filename != "xl/sharedStrings.xml":
                target.writestr(part, source.read(part))
        with target.open("xl/sharedStrings.xml", "w", force_zip64=True) as strings:
            strings.write(b'<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">')
            for _ in range(megabytes * 1024):
                strings.write(string)
            strings.write(b"</sst>")
    plain.unlink()


# --- One import, in a child process ------------------------------------------------------------


def child(kind: str, path: str, dataset: str) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import _django  # noqa: F401  (sets Django up on DATABASE_URL)
    from django.conf import settings
    from django.core.files import File

    settings.DEBUG = False  # the benchmark's own setting: DEBUG would keep every query's SQL in memory
    from datasets.models import ImportJob
    from datasets.services import run_import_job, start_import_job
    from studies.ratings_import import RatingsImportError, import_ratings

    reset_peak_rss()
    before = rss_mib()
    start = time.perf_counter()
    if kind == "workbook":
        try:
            import_ratings(path=path)
            outcome, rows = "imported (not refused!)", 0
        except RatingsImportError as error:
            outcome, rows = "refused: " + error.problems[0][:90], 0
    else:
        options = {"dataset": dataset} if kind == "questions" else {"source": dataset, "dataset": dataset}
        with open(path, "rb") as handle:
            job = start_import_job(kind=kind, filename=Path(path).name, chunks=File(handle).chunks(),
                                   options=options, user=None)  # fmt: skip
        run_import_job(job_id=job.pk)  # already run, if Celery runs tasks eagerly (the development default)
        job.refresh_from_db()
        assert job.status == ImportJob.Status.DONE, job.errors[:3]
        rows = job.report["rows"]
        outcome = f"{job.report['questions_created'] or job.report['answers_created']} created"
    seconds = time.perf_counter() - start
    print(json.dumps({"rows": rows, "seconds": seconds, "before": before, "peak": peak_rss_mib(),
                      "outcome": outcome}))  # fmt: skip


def run_child(kind: str, path: Path, dataset: str, database_url: str) -> dict:
    env = {**os.environ, "DATABASE_URL": database_url}
    result = subprocess.run(
        [sys.executable, __file__, "--child", kind, str(path), dataset],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode:
        raise SystemExit(f"{kind} {path.name} failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="5,20,45", help="file sizes in MB")
    parser.add_argument("--bomb-mb", type=int, default=1024, help="what the workbook's shared strings expand to")
    parser.add_argument("--child", nargs=3, metavar=("KIND", "PATH", "DATASET"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import _django
    from django.db import connection

    print(f"load average before: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
    print("memory: the child process's resident set (VmRSS) before the import and its high-water mark")
    print("(VmHWM, reset just before the import) after; growth = peak - before.\n")
    header = f"{'file':34} {'MB':>5} {'rows':>7} {'s':>7} {'rows/s':>7} {'before':>7} {'peak':>7} {'growth':>7}"
    with tempfile.TemporaryDirectory(prefix="equityrate-import-memory-") as tmp, _django.own_test_database():
        settings_dict = connection.settings_dict
        database_url = (f"postgres://{settings_dict['USER']}@{settings_dict['HOST'] or '127.0.0.1'}:"
                        f"{settings_dict['PORT'] or 5432}/{settings_dict['NAME']}")  # fmt: skip
        connection.close()
        print(header)
        for size in [int(s) for s in args.sizes.split(",")]:
            rows = rows_for(size)
            dataset = f"Bench {size} MB"
            cases = [("questions", Path(tmp) / f"questions_{size}mb.csv", write_questions_csv),
                     ("answers", Path(tmp) / f"answers_{size}mb.jsonl", write_answers_jsonl)]  # fmt: skip
            for kind, path, write in cases:
                write(path, rows)
                result = run_child(kind, path, dataset, database_url)
                _print_row(path, result)
                path.unlink()
        bomb = Path(tmp) / "equitymedqa_ratings.xlsx"
        write_workbook_bomb(bomb, args.bomb_mb)
        result = run_child("workbook", bomb, "", database_url)
        _print_row(bomb, result)
        print(f"  workbook: expands to {args.bomb_mb} MB; {result['outcome']}")
    print(f"\nload average after: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")


def _print_row(path: Path, result: dict) -> None:
    size = path.stat().st_size / (1024 * 1024)
    rate = result["rows"] / result["seconds"] if result["rows"] else 0
    print(f"{path.name:34} {size:5.1f} {result['rows']:7d} {result['seconds']:7.2f} {rate:7.0f} "
          f"{result['before']:6.0f}M {result['peak']:6.0f}M {result['peak'] - result['before']:6.0f}M")  # fmt: skip


if __name__ == "__main__":
    main()
