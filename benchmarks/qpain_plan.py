"""Benchmark Q-Pain's two analysis plans on PostgreSQL over 100,000 scored answers: load, tests, means, plots.

Builds, in a throw-away database, 2,500 vignette blocks (500 per pain context) x the 8 race x gender groups =
20,000 variant questions carrying their levels, answered by 5 sources (100,000 answers), each with the scores the
plans read: `p_no` and `p_low` (measured, or `missing` for 2%), and `said_no` (333,... scores in all), so that
`score_answers` finds nothing to do, as in every analysis after the first. Then times, in this process:

- `plan_loading.load_outcomes` (answers' levels, the preferred number per answer and outcome),
- `QPAIN_PAIRED_TESTS.compute` (3 outcomes x 5 sources x 28 pairs) and `QPAIN_GROUP_MEANS.compute`,
- both plots as PNG,
- `plan_loading.plan_table` end to end for both plans (existence check, scorers' check, load, statistics),

and prints a Markdown table, with the machine's load average before and after.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/test .venv/bin/python benchmarks/qpain_plan.py \\
        [--repeat 3] [--blocks 500]
"""

import argparse
import os
import random
import time

from _django import own_test_database, timed
from django.db import connection  # noqa: E402

from analysis.plan_loading import load_outcomes, plan_table  # noqa: E402
from analysis.plans import QPAIN_GROUP_MEANS, QPAIN_PAIRED_TESTS  # noqa: E402
from datasets.models import Answer, AnswerSource, Dataset, Question, settings_fingerprint, text_fingerprint  # noqa: E402
from scoring import scorers  # noqa: E402
from scoring.models import Score  # noqa: E402

CONTEXTS = ("acute_cancer", "acute_non_cancer", "chronic_cancer", "chronic_non_cancer", "post_op")
GROUPS = [(race, gender) for gender in ("woman", "man") for race in ("Asian", "Black", "Hispanic", "White")]
BLOCKS_PER_CONTEXT = 500
SOURCES = 5
BATCH = 5000
MISSING = 0.02


def build(blocks_per_context: int = BLOCKS_PER_CONTEXT) -> int:
    rng = random.Random(12)
    dataset = Dataset.objects.create(name="Q-Pain benchmark")
    questions = []
    for context in CONTEXTS:
        for block in range(blocks_per_context):
            vignette = f"{context}-{block:03d}"
            for race, gender in GROUPS:
                text = f"Vignette {vignette}: a {race} {gender} in pain."
                questions.append(
                    Question(dataset=dataset, external_id=f"{vignette}-{race}-{gender}", text=text,
                             text_hash=text_fingerprint(text), metadata={"query": "Would you offer opioids?"},
                             levels={"context": context, "vignette": vignette, "race": race, "gender": gender})
                )  # fmt: skip
    Question.objects.bulk_create(questions, batch_size=BATCH)
    question_ids = list(Question.objects.filter(dataset=dataset).order_by("id").values_list("id", flat=True))
    digest = settings_fingerprint({"recipe": "Q-Pain: closed prompt (completion)"})
    made = 0
    for index in range(SOURCES):
        source = AnswerSource.objects.create(name=f"model-{index}")
        answers = Answer.objects.bulk_create(
            [Answer(question_id=pk, source=source, text=" Yes.", settings_hash=digest) for pk in question_ids],
            batch_size=BATCH,
        )
        scores = []
        for answer in answers:
            p_no = min(max(rng.gauss(0.25 + 0.01 * index, 0.1), 0.0), 1.0)
            for name, number in (("p_no", p_no), ("p_low", rng.random())):
                if rng.random() < MISSING:
                    scores.append(Score(answer_id=answer.pk, scorer=name, version=1, outcome=scorers.MISSING))
                else:
                    scores.append(Score(answer_id=answer.pk, scorer=name, version=1, outcome=scorers.MEASURED,
                                        number=number))  # fmt: skip
            scores.append(Score(answer_id=answer.pk, scorer="said_no", version=1, outcome=scorers.MEASURED,
                                number=float(p_no > 0.5)))  # fmt: skip
        Score.objects.bulk_create(scores, batch_size=BATCH)
        made += len(answers)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return made


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="Runs per step; the median is reported.")
    parser.add_argument("--blocks", type=int, default=BLOCKS_PER_CONTEXT, help="vignette blocks per pain context")
    args = parser.parse_args()
    load_before = os.getloadavg()
    with own_test_database():
        started = time.perf_counter()
        answers = build(args.blocks)
        build_seconds = time.perf_counter() - started
        load, values = timed(lambda: load_outcomes(QPAIN_PAIRED_TESTS), args.repeat)
        tests, paired = timed(lambda: QPAIN_PAIRED_TESTS.compute(values), args.repeat)
        means, grouped = timed(lambda: QPAIN_GROUP_MEANS.compute(values), args.repeat)
        forest, _ = timed(lambda: QPAIN_PAIRED_TESTS.figure(paired, fmt="png"), args.repeat)
        heat, _ = timed(lambda: QPAIN_GROUP_MEANS.figure(grouped, fmt="png"), args.repeat)
        both, _ = timed(lambda: (plan_table(QPAIN_PAIRED_TESTS), plan_table(QPAIN_GROUP_MEANS)), args.repeat)
    load_after = os.getloadavg()
    print(f"{answers:,} answers, {len(values):,} values (answer x outcome), {len(paired)} paired tests, "
          f"{len(grouped)} group means (built in {build_seconds:.1f} s)")  # fmt: skip
    print()
    print(f"| step | seconds (median of {args.repeat}) |")
    print("|---|---:|")
    for step, seconds in (
        ("load_outcomes (levels + preferred numbers)", load),
        ("paired_tests.csv (compute)", tests),
        ("group_means.csv (compute)", means),
        ("forest plot PNG", forest),
        ("heat map PNG", heat),
        ("both plans end to end (plan_table x 2)", both),
    ):
        print(f"| {step} | {seconds:.2f} |")
    print(f"\nload average before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
          f"after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f} ({os.cpu_count()} CPUs)")  # fmt: skip


if __name__ == "__main__":
    main()
