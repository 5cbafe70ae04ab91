"""Shared set-up for the benchmark scripts: Django on PostgreSQL, and a throw-away database per run."""

import os
import statistics
import sys
import time
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("DEBUG", "true")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/test")

import django  # noqa: E402

django.setup()


@contextmanager
def own_test_database():
    """A fresh, migrated database of this run's own (so a benchmark can run beside the tests), dropped after."""
    from django.db import connection
    from django.test.utils import setup_databases, teardown_databases

    connection.settings_dict.setdefault("TEST", {})["NAME"] = f"test_benchmark_{os.getpid()}"
    databases = setup_databases(verbosity=0, interactive=False)
    try:
        yield
    finally:
        teardown_databases(databases, verbosity=0)


def timed(function, repeat: int):
    """(median seconds over `repeat` calls, the last result)."""
    seconds, result = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        result = function()
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds), result
