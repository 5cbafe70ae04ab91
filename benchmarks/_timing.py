"""Timing helpers shared by the pure benchmarks (no database)."""

import os
import time
from collections.abc import Callable


def best(function: Callable[[], object], repeat: int) -> tuple[float, object]:
    """The fastest of `repeat` runs (seconds) and the last run's result."""
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return min(times), result


def loadavg() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())
