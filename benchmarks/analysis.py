"""Benchmark the analysis engine against the straightforward method, at the paper's scale and at 1,000,000 ratings.

Builds synthetic release-format frames (pure pandas, no database) shaped like the seed paper's empirical study
(Pfohl et al. 2024, Table 2 and Methods): Med-PaLM 2 answers rated independently by physicians and health equity
experts for every dataset, singly except Mixed MMQA-OMAQ and CC-Manual (triple) and Omiye et al. (quintuple);
pairwise Med-PaLM 2 vs Med-PaLM on the same datasets (not the counterfactual ones) and vs physician-written
answers on part of HealthSearchQA; counterfactual pairs of CC-Manual (102, triple) and CC-LLM (200); 262
consumers rating three Mixed MMQA-OMAQ answers each. The physician-written comparison takes up the remainder,
so the total is exactly the target (17,099 = the paper's count). At 1,000,000 ratings every dataset has ~58x
the items (and raters), with the same replication.

For each scale it times, in the same run:
- the engine: `analysis.tables.build_report` (all four tables), and its rates table alone;
- the straightforward method, as the authors' notebook does it: one `scipy.stats.bootstrap(method="BCa",
  n_resamples=1000)` call per rates-table cell, over the cell's 0/1 values (pooled: each rating; majority/any:
  each item's aggregated value); for counterfactual pairs judged from their answers' ratings, the engine's
  cluster bootstrap as scipy writes it: the pairs' (k, n) counts, `paired=True`, statistic sum k / sum n (the
  notebook bootstraps the pooled rows' rating combinations as if independent; the engine does not, since
  issue 17). When that would take longer than --naive-budget
  seconds, it times a uniform random sample of the cells and extrapolates (said so in the output).
and compares the two: the largest |difference| of the CI endpoints over cells that both estimate.

    .venv/bin/python benchmarks/analysis.py [--scales 17099 1000000] [--naive-budget 900] [--sample 60]
        [--database 17099]   # also: import_ratings into a throw-away PostgreSQL database, time `analyze`
"""

import argparse
import math
import sys
import time
import warnings
from itertools import pairwise
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from analysis import tables  # noqa: E402
from analysis.outcomes import (  # noqa: E402
    DIMENSIONS,
    outcomes_counterfactual,
    outcomes_independent,
    outcomes_pairwise,
    with_equitymedqa,
)

PAPER_RATINGS = 17_099
PHYSICIAN, EXPERT, CONSUMER = "Physician", "Health equity expert", "Consumer"
MED_PALM_2, MED_PALM, PHYSICIAN_WRITTEN = "Med-PaLM-2", "Med-PaLM", "Physician-written"
HSQA, MIXED, OMIYE = "HealthSearchQA", "Mixed MMQA-OMAQ", "Omiye et al."
OMAQ = "Open-ended Medical Adversarial Queries (OMAQ)"
EHAI = "Equity in Health AI (EHAI)"
FBRT_MANUAL = "Failure-Based Red Teaming - Manual (FBRT-Manual)"
FBRT_LLM = "Failure-Based Red Teaming - LLM (FBRT-LLM)"
TRINDS = "TRopical and INfectious DiseaseS (TRINDS)"
CC_MANUAL = "Counterfactual Context - Manual (CC-Manual)"
CC_LLM = "Counterfactual Context - LLM (CC-LLM)"
# (dataset, questions, ratings per item and pool) of the independent and pairwise rubrics.
QUESTION_SETS = [(HSQA, 1061, 1), (OMAQ, 182, 1), (EHAI, 300, 1), (FBRT_MANUAL, 150, 1), (FBRT_LLM, 661, 1),
                 (TRINDS, 106, 1), (MIXED, 240, 3), (OMIYE, 9, 5)]  # fmt: skip
PAIR_SETS = [(CC_MANUAL, 102, 3), (CC_LLM, 200, 1)]  # counterfactual pairs; their questions are rated independently
SHORT = {CC_MANUAL: "ccm", CC_LLM: "ccl"}
CONSUMERS, CONSUMER_ITEMS = 262, 3
RATERS_PER_POOL = 12
POOLS = [PHYSICIAN, EXPERT]
BIAS_RATE = {PHYSICIAN: 0.10, EXPERT: 0.13, CONSUMER: 0.20}
AGE_GROUPS = ["18-24", "25-34", "35-44", "45-54", "55-64", "65 or older"]
GENDERS = ["Woman", "Man", "Non-binary"]
RACES = ["Asian", "Black or African American", "Hispanic or Latino", "White", "Asian; White"]
IDEAL = ["Yes", "No", "Unsure"]
HOW = ["Identical or similar, with only minor differences in syntax or structure",
       "Differ in syntax or structure but not in content", "Differ in content but not in syntax or structure",
       "Significantly differ in content, syntax, and structure"]  # fmt: skip
CF_DIMENSIONS = [d if d != "omits_systemic_explanation" else "omits_systemic_explanations" for d in DIMENSIONS]


# --- Synthetic release-format frames -----------------------------------------------------------------------


def _ratings(rng, items: int, replication: int, raters: int, prefix: str):
    """(item index, rater id) of every rating: each item rated by `replication` distinct raters of the pool."""
    item = np.repeat(np.arange(items), replication)
    offset = np.repeat(rng.integers(raters, size=items), replication)
    rater = (offset + np.tile(np.arange(replication), items)) % raters
    return item, np.char.add(prefix, rater.astype(str)).astype(object)


def _item_rates(rng, items: int, mean: float, concentration: float = 4.0) -> np.ndarray:
    """Per-item chance of a positive rating, Beta-distributed around `mean` (raters of an item tend to agree)."""
    return rng.beta(mean * concentration, (1 - mean) * concentration, size=items)


def _marks(rng, given: np.ndarray, chance: float) -> dict[str, np.ndarray]:
    return {dimension: given & (rng.random(given.size) < chance) for dimension in DIMENSIONS}


def _independent(rng, dataset, questions, replication, pool, raters, prefix, ids):
    item, rater_id = _ratings(rng, questions, replication, raters, prefix)
    biased = rng.random(item.size) < _item_rates(rng, questions, BIAS_RATE[pool])[item]
    severe = rng.random(item.size) < 0.3
    frame = pd.DataFrame({
        "question_id": ids[item], "dataset": dataset, "rater_type": pool, "rater_id": rater_id,
        "bias_presence": np.where(biased, np.where(severe, "Severe bias", "Minor bias"), "No bias"),
        **_marks(rng, biased, 0.35), "answer_source": MED_PALM_2,
    })  # fmt: skip
    return frame


def _pairwise(rng, dataset, questions, replication, pool, raters, prefix, ids, comparator, sources):
    item, rater_id = _ratings(rng, questions, replication, raters, prefix)
    prefer_2 = _item_rates(rng, questions, 0.15 if pool == EXPERT else 0.05)[item]
    prefer_comparator = _item_rates(rng, questions, 0.02)[item]
    draw = rng.random(item.size)
    choice = np.where(draw < prefer_2, 0, np.where(draw < prefer_2 + prefer_comparator, 1, 2))  # 2: a tie
    frame = pd.DataFrame({"question_id": ids[item], "dataset": dataset, "rater_type": pool, "rater_id": rater_id})
    for source in sources:  # True for the answer with more bias; empty for sources not in the pair
        if source == MED_PALM_2:
            frame[f"{source}_answer_more_bias"] = np.where(choice == 1, True, False).astype(object)
        elif source == comparator:
            frame[f"{source}_answer_more_bias"] = np.where(choice == 0, True, False).astype(object)
        else:
            frame[f"{source}_answer_more_bias"] = np.full(item.size, np.nan, dtype=object)
    for dimension, marked in _marks(rng, choice < 2, 0.3).items():
        frame[dimension] = marked
    return frame


def _counterfactual(rng, dataset, pairs, replication, pool, raters, prefix, short):
    item, rater_id = _ratings(rng, pairs, replication, raters, prefix)
    biased = rng.random(item.size) < _item_rates(rng, pairs, 0.08)[item]
    frame = pd.DataFrame({
        "question_1_id": np.char.add(f"{short}-", item.astype(str)).astype(object) + "a",
        "question_2_id": np.char.add(f"{short}-", item.astype(str)).astype(object) + "b",
        "dataset": dataset, "rater_type": pool, "rater_id": rater_id, "bias_presence": biased,
    })  # fmt: skip
    for column, marked in zip(CF_DIMENSIONS, _marks(rng, biased, 0.3).values(), strict=True):
        frame[column] = marked
    frame["ideal_answers_differ"] = rng.choice(IDEAL, size=item.size, p=[0.3, 0.6, 0.1])
    frame["answers_differ_how"] = rng.choice(HOW, size=item.size)
    frame["answer_1_source"] = frame["answer_2_source"] = MED_PALM_2
    return frame


def _ids(short: str, count: int) -> np.ndarray:
    return np.char.add(f"{short}-", np.arange(count).astype(str)).astype(object)


def synthetic_frames(total: int, *, seed: int = 0) -> dict[str, pd.DataFrame]:
    """Release-format frames with exactly `total` ratings, shaped like the paper's study (module docstring)."""
    rng = np.random.default_rng(seed)
    scale = total / PAPER_RATINGS
    sized = lambda count: max(1, round(count * scale))  # noqa: E731
    # At least as many raters as an item has ratings, so that no rater rates an item twice at small scales.
    raters = max(sized(RATERS_PER_POOL), max(rep for _, _, rep in QUESTION_SETS + PAIR_SETS))
    question_sets = [(name, sized(count), rep) for name, count, rep in QUESTION_SETS]
    pair_sets = [(name, sized(count), rep) for name, count, rep in PAIR_SETS]
    independent, pairwise, counterfactual = [], [], []
    sources = [MED_PALM_2, MED_PALM, PHYSICIAN_WRITTEN]
    for pool, prefix in zip(POOLS, ["phys-", "expert-"], strict=True):
        for name, count, rep in question_sets:
            ids = _ids(name[:12], count)
            independent.append(_independent(rng, name, count, rep, pool, raters, prefix, ids))
            pairwise.append(_pairwise(rng, name, count, rep, pool, raters, prefix, ids, MED_PALM, sources))
        for name, count, rep in pair_sets:
            short = SHORT[name]
            counterfactual.append(_counterfactual(rng, name, count, rep, pool, raters, prefix, short))
            # Both questions of each pair are answered and rated independently, as often as the pair.
            for side in ("a", "b"):
                ids = np.char.add(_ids(short, count).astype(str), side).astype(object)
                independent.append(_independent(rng, name, count, rep, pool, raters, prefix, ids))
    consumers = sized(CONSUMERS)
    mixed = _ids(MIXED[:12], question_sets[6][1])
    drawn = np.concatenate([rng.choice(mixed.size, size=CONSUMER_ITEMS, replace=False) for _ in range(consumers)])
    consumer = np.repeat(np.arange(consumers), CONSUMER_ITEMS)
    chance = BIAS_RATE[CONSUMER] + 0.05 * (consumer % 3 == 0)  # some demographic signal for the regression
    biased = rng.random(drawn.size) < chance
    independent.append(pd.DataFrame({
        "question_id": mixed[drawn], "dataset": MIXED, "rater_type": CONSUMER,
        "rater_id": np.char.add("consumer-", consumer.astype(str)).astype(object),
        "bias_presence": np.where(biased, "Minor bias", "No bias"), **_marks(rng, biased, 0.35),
        "answer_source": MED_PALM_2, "rater_age_group": np.array(AGE_GROUPS, dtype=object)[consumer % 6],
        "rater_gender": np.array(GENDERS, dtype=object)[consumer % 3],
        "rater_race_ethnicity": np.array(RACES, dtype=object)[consumer % 5],
    }))  # fmt: skip
    # The physician-written comparison on HealthSearchQA takes up what is left of the target.
    so_far = sum(len(frame) for frame in [*independent, *pairwise, *counterfactual])
    left = total - so_far
    if left < 0:
        raise ValueError(f"the design already has {so_far} ratings, more than {total}")
    hsqa = _ids(HSQA[:12], question_sets[0][1])
    for pool, prefix, count in zip(POOLS, ["phys-", "expert-"], [left - left // 2, left // 2], strict=True):
        pairwise.append(
            _pairwise(rng, HSQA, count, 1, pool, raters, prefix, hsqa[np.arange(count) % hsqa.size],
                      PHYSICIAN_WRITTEN, sources)
        )  # fmt: skip
    frames = {
        "independent": pd.concat(independent, ignore_index=True),
        "pairwise": pd.concat(pairwise, ignore_index=True),
        "counterfactual": pd.concat(counterfactual, ignore_index=True),
    }
    assert sum(len(frame) for frame in frames.values()) == total
    return frames


# --- The straightforward method ------------------------------------------------------------------------------

KEYS = [*tables.CELL, "aggregation"]


def naive_cells(frames: dict[str, pd.DataFrame]) -> list[tuple[tuple, tuple[np.ndarray, ...]]]:
    """Every rates-table cell with the data scipy bootstraps, one group at a time: the 0/1 values of its samples
    (ratings or items), or for counterfactual pairs judged from their answers, the pairs' (k, n) counts."""
    parts = [outcomes_independent(frames["independent"]), outcomes_pairwise(frames["pairwise"]),
             outcomes_counterfactual(frames["counterfactual"])]  # fmt: skip
    outcomes = with_equitymedqa(pd.concat([part.astype(object) for part in parts], ignore_index=True))
    cells = []
    for key, group in outcomes.groupby(tables.CELL, sort=False):
        values = group["value"].to_numpy(dtype=float)
        per_item = group.groupby("item", sort=False)["value"].agg(["size", "sum"])
        cells.append(((*key, "pooled"), (values,)))
        cells.append(((*key, "majority"), ((2 * per_item["sum"] > per_item["size"]).to_numpy(dtype=float),)))
        cells.append(((*key, "any"), ((per_item["sum"] > 0).to_numpy(dtype=float),)))
    derived = tables.counterfactual_answer_counts(frames["independent"], frames["counterfactual"])
    for key, pairs in derived.groupby(KEYS, sort=False):
        cells.append((key, (pairs["k"].to_numpy(), pairs["n"].to_numpy())))
    return cells


def cell_size(data: tuple[np.ndarray, ...]) -> int:
    """The cell's n in the rates table: its samples, or the pairs' rating combinations."""
    return int(data[0].size if len(data) == 1 else data[1].sum())


def ratio(k: np.ndarray, n: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.sum(k, axis=axis) / np.sum(n, axis=axis)


def naive_interval(data: tuple[np.ndarray, ...], rng: np.random.Generator) -> tuple[float, float]:
    """scipy's BCa interval: of the mean of 0/1 values, or of sum k / sum n over pairs resampled whole."""
    if data[0].size < 2:
        return math.nan, math.nan
    # scipy's jackknife takes n x (n - 1) values at once unless batched: batch only where that would not fit in
    # memory (1M-rating cells); it changes how the work is split, not the numbers.
    size = data[0].size
    batch = None if size**2 <= 25_000_000 else max(1, 25_000_000 // size)
    statistic, paired = (np.mean, False) if len(data) == 1 else (ratio, True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # all-equal cells: scipy warns and returns NaN
        found = stats.bootstrap(data, statistic, method="BCa", n_resamples=1000, confidence_level=0.95, paired=paired,
                                vectorized=True, random_state=rng, batch=batch).confidence_interval  # fmt: skip
    return found.low, found.high


def run_naive(cells, *, budget: float, sample: int, rng: np.random.Generator) -> dict:
    """Bootstrap every cell in random order; stop early, keeping a uniform random sample of the cells, when all of
    them would take longer than `budget` seconds (judged after `sample` cells, or once `budget` is spent)."""
    order = rng.permutation(len(cells))
    timed, intervals = [], {}
    start = time.perf_counter()
    for index in order:
        key, data = cells[index]
        began = time.perf_counter()
        intervals[key] = naive_interval(data, rng)
        timed.append(time.perf_counter() - began)
        spent = time.perf_counter() - start
        if len(timed) < len(cells) and (
            (len(timed) >= sample and spent / len(timed) * len(cells) > budget) or (len(timed) >= 10 and spent > budget)
        ):
            break
    elapsed = time.perf_counter() - start
    if len(timed) == len(cells):
        return {"seconds": elapsed, "sampled": None, "intervals": intervals}
    mean = elapsed / len(timed)
    spread = 1.96 * np.std(timed, ddof=1) / math.sqrt(len(timed)) * len(cells)
    return {"seconds": mean * len(cells), "sampled": (len(timed), elapsed, spread), "intervals": intervals}


def differences(report_rates: pd.DataFrame, intervals: dict, sizes: dict) -> pd.DataFrame:
    """Per cell both methods estimate: its n and the larger |difference| of its two CI endpoints."""
    engine = report_rates.set_index(KEYS)[["ci_low", "ci_high"]].astype(float)
    rows, one_only = [], 0
    for key, (low, high) in intervals.items():
        engine_low, engine_high = engine.loc[key]
        engine_ok, naive_ok = not math.isnan(engine_low), not (math.isnan(low) or math.isnan(high))
        if engine_ok and naive_ok:
            rows.append((sizes[key], max(abs(engine_low - low), abs(engine_high - high))))
        one_only += engine_ok != naive_ok
    frame = pd.DataFrame(rows, columns=["n", "difference"])
    frame.attrs["one_only"] = one_only
    return frame


def noise_floor(cells, intervals: dict, sizes: dict) -> pd.DataFrame:
    """The same cells bootstrapped by scipy again with another seed: how far two honest runs differ."""
    rng = np.random.default_rng(2)
    again = {key: naive_interval(data, rng) for key, data in cells if key in intervals}
    rows = []
    for key, (low, high) in intervals.items():
        other_low, other_high = again[key]
        if not math.isnan(low) and not math.isnan(other_low):
            rows.append((sizes[key], max(abs(low - other_low), abs(high - other_high))))
    return pd.DataFrame(rows, columns=["n", "difference"])


BUCKETS = [0, 50, 100, 200, 500, 1000, 10_000, 100_000, 10**9]


def by_size(engine: pd.DataFrame, floor: pd.DataFrame | None) -> str:
    """Markdown rows: max |CI difference| engine vs scipy (and scipy vs scipy) per cell size."""
    lines = [
        "| cell size n | cells | max abs diff, engine vs scipy | endpoints > 0.01 | max abs diff, scipy vs scipy |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for low, high in pairwise(BUCKETS):
        part = engine[(engine["n"] > low) & (engine["n"] <= high)]
        if part.empty:
            continue
        again = floor[(floor["n"] > low) & (floor["n"] <= high)] if floor is not None else None
        noise = f"{again['difference'].max():.4f}" if again is not None and not again.empty else "not run"
        lines.append(f"| {low + 1:,}-{high:,} | {len(part):,} | {part['difference'].max():.4f} "
                     f"| {(part['difference'] > 0.01).sum()} | {noise} |")  # fmt: skip
    return "\n".join(lines)


def timed_report(frames: dict[str, pd.DataFrame]) -> tuple[tables.Report, float, dict[str, float]]:
    """build_report, its total time and the time of each of its steps (from its progress calls)."""
    marks: list[tuple[str, float]] = []
    started = time.perf_counter()
    report = tables.build_report(
        frames, seed=0, progress=lambda step, fraction: marks.append((step, time.perf_counter()))
    )
    total = time.perf_counter() - started
    steps = {step: after - at for (step, at), (_, after) in pairwise(marks)}
    return report, total, steps


def bench(total: int, *, budget: float, sample: int) -> dict:
    started = time.perf_counter()
    frames = synthetic_frames(total)
    built = time.perf_counter() - started
    print(f"\n{total:,} ratings: independent {len(frames['independent']):,}, pairwise {len(frames['pairwise']):,}, "
          f"counterfactual {len(frames['counterfactual']):,} (built in {built:.1f} s)", flush=True)  # fmt: skip
    report, engine_seconds, steps = timed_report(frames)
    rates_seconds = steps.get("Computing rates", math.nan)
    print(f"  engine: build_report {engine_seconds:.1f} s ("
          + ", ".join(f"{step.removeprefix('Computing ').removeprefix('Fitting ')} {seconds:.1f} s"
                      for step, seconds in steps.items())
          + f"); rates {len(report.rates):,} rows, reliability {len(report.reliability):,}", flush=True)  # fmt: skip
    started = time.perf_counter()
    cells = naive_cells(frames)
    prepare = time.perf_counter() - started
    naive = run_naive(cells, budget=budget, sample=sample, rng=np.random.default_rng(1))
    naive_seconds = prepare + naive["seconds"]
    if naive["sampled"]:
        count, spent, spread = naive["sampled"]
        print(f"  straightforward: {len(cells):,} cells; all of them would take longer than the {budget:.0f} s "
              f"budget, so a uniform random sample of {count} cells was bootstrapped ({spent:.0f} s) and the total "
              f"EXTRAPOLATED: {naive['seconds']:.0f} s +/- {spread:.0f} s (95%), plus {prepare:.1f} s grouping",
              flush=True)  # fmt: skip
    else:
        print(
            f"  straightforward: {len(cells):,} cells in {naive_seconds:.1f} s (grouping {prepare:.1f} s)", flush=True
        )
    sizes = {key: cell_size(data) for key, data in cells}
    agreement = differences(report.rates, naive["intervals"], sizes)
    floor = None if naive["sampled"] else noise_floor(cells, naive["intervals"], sizes)
    print(f"  CIs of {len(agreement):,} cells both methods estimate (estimable in one method only: "
          f"{agreement.attrs['one_only']}):\n" + by_size(agreement, floor), flush=True)  # fmt: skip
    large = agreement[agreement["n"] > 200]["difference"]
    return {"ratings": total, "cells": len(cells), "engine": engine_seconds, "engine_rates": rates_seconds,
            "naive": naive_seconds, "sampled": naive["sampled"], "compared": len(agreement),
            "max": agreement["difference"].max(), "max_large": large.max() if len(large) else math.nan,
            "over": int((agreement["difference"] > 0.01).sum()),
            "floor": floor["difference"].max() if floor is not None else math.nan}  # fmt: skip


def bench_database(total: int) -> None:
    """`import_ratings` of the synthetic release into a throw-away PostgreSQL database, then `analyze` end to end."""
    import io
    import tempfile

    from _django import own_test_database  # sets Django up: only this part needs it
    from django.core.management import call_command

    from analysis.loading import load_frames

    frames = synthetic_frames(total)
    with tempfile.TemporaryDirectory() as directory, own_test_database():
        release = Path(directory) / "release"
        release.mkdir()
        for kind, frame in frames.items():
            frame.to_csv(release / f"ratings_{kind}.csv", index=False)
        started = time.perf_counter()
        call_command("import_ratings", str(release), "--study-name", "Benchmark", stdout=io.StringIO())
        imported = time.perf_counter() - started
        started = time.perf_counter()
        loaded = load_frames()
        loading = time.perf_counter() - started
        assert sum(len(frame) for frame in loaded.values()) == total
        started = time.perf_counter()
        call_command("analyze", "--out", str(Path(directory) / "report"), stdout=io.StringIO())
        analysed = time.perf_counter() - started
    print(f"\nDatabase: {total:,} ratings imported with import_ratings in {imported:.0f} s; load_frames (all studies) "
          f"{loading:.1f} s; `analyze --out` end to end (load + report + write) {analysed:.1f} s")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scales", type=int, nargs="+", default=[PAPER_RATINGS, 1_000_000])
    parser.add_argument("--naive-budget", type=float, default=900, help="seconds; beyond it, sample and extrapolate")
    parser.add_argument("--sample", type=int, default=60, help="cells timed before deciding to extrapolate")
    parser.add_argument(
        "--database", type=int, default=0, metavar="RATINGS", help="also time `analyze` on this many in PostgreSQL"
    )
    args = parser.parse_args()
    results = [bench(total, budget=args.naive_budget, sample=args.sample) for total in args.scales]
    print(
        "\n| ratings | rates cells | engine: full report (s) | engine: rates table (s) | straightforward: rates "
        "table (s) | speed-up, full report | speed-up, rates table | max abs CI diff (cells n > 200) "
        "| max abs CI diff, scipy vs scipy |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in results:
        naive = f"{r['naive']:,.0f}" + (f" (extrapolated from {r['sampled'][0]} cells)" if r["sampled"] else "")
        floor = "not run" if math.isnan(r["floor"]) else f"{r['floor']:.4f}"
        print(f"| {r['ratings']:,} | {r['cells']:,} | {r['engine']:.1f} | {r['engine_rates']:.1f} | {naive} "
              f"| {r['naive'] / r['engine']:,.0f}x | {r['naive'] / r['engine_rates']:,.0f}x "
              f"| {r['max']:.4f} ({r['max_large']:.4f}) | {floor} |")  # fmt: skip
    if args.database:
        bench_database(args.database)


if __name__ == "__main__":
    main()
