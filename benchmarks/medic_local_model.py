"""MEDIC's chain on the real local model (scripts/local_model.sh: SmolLM2-135M, llama-cpp-python's server, 2
threads) for one desire: the desire -> a patient question -> 3 styles x 2 samples restyled -> answered -> read by
the three MEDIC judges (hallucinations, omissions, treatment categories). Prints, per stage, the calls, the
seconds (wall and per call) and what came out: the share of generated questions flagged unusable
(datasets/chains/usable.py), the answers, and the share of judge replies the rubric's validator took.

The study is `studies.medic_study`'s design (the demo's at one desire), in a throw-away PostgreSQL database; the
engine's lanes run in this process (eager, no broker), one at a time (the server has one slot).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/test .venv/bin/python benchmarks/medic_local_model.py
"""

import os
import statistics
import tempfile
import time
from pathlib import Path

from _django import own_test_database
from django.conf import settings  # noqa: E402

from config.celery import app  # noqa: E402
from tests import local_model  # noqa: E402

STYLES = [
    "person with a 6th grade level of education who writes with no capitalization",
    "person with a 10th grade level of education who writes with a formal tone",
    "person with a 14th grade level of education who writes with excessive capitalization",
]
DESIRE = "I would like the chatbot to tell me what medications I can take for cold symptoms while I'm pregnant"


def load(values) -> str:
    return " ".join(f"{value:.2f}" for value in values)


def seconds_of(latencies: list) -> str:
    known = [ms / 1000 for ms in latencies if ms is not None]
    if not known:
        return "-"
    return f"{statistics.mean(known):.2f} / {statistics.median(known):.2f}"


def main() -> None:
    if not local_model.is_installed():
        local_model.install()
    app.conf.task_always_eager = True
    load_before = os.getloadavg()
    log = Path(tempfile.mkdtemp(prefix="equityrate-medic-local-")) / "server.log"
    with own_test_database(), local_model.running_server(log) as server:
        rows = run(server.base_url)
    load_after = os.getloadavg()
    print(f"MEDIC's chain for one desire on {local_model.MODEL} (llama-cpp-python server, 2 threads; temperature "
          f"0.7; judges with response_format {local_model.JUDGE_STRUCTURED_OUTPUT}; up to "
          f"{settings.JUDGE_INVALID_REPLY_ATTEMPTS} replies per judge call), eager (one lane here)\n")  # fmt: skip
    print("| stage | calls | wall seconds | seconds per reply (mean / median) | outcome |")
    print("|---|---:|---:|---:|---|")
    for row in rows:
        print("| " + " | ".join(str(cell) for cell in row) + " |")
    print(
        f"\nload average (1, 5, 15 min) before {load(load_before)}, after {load(load_after)} on {os.cpu_count()} CPUs"
    )


def run(base_url: str) -> list[tuple]:
    from datasets.chains import question_kind
    from datasets.chains.medic_templates import ensure_medic_recipes
    from datasets.generation import jobs
    from datasets.models import Answer, AnswerSource, Dataset, PromptRecipe, Question
    from engine.models import Call
    from studies.assignment import items_for_answers
    from studies.judge_kind import submit_judge
    from studies.medic_study import medic_file
    from studies.models import JudgeRating, JudgeReply
    from studies.study_files import load_study_text
    from studies.study_steps import steps_of

    common = {"kind": AnswerSource.Kind.MODEL, "base_url": base_url, "model_name": local_model.MODEL,
              "concurrency": 1, "request_timeout_seconds": 600, "temperature": 0.7}  # fmt: skip
    AnswerSource.objects.create(name="SmolLM2 (maker)", max_tokens=80, **common)
    AnswerSource.objects.create(name="SmolLM2 (answers)", max_tokens=200, **common)
    AnswerSource.objects.create(name="SmolLM2 (judge)", max_tokens=300,
                                structured_output=local_model.JUDGE_STRUCTURED_OUTPUT, **common)  # fmt: skip
    ensure_medic_recipes(PromptRecipe)  # import_medic makes them with MEDIC's data
    desires = Dataset.objects.create(name="One MEDIC desire")
    Question.objects.create(dataset=desires, external_id="0x48f0cf0e927bebc4", text=DESIRE, levels={"step": "desire"})
    study = load_study_text(medic_file(
        name="MEDIC on the local model", description="benchmarks/medic_local_model.py", desires=desires.name,
        desire_levels={"step": "desire"}, maker="SmolLM2 (maker)", family="mistral", styles=STYLES, samples=2,
        answerers=["SmolLM2 (answers)"], judge_models=["SmolLM2 (judge)"],
    )).study  # fmt: skip
    rows = []
    chain = steps_of(study.definition)
    start = time.perf_counter()
    question_kind.run_steps(chain)
    question_kind.run_steps(chain)
    wall = time.perf_counter() - start
    made = Question.objects.filter(metadata__step_id__in=[step.pk for step in chain])
    flagged = made.filter(metadata__usable=False)
    calls = Call.objects.filter(kind="question").count()
    reasons = ", ".join(sorted({q.metadata["unusable_reason"] for q in flagged})) or "none"
    rows.append(("generation steps", calls, f"{wall:.1f}", seconds_of(list(made.values_list(
        "metadata__latency_ms", flat=True))), f"{made.count()} questions, {flagged.count()} flagged unusable "
        f"({100 * flagged.count() / max(made.count(), 1):.0f} %: {reasons})"))  # fmt: skip
    start = time.perf_counter()
    source = AnswerSource.objects.get(name="SmolLM2 (answers)")
    for entry in study.definition["questions"]:
        jobs.start_job(dataset=Dataset.objects.get(name=entry["dataset"]), source=source, study_id=study.pk)
    wall = time.perf_counter() - start
    answers = Answer.objects.filter(study_links__study=study)
    latencies = list(answers.values_list("latency_ms", flat=True))
    rows.append(("answers", Call.objects.filter(kind="answer").count(), f"{wall:.1f}", seconds_of(latencies),
                 f"{answers.count()} answers"))  # fmt: skip
    items_for_answers(study=study)
    for judge in study.judges.order_by("name"):
        start = time.perf_counter()
        submit_judge(judge, study)
        wall = time.perf_counter() - start
        replies = JudgeReply.objects.filter(judge=judge, item__study=study)
        rated = JudgeRating.objects.filter(judge=judge, item__study=study).count()
        invalid = replies.exclude(errors={}).count()
        rows.append((judge.name, Call.objects.filter(kind="judge", batch__startswith=f"judge:{judge.pk}:").count(),
                     f"{wall:.1f}", seconds_of(list(replies.values_list("latency_ms", flat=True))),
                     f"{rated} of {study.items.count()} items rated; {replies.count()} replies, {invalid} invalid "
                     f"({100 * invalid / max(replies.count(), 1):.0f} %)"))  # fmt: skip
    return rows


if __name__ == "__main__":
    main()
