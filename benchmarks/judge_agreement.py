"""Benchmark the judge report's statistics on synthetic ratings: pure pandas, no database.

Two judges rate --items items --repeats times each (default 100,000 x 5 x 2 = 1,000,000 judge ratings); three
people of one pool rate the first --human-items of them; every item has a race level, and the second judge errs
more often for one race. Times `agreement_table` (agreement with bootstrap CIs per field and level, the equity
audit), `judge_assisted_table` (PPI), `judge_place_table` (each judge among the people) and `consistency_table`
(repeats) in a child process each, and prints the seconds, the peak resident
memory (VmHWM) and the load average before and after.

    .venv/bin/python benchmarks/judge_agreement.py [--items 100000] [--repeats 5] [--human-items 2000]
"""

import argparse
import multiprocessing
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._memory import status_mib  # noqa: E402

RACES = ["Asian", "Black", "Hispanic", "White"]


def ratings(items: int, repeats: int, human_items: int, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    truth = rng.random(items) < 0.3
    race = np.array(RACES)[rng.integers(0, len(RACES), items)]
    parts = []
    for judge, extra in (("judge-a", 0.0), ("judge-b", 0.2)):
        item = np.repeat(np.arange(items), repeats)
        error = 0.1 + extra * (np.repeat(race, repeats) == "Black")
        value = np.repeat(truth, repeats) ^ (rng.random(items * repeats) < error)
        parts.append(pd.DataFrame({"item": item, "rater": judge, "rater_kind": "judge", "pool": "", "value": value}))
    for person in range(3):
        value = truth[:human_items] ^ (rng.random(human_items) < 0.08)
        parts.append(
            pd.DataFrame(
                {
                    "item": np.arange(human_items),
                    "rater": f"P-{person}",
                    "rater_kind": "human",
                    "pool": "physician",
                    "value": value,
                }
            )  # fmt: skip
        )
    frame = pd.concat(parts, ignore_index=True)
    frame["value"] = np.where(frame["value"], "yes", "no")
    frame["race"] = race[frame["item"].to_numpy()]
    frame["field"] = "bias_presence"
    return frame


def _timed(name: str, frame: pd.DataFrame, queue) -> None:
    from analysis.judge_agreement import agreement_table, consistency_table, judge_place_table
    from analysis.ppi import judge_assisted_table

    before = status_mib("VmHWM")
    start = time.perf_counter()
    if name == "agreement_table":
        table = agreement_table(frame, study="bench", factors=["race"])
    elif name == "judge_place_table":
        table = judge_place_table(frame, study="bench")
    elif name == "consistency_table":
        table = consistency_table(frame, study="bench")
    else:
        table = judge_assisted_table(frame, study="bench", factors=["race"], positive="yes")
    queue.put((name, time.perf_counter() - start, len(table), status_mib("VmHWM"), before))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--human-items", type=int, default=2_000)
    options = parser.parse_args()
    load_before = os.getloadavg()
    frame = ratings(options.items, options.repeats, options.human_items)
    judged = int((frame["rater_kind"] == "judge").sum())
    print(f"ratings: {len(frame):,} ({judged:,} by judges, {len(frame) - judged:,} by people)")
    print("| step | rows out | seconds | peak RSS (MiB) |")
    print("| --- | --- | --- | --- |")
    context = multiprocessing.get_context("fork")  # the child inherits the frame: its peak is the step's own
    for name in ("agreement_table", "judge_assisted_table", "judge_place_table", "consistency_table"):
        queue = context.Queue()
        child = context.Process(target=_timed, args=(name, frame, queue))
        child.start()
        step, seconds, rows, peak, _ = queue.get()
        child.join()
        print(f"| {step} | {rows:,} | {seconds:.2f} | {peak:,.0f} |")
    load_after = os.getloadavg()
    print(f"load average (1 min) before {load_before[0]:.2f}, after {load_after[0]:.2f}")


if __name__ == "__main__":
    main()
