"""Benchmark the memory of rendering a recipe whose `replace` pairs multiply its text (issue 17).

The attacker's recipe: one worked example with N pairs ["e", "eeeeeeeeee"], each multiplying the example's
letters "e" by ten. It is rendered as saving, previewing and every job render it (`recipes.render_prompt` over
the sample question, the question also being the example), in a fresh child process per case, and the child's
resident-set high-water mark (VmHWM, reset just before the render) is printed beside its resident size before,
with the outcome: the prompt's length, or the error that refused it.

    .venv/bin/python benchmarks/recipe_bounds.py [--pairs 5,6,7]
"""

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from _memory import status_mib

HERE = Path(__file__).resolve().parent


def child(pairs: int) -> None:
    sys.path.insert(0, str(HERE))
    import _django  # noqa: F401  (sets Django up; the render itself reads no database)

    from datasets import recipe_pages, recipes
    from datasets.models import PromptRecipe

    recipe = PromptRecipe(name="multiplier", examples=[{"replace": [["e", "e" * 10]] * pairs}])
    sample = recipe_pages.SAMPLE_QUESTION
    with open("/proc/self/clear_refs", "w") as clear_refs:  # the high-water mark starts from here
        clear_refs.write("5")
    before = status_mib("VmRSS")
    started = time.perf_counter()
    try:
        outcome = f"rendered {len(recipes.render_prompt(recipe.settings(), sample, [sample])):,} characters"
    except recipes.RecipeError as error:
        outcome = f"refused: {error}"
    seconds = time.perf_counter() - started
    print(json.dumps({"before": before, "peak": status_mib("VmHWM"), "seconds": seconds, "outcome": outcome}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", default="5,6,7", help="numbers of replace pairs to try")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        child(args.child)
        return
    print("memory: the child's resident set before the render and its high-water mark (VmHWM) after\n")
    print(f"{'pairs':>5} {'s':>7} {'before':>7} {'peak':>7} {'growth':>7}  outcome")
    for pairs in [int(n) for n in args.pairs.split(",")]:
        result = subprocess.run([sys.executable, __file__, "--child", str(pairs)], capture_output=True, text=True,
                                check=False)  # fmt: skip
        if result.returncode:
            print(f"{pairs:5d} failed: {result.stderr.strip().splitlines()[-1:]}")
            continue
        row = json.loads(result.stdout.strip().splitlines()[-1])
        print(f"{pairs:5d} {row['seconds']:7.2f} {row['before']:6.0f}M {row['peak']:6.0f}M "
              f"{row['peak'] - row['before']:6.0f}M  {row['outcome'][:110]}")  # fmt: skip


if __name__ == "__main__":
    main()
