"""Benchmark ContextSRH's statistics (analysis.contextsrh) on a synthetic results table: pure pandas, no database.

ContextSRH's real shape: 187 original questions (106 depend on age, 10 groups; 55 on location, 6; 64 on sex, 2;
a question may depend on two: 1,518 context variants) answered by --models sources, one `minilm_cosine` score row
per context answer (random similarities, 1% `missing`), and two raters labelling every original answer (gate +
"correct for which groups"; 2% `not_applicable`, 1% failed attention checks). Times, best of --repeat runs:

- `similarity_frame` (the scorer rows to (source, attribute, group, question, similarity)),
- `people_labels` + `verdicts` (the human rows to binary question x group labels and k-vote verdicts),
- `contextsrh_tables` end to end (similarity.csv, group_tests.csv, human_agreement.csv),

and prints the rows, the seconds, the load average before and after and the peak resident memory.

    .venv/bin/python benchmarks/contextsrh_stats.py [--models 10] [--repeat 3]
"""

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _memory import status_mib  # noqa: E402
from _timing import best, loadavg  # noqa: E402

from analysis import contextsrh  # noqa: E402

GROUPS = {
    "age": ["10", "15", "18", "21", "25", "30", "40", "50", "60", "70"],
    "location": ["Hawaii", "Idaho", "Massachusetts", "South Dakota", "Vermont", "Wyoming"],
    "sex": ["female", "male"],
}
COUNTS = {"age": 106, "location": 55, "sex": 64}  # 1,060 + 330 + 128 = 1,518 context variants
QUESTIONS = 187


def question_attributes(rng: np.random.Generator) -> dict[str, list[str]]:
    """Which attributes each of the 187 questions depends on: COUNTS of each, 38 questions with two."""
    attributes: dict[str, list[str]] = {f"q{number:03d}": [] for number in range(QUESTIONS)}
    names = list(attributes)
    for attribute, count in COUNTS.items():
        fewest = sorted(names, key=lambda name: (len(attributes[name]), rng.random()))[:count]
        for name in fewest:
            attributes[name].append(attribute)
    return attributes


def results_table(models: int, seed: int = 21) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    attributes = question_attributes(rng)
    rows: list[dict[str, object]] = []
    common = dict(study="ContextSRH", condition="", pool="", attention_check_passed=None)
    for model in range(models):
        source = f"model-{model:02d}"
        for question, depends in attributes.items():
            groups = [group for attribute in depends for group in GROUPS[attribute]]
            for attribute in depends:
                for group in GROUPS[attribute]:
                    value: object = "missing" if rng.random() < 0.01 else float(rng.uniform(0.5, 0.95))
                    rows.append(dict(common, kind="scorer", field="minilm_cosine", who="minilm_cosine v1",
                                     source=source, question=f"{question}-{attribute}-{group}", base_question=question,
                                     levels=json.dumps({attribute: group}), value=value))  # fmt: skip
            for rater in ("rater-a", "rater-b"):
                passed = False if rng.random() < 0.01 else None
                chosen = ["not_applicable"] if rng.random() < 0.02 else [g for g in groups if rng.random() < 0.8]
                base = dict(common, kind="human", source=source, question=question, base_question="", levels="{}",
                            who=rater, attention_check_passed=passed)  # fmt: skip
                rows.append(dict(base, field="relevant", value="all"))
                rows.extend(dict(base, field="correct_for", value=group) for group in chosen or [""])
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    before = loadavg()
    memory_before = status_mib("VmRSS")
    results = results_table(args.models)
    kinds = results["kind"].value_counts()
    print(f"results: {len(results):,} rows ({kinds.get('scorer', 0):,} scorer, {kinds.get('human', 0):,} human), "
          f"{args.models} models x 1,518 context answers")  # fmt: skip

    print(f"\n| step | rows out | seconds (best of {args.repeat}) |\n| --- | --- | --- |")
    seconds, frame = best(lambda: contextsrh.similarity_frame(results), args.repeat)
    assert isinstance(frame, pd.DataFrame)
    print(f"| similarity_frame | {len(frame):,} | {seconds:.3f} |")

    def labels() -> pd.DataFrame:
        found = contextsrh.people_labels(results, contextsrh.question_groups(frame))
        return contextsrh.verdicts(found.marks)

    seconds, judged = best(labels, args.repeat)
    assert isinstance(judged, pd.DataFrame)
    print(f"| people_labels + verdicts | {len(judged):,} | {seconds:.3f} |")
    seconds, tables = best(lambda: contextsrh.contextsrh_tables(results, study="ContextSRH"), args.repeat)
    assert isinstance(tables, dict)
    sizes = ", ".join(f"{name} {len(table):,}" for name, table in tables.items())
    print(f"| contextsrh_tables end to end | {sum(len(table) for table in tables.values()):,} | {seconds:.3f} |")
    print(f"\ntables: {sizes}")
    print(f"load average (1 min) before {before.split()[0]}, after {loadavg().split()[0]}")
    print(f"Peak resident memory: {status_mib('VmHWM'):.0f} MiB ({memory_before:.0f} MiB before the data)")


if __name__ == "__main__":
    main()
