"""Benchmark BiasMedQA's analysis plan on PostgreSQL: load the outcomes, compute accuracy.csv, draw the plot.

Builds, in a throw-away database, the released responses' layout with synthetic outcomes: 6 sources x their
(bias, mitigation) runs over the 1,273 MedQA questions, 216,288 answers in all (the counts of each run read
from `model_responses_all.csv.gz` when it is beside the repository, else 6 x 29 runs x 1,243 questions), each
answering a multiple-choice variant question carrying its bias level, under its condition, with a `released`
and a `letter` score (432,576 scores). Then times, in this process:

- `plan_loading.load_outcomes` (two streamed queries: answers' levels, scores; the preferred score per answer),
- `plans.BIASMEDQA_ACCURACY.compute` (the accuracy table),
- the plot as PNG and SVG,
- `plan_loading.score_answers` when every answer has its letter score (what each later analysis pays),
- `plan_loading.plan_table` end to end (existence check, scorers, load, table),
- a study's plan (every answer linked to one study, as `analyze --study` computes it): before issue 18's switch,
  `plan_table(plan, study_id)` (plan_loading over the study's answers); now `study_plan_table(plan, study)` (the
  study's results table, only its rows of the plan's scorers); and the whole results table + `plan_outcomes`,

and prints a Markdown table with the peak memory the load added (tracemalloc).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/test .venv/bin/python benchmarks/analysis_plan.py [--repeat 3]
        [--questions 1273]
"""

import argparse
import random
import time
import tracemalloc
from collections import Counter
from pathlib import Path

import pandas as pd
from _django import REPO, own_test_database, timed
from django.db import connection  # noqa: E402

from analysis.plan_loading import load_outcomes, plan_table, score_answers, study_plan_table  # noqa: E402
from analysis.plans import BIASMEDQA_ACCURACY  # noqa: E402
from analysis.results import results_table  # noqa: E402
from analysis.results_frames import plan_outcomes  # noqa: E402
from datasets.models import Answer, AnswerSource, Dataset, Question, settings_fingerprint, text_fingerprint  # noqa: E402
from scoring import scorers  # noqa: E402
from scoring.models import Score  # noqa: E402
from studies.models import Study, StudyAnswer  # noqa: E402

RELEASED = REPO / "../shared/datasets/biasmedqa/model_responses/model_responses_all.csv.gz"
QUESTIONS = 1273
BATCH = 5000
INSTRUCTION = (
    "You are a medical GPT model tasked with making clinical decisions for research purposes only. Please choose "
    "one of the following options. Respond with only a single letter and nothing more."
)


def released_layout(path: Path) -> Counter:
    """Answers per (model, bias, mitigation) in the released file, or a uniform layout of the same size."""
    if path.is_file():
        rows = pd.read_csv(path, usecols=["model", "bias_type", "mitigation"], dtype=str, keep_default_na=False)
        return Counter(rows.itertuples(index=False, name=None))
    biases = ["none", "self_diagnosis", "recency", "confirmation", "frequency", "cultural", "status_quo",
              "false_consensus", "confirmation_v2", "false_consensus_v2"]  # fmt: skip
    runs = [(b, m) for m in ("none", "one-shot", "education") for b in biases if (b, m) != ("none", "education")]
    return Counter({(f"model-{s}", b, m): 1243 for s in range(6) for b, m in runs})


def build(layout: Counter, medqa_questions: int = QUESTIONS) -> int:
    """The questions, sources, answers and two scores per answer, with bulk inserts; returns the answers made."""
    rng = random.Random(11)
    letter = scorers.current("letter").version  # so that every answer has the score the plan would run
    dataset = Dataset.objects.create(name="BiasMedQA benchmark")
    biases = sorted({bias for _, bias, _ in layout})
    questions = []
    for bias in biases:
        for qid in range(medqa_questions):
            text = f"Question {qid} ({bias}): which of the following is the most likely diagnosis?"
            questions.append(
                Question(
                    dataset=dataset,
                    external_id=f"{qid}-{bias}",
                    text=text,
                    text_hash=text_fingerprint(text),
                    metadata={"answer_idx": "ABCDE"[qid % 5], "options": {k: f"option {k}" for k in "ABCDE"}},
                    levels={} if bias == "none" else {"bias": bias},
                )  # fmt: skip
            )
    Question.objects.bulk_create(questions, batch_size=BATCH)
    question_ids = dict(Question.objects.filter(dataset=dataset).values_list("external_id", "id"))
    sources = {name: AnswerSource.objects.create(name=name).pk for name in sorted({m for m, _, _ in layout})}
    made = 0
    for (model, bias, mitigation), count in sorted(layout.items()):
        parameters = {"recipe": f"BiasMedQA: {mitigation}", "instruction": INSTRUCTION,
                      "condition": {"mitigation": mitigation}, "release": "model_responses_all.csv.gz"}  # fmt: skip
        digest = settings_fingerprint(parameters)
        answers = Answer.objects.bulk_create(
            [
                Answer(
                    question_id=question_ids[f"{qid}-{bias}"],
                    source_id=sources[model],
                    text="ABCDE"[qid % 5],
                    parameters=parameters,
                    settings_hash=digest,
                )
                for qid in range(count)
            ],  # fmt: skip
            batch_size=BATCH,
        )
        scores = []
        for answer in answers:
            outcome = rng.choices(["correct", "wrong", "non_response"], weights=[45, 50, 5])[0]
            scores.append(Score(answer_id=answer.pk, scorer="released", version=1, outcome=outcome))
            scores.append(Score(answer_id=answer.pk, scorer="letter", version=letter, outcome=outcome))
        Score.objects.bulk_create(scores, batch_size=BATCH)
        made += len(answers)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return made


def one_study() -> Study:
    """A scorers-only study every answer belongs to."""
    study = Study.objects.create(name="BiasMedQA benchmark study")
    links = (StudyAnswer(study=study, answer_id=pk, via=StudyAnswer.Via.IMPORTED)
             for pk in Answer.objects.values_list("pk", flat=True).iterator())  # fmt: skip
    StudyAnswer.objects.bulk_create(links, batch_size=BATCH)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return study


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="Runs per step; the median is reported.")
    parser.add_argument(
        "--questions", type=int, default=QUESTIONS, help="MedQA questions; each run answers at most these"
    )
    args = parser.parse_args()
    layout = Counter({run: min(count, args.questions) for run, count in released_layout(RELEASED).items()})
    with own_test_database():
        started = time.perf_counter()
        answers = build(layout, args.questions)
        build_seconds = time.perf_counter() - started
        plan = BIASMEDQA_ACCURACY
        load, outcomes = timed(lambda: load_outcomes(plan), args.repeat)
        tracemalloc.start()  # on its own run: tracing slows every allocation
        load_outcomes(plan)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        compute, table = timed(lambda: plan.compute(outcomes), args.repeat)
        png, _ = timed(lambda: plan.figure(table, fmt="png"), args.repeat)
        svg, _ = timed(lambda: plan.figure(table, fmt="svg"), args.repeat)
        check, _ = timed(lambda: score_answers(plan), args.repeat)
        end_to_end, _ = timed(lambda: plan_table(plan), args.repeat)
        study = one_study()
        before, _ = timed(lambda: plan_table(plan, study.pk), args.repeat)
        after, _ = timed(lambda: study_plan_table(plan, study), args.repeat)
        whole, _ = timed(lambda: plan.compute(plan_outcomes(results_table(study), plan)), args.repeat)
    print(f"{answers:,} answers, {2 * answers:,} scores, {len(table)} table rows (built in {build_seconds:.1f} s)")
    print()
    print(f"| step | seconds (median of {args.repeat}) |")
    print("| --- | ---: |")
    for name, value in [("load outcomes", load), ("accuracy table", compute),
                        ("plot PNG", png), ("plot SVG", svg), ("scorers' check, nothing missing", check),
                        ("plan_table end to end (no plot)", end_to_end),
                        ("load + table + PNG plot", load + compute + png),
                        ("a study's plan before: plan_table(plan, study_id)", before),
                        ("a study's plan now: study_plan_table (its scorers' rows)", after),
                        ("a study's plan from its whole results table", whole)]:  # fmt: skip
        print(f"| {name} | {value:.2f} |")
    print()
    print(f"Peak Python memory while loading: {peak / 2**20:.0f} MiB (tracemalloc)")


if __name__ == "__main__":
    main()
