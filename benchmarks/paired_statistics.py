"""Benchmark Q-Pain's statistics (analysis.paired) on 100,000 synthetic scored observations: pure pandas, no database.

The layout of Q-Pain scaled up: 5 sources x 2,500 blocks (vignettes, 500 per pain context) x the 8 race-gender
levels = 100,000 rows, each a probability with a vignette effect, a small level effect and noise; about 2% of the
rows have no value (a record without log-probabilities), so pairs drop blocks. Times, best of --repeat runs:

- `paired_tests` (5 families x 28 pairs, Bonferroni),
- `group_means` (5 x 8 levels, overall and per context),
- `heat_table` for one source and the two figures as PNG (for scale: what a page costs),

and prints the rows, the seconds and the load average before and after.

    .venv/bin/python benchmarks/paired_statistics.py [--sources 5] [--blocks 2500] [--missing 0.02] [--repeat 3]
"""

import argparse
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import best, loadavg  # noqa: E402

from analysis.paired import group_means, heat_table, paired_tests  # noqa: E402
from analysis.paired_plots import forest_figure, heat_figure  # noqa: E402

LEVELS = [f"{race} {gender}" for gender in ("woman", "man") for race in ("Asian", "Black", "Hispanic", "White")]
CONTEXTS = ["acute_cancer", "acute_non_cancer", "chronic_cancer", "chronic_non_cancer", "post_op"]


def observations(sources: int, blocks: int, missing: float, seed: int = 12) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = sources * blocks * len(LEVELS)
    source = np.repeat([f"model-{s}" for s in range(sources)], blocks * len(LEVELS))
    block = np.tile(np.repeat(np.arange(blocks), len(LEVELS)), sources)
    level = np.tile(LEVELS, sources * blocks)
    vignette = rng.beta(2, 5, size=sources * blocks)  # each vignette's own P(No), shared by its levels
    level_effect = np.tile(np.linspace(-0.01, 0.01, len(LEVELS)), sources * blocks)
    value = np.clip(np.repeat(vignette, len(LEVELS)) + level_effect + rng.normal(0, 0.02, rows), 0, 1)
    value[rng.random(rows) < missing] = np.nan
    context = np.array(CONTEXTS)[block * len(CONTEXTS) // blocks]
    return pd.DataFrame(
        {
            "study": "Q-Pain",
            "outcome": "p_no",
            "source": source,
            "factor": "race x gender",
            "level": level,
            "block": [f"{c}-{b:04d}" for c, b in zip(context, block, strict=True)],
            "context": context,
            "value": value,
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sources", type=int, default=5)
    parser.add_argument("--blocks", type=int, default=2500)
    parser.add_argument("--missing", type=float, default=0.02)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    print(f"load average before: {loadavg()}  (cpus: {os.cpu_count()})")
    values = observations(args.sources, args.blocks, args.missing)
    print(f"observations: {len(values):,} rows, {int(values['value'].isna().sum()):,} without a value")
    seconds, tests = best(lambda: paired_tests(values, level_order=LEVELS), args.repeat)
    assert isinstance(tests, pd.DataFrame)
    print(f"| step | rows out | seconds (best of {args.repeat}) |\n| --- | ---: | ---: |")
    print(f"| paired_tests | {len(tests):,} | {seconds:.3f} |")
    seconds, means = best(lambda: group_means(values, level_order=LEVELS), args.repeat)
    assert isinstance(means, pd.DataFrame)
    print(f"| group_means | {len(means):,} | {seconds:.3f} |")
    seconds, heat = best(lambda: heat_table(means, outcome="p_no", source="model-0"), args.repeat)
    assert isinstance(heat, pd.DataFrame)
    print(f"| heat_table (one source) | {len(heat):,} | {seconds:.3f} |")
    seconds, _ = best(lambda: forest_figure(tests, fmt="png"), args.repeat)
    print(f"| forest_figure PNG ({args.sources} panels) | - | {seconds:.3f} |")
    seconds, _ = best(lambda: heat_figure(means, fmt="png"), args.repeat)
    print(f"| heat_figure PNG (first 4 panels) | - | {seconds:.3f} |")
    dropped = tests["n_dropped"]
    print(f"blocks dropped per pair: min {dropped.min()}, median {dropped.median():.0f}, max {dropped.max()}")
    print(f"load average after: {loadavg()}")


if __name__ == "__main__":
    main()
