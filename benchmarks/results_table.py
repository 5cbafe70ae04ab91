"""Benchmark one study's results table (analysis/results.py): 10,000 answers x 2 scorers + 3,000 ratings.

Builds, in a throw-away PostgreSQL database, an independent-rubric study whose 10,000 answers (to variant questions
with factor levels, half of them under a condition) are linked to it and scored by two scorers (`letter` v2 and
`p_no` v1: 20,000 scores), 1,000 of them rated by 3 physicians each (3,000 ratings, one row per stored field:
bias presence, the dimensions chosen, two texts). Then times, in this process:

- `results_table` (five queries; the rows flattened, merged and sorted in pandas),
- `write_results` (results.csv, streamed),
- `release_frames` and `plan_outcomes` (what today's tables and plans read, from the table), beside today's
  paths to the same frames (`loading.load_frames`: the ratings export read back; `plan_loading.load_outcomes`),
- what the analysis reads now: `studies_frames` (the table's human rows only) and `results_table` of the plan's
  scorers' rows only + `plan_outcomes`,

and prints the rows, the seconds (median of --repeat) and the process's peak resident memory (VmHWM, reset just
before the first step; the resident size then is printed beside it), with the machine's load average.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/test .venv/bin/python benchmarks/results_table.py \\
        [--answers 10000] [--ratings 3000] [--repeat 3]
"""

import argparse
import os
import random
import tempfile
import time
from pathlib import Path

from _django import own_test_database, timed
from _memory import status_mib
from django.contrib.auth import get_user_model  # noqa: E402
from django.db import connection  # noqa: E402

from analysis.loading import load_frames  # noqa: E402
from analysis.plan_loading import load_outcomes  # noqa: E402
from analysis.plans import BIASMEDQA_ACCURACY  # noqa: E402
from analysis.results import SCORER, results_table, studies_frames, write_results  # noqa: E402
from analysis.results_frames import plan_outcomes, release_frames  # noqa: E402
from datasets.models import Answer, AnswerSource, Dataset, Question, settings_fingerprint, text_fingerprint  # noqa: E402
from raters.models import RaterPool, RaterProfile  # noqa: E402
from scoring.models import Score  # noqa: E402
from studies.models import Assignment, Rating, Rubric, Study, StudyAnswer, StudyItem  # noqa: E402

RATERS = 3
BATCH = 5000
BIASES = ("none", "recency", "frequency", "cultural", "status_quo", "false_consensus", "confirmation", "self_diagnosis")
DIMENSIONS = ("failure_to_challenge", "other_bias", "inaccuracy_for_some_axes")


def build(answers: int, ratings: int) -> Study:
    rng = random.Random(18)
    version = Rubric.objects.get(kind="independent", name__startswith="EquityMedQA").latest_version()
    study = Study.objects.create(name="Results benchmark", rubric_version=version)
    dataset = Dataset.objects.create(name="Results benchmark")
    questions = []
    for n in range(answers):
        text = f"Benchmark question {n}: which option?"
        bias = BIASES[n % len(BIASES)]
        levels = {} if bias == "none" else {"bias": bias}
        questions.append(Question(dataset=dataset, external_id=f"q{n}", text=text, text_hash=text_fingerprint(text),
                                  metadata={"answer_idx": "A"}, levels=levels))  # fmt: skip
    Question.objects.bulk_create(questions, batch_size=BATCH)
    source = AnswerSource.objects.create(name="bench model", kind=AnswerSource.Kind.MODEL)
    made = []
    for n, question in enumerate(questions):
        parameters = {"condition": {"mitigation": "education"}} if n % 2 else {}
        made.append(Answer(question=question, source=source, text="A", parameters=parameters,
                           settings_hash=settings_fingerprint(parameters)))  # fmt: skip
    Answer.objects.bulk_create(made, batch_size=BATCH)
    StudyAnswer.objects.bulk_create(
        [StudyAnswer(study=study, answer=answer, via=StudyAnswer.Via.IMPORTED) for answer in made], batch_size=BATCH
    )
    scores = []
    for answer in made:
        scores.append(Score(answer=answer, scorer="letter", version=2, outcome=rng.choice(["correct", "wrong"])))
        scores.append(Score(answer=answer, scorer="p_no", version=1, outcome="measured", number=rng.random()))
    Score.objects.bulk_create(scores, batch_size=BATCH)
    pool = RaterPool.objects.get(slug="physician")
    raters = [
        RaterProfile.objects.create(user=get_user_model().objects.create(username=f"bench-{i}"), pool=pool)
        for i in range(RATERS)
    ]
    rated_answers = made[: ratings // RATERS]
    items = StudyItem.objects.bulk_create([StudyItem(study=study, answer=answer) for answer in rated_answers])
    assignments = Assignment.objects.bulk_create(
        [Assignment(item=item, rater=rater, status=Assignment.Status.SUBMITTED) for item in items for rater in raters],
        batch_size=BATCH,
    )
    rated = []
    for assignment in assignments:
        bias = rng.choice(["no_bias", "minor_bias", "severe_bias"])
        chosen = [] if bias == "no_bias" else rng.sample(DIMENSIONS, rng.randint(1, 2))
        values = {"bias_presence": bias, "dimensions": chosen, "other_text": "", "comment": ""}
        rated.append(Rating(assignment=assignment, rubric_version=version, values=values, active_seconds=30,
                            wall_seconds=40))  # fmt: skip
    Rating.objects.bulk_create(rated, batch_size=BATCH)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return study


def reset_peak() -> None:
    """Start the high-water mark from the current resident size (Linux: 5 > /proc/self/clear_refs)."""
    with open("/proc/self/clear_refs", "w") as clear_refs:
        clear_refs.write("5")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--answers", type=int, default=10_000, help="answers linked to the study, 2 scores each")
    parser.add_argument("--ratings", type=int, default=3_000, help=f"ratings ({RATERS} per rated answer)")
    parser.add_argument("--repeat", type=int, default=3, help="Runs per step; the median is reported.")
    args = parser.parse_args()
    load_before = os.getloadavg()
    with own_test_database():
        started = time.perf_counter()
        study = build(args.answers, args.ratings)
        build_seconds = time.perf_counter() - started
        before = status_mib("VmRSS")
        reset_peak()
        load, table = timed(lambda: results_table(study), args.repeat)
        out = Path(tempfile.mkdtemp(prefix="equityrate-results-"))
        write, path = timed(lambda: write_results(table, out), args.repeat)
        frames, rebuilt = timed(lambda: release_frames(table), args.repeat)
        plans, outcomes = timed(lambda: plan_outcomes(table, BIASMEDQA_ACCURACY), args.repeat)
        peak = status_mib("VmHWM")
        human_only, _ = timed(lambda: studies_frames(study), args.repeat)
        plan = BIASMEDQA_ACCURACY
        scorer_rows, filtered = timed(lambda: results_table(study, kinds=[SCORER], scorers=plan.scorers), args.repeat)
        filtered_plans, _ = timed(lambda: plan_outcomes(filtered, plan), args.repeat)
        today_frames, _ = timed(lambda: load_frames(study), args.repeat)
        today_plans, _ = timed(lambda: load_outcomes(BIASMEDQA_ACCURACY), args.repeat)
    load_after = os.getloadavg()
    kinds = table["kind"].astype(str).value_counts()
    human, scorer = kinds.get("human", 0), kinds.get("scorer", 0)
    print(f"{args.answers:,} answers x 2 scorers + {len(rebuilt['independent']):,} ratings: {len(table):,} rows "
          f"({human:,} human, {scorer:,} scorer; built in {build_seconds:.1f} s)")  # fmt: skip
    print()
    print(f"| step | rows | seconds (median of {args.repeat}) |")
    print("|---|---:|---:|")
    print(f"| results_table | {len(table):,} | {load:.2f} |")
    print(f"| write_results ({path.stat().st_size / 2**20:.1f} MiB of CSV) | {len(table):,} | {write:.2f} |")
    print(f"| release_frames (the four tables' input) | {sum(len(f) for f in rebuilt.values()):,} | {frames:.2f} |")
    print(f"| plan_outcomes (biasmedqa-accuracy) | {len(outcomes):,} | {plans:.2f} |")
    print(f"| studies_frames (human rows only) | {sum(len(f) for f in rebuilt.values()):,} | {human_only:.2f} |")
    print(f"| results_table of the plan's scorers | {len(filtered):,} | {scorer_rows:.2f} |")
    print(f"| plan_outcomes of those rows | {len(outcomes):,} | {filtered_plans:.2f} |")
    print(f"| today: loading.load_frames | {sum(len(f) for f in rebuilt.values()):,} | {today_frames:.2f} |")
    print(f"| today: plan_loading.load_outcomes | {len(outcomes):,} | {today_plans:.2f} |")
    print(f"\nPeak resident memory: {peak:.0f} MiB ({before:.0f} MiB before the first step)")
    print(f"load average before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
          f"after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f} ({os.cpu_count()} CPUs)")  # fmt: skip


if __name__ == "__main__":
    main()
