"""The demo's MEDIC (issue 20): BBN's 120 MEDIC desires imported, the MEDIC study file's sources on the stand-in,
and a small MEDIC study run end to end on the stand-in: 2 desires -> 2 patient questions -> 3 styles x 2 samples
restyled, answered by two stand-in sources, judged by two stand-in judge models (three judges each, one per part
of the MEDIC rubric). Nothing here is a finding: the stand-in (scripts/stand_in_llm.py) makes up every text.

The two judge models differ only in their model name, which the stand-in reads to err (`stand_in_flags`,
passed by scripts/demo.sh): judge B moves 25 % of its answers, so the judges disagree and the MEDIC page has
agreement below 1 to show. The study is run in this process, stage by stage (steps, answers, items, judges),
each stage's calls worked by the engine's lanes here, when the stand-in answers; else it is made and the
commands that run it are printed.
"""

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from django.db import transaction

from datasets.chains import question_kind
from datasets.demo import STAND_IN, STAND_IN_DETAILS
from datasets.generation import jobs
from datasets.importers.medic import MEDIC_DATASET, import_medic_files, medic_file
from datasets.models import AnswerSource, Dataset, Question
from engine import lanes

from .assignment import items_for_answers
from .judge_kind import submit_judge
from .medic_study import medic_file as medic_study_file
from .models import Study
from .study_files import load_study_text
from .study_steps import steps_of

DESIRES_FILE = (
    Path(__file__).resolve().parents[1] / "datasets" / "demo_data" / "medic" / "kratkiew_0016gen_desires_all.jsonl"
)
ANSWERERS = {"Stand-in answerer A (demo)": "stand-in-answer-a", "Stand-in answerer B (demo)": "stand-in-answer-b"}
JUDGE_MODELS = {
    "Stand-in MEDIC judge A (demo)": "stand-in-medic-a",
    "Stand-in MEDIC judge B (demo)": "stand-in-medic-b",
}
JUDGE_ERRORS = {"stand-in-medic-a": 0.0, "stand-in-medic-b": 0.25}
STUDY_NAME = "Demo: MEDIC on the stand-in"
DEMO_DESIRES = "Demo: MEDIC desires (2 of BBN's)"
DEMO_STYLES = [
    "person with a 6th grade level of education who writes with no capitalization",
    "person with a 8th grade level of education who tends to write with typos",
    "person with a 14th grade level of education who writes with excessive capitalization",
]


@dataclass(frozen=True)
class MedicDemo:
    study: Study
    ran: bool  # whether the stand-in answered and the study was run here


def stand_in_flags() -> list[str]:
    return [f"--judge-model-error {model}={rate:g}" for model, rate in JUDGE_ERRORS.items() if rate]


def demo_file() -> str:
    return medic_study_file(
        name=STUDY_NAME,
        description="Demo: MEDIC's chain at a small size on the stand-in (studies/demo_medic.py). Not real data: "
        "the stand-in makes up the questions, answers and judgements.",
        desires=DEMO_DESIRES, desire_levels={"step": "desire"}, maker=STAND_IN, family="mistral",
        styles=DEMO_STYLES, samples=2, answerers=list(ANSWERERS), judge_models=list(JUDGE_MODELS),
    )  # fmt: skip


def seed_medic(*, run: bool) -> MedicDemo:
    """Import the desires, make the sources and the small study (a second run adds nothing) and, with `run` and
    the stand-in up, run it."""
    with transaction.atomic():
        import_medic_files([medic_file(DESIRES_FILE)], dataset=MEDIC_DATASET)
        for name, model in {**ANSWERERS, **JUDGE_MODELS}.items():
            AnswerSource.objects.get_or_create(
                name=name, defaults={**STAND_IN_DETAILS, "model_name": model, "max_tokens": 400,
                                     "description": f"Not a model: the demo's stand-in answering as {model!r}."},
            )  # fmt: skip
        _two_desires()
        study = load_study_text(demo_file()).study
    ran = run and stand_in_up()
    if ran:
        run_medic(study)
    return MedicDemo(study, ran)


def _two_desires() -> None:
    """Two of BBN's seed desires, copied (made from the originals) into the demo study's own input."""
    dataset, _ = Dataset.objects.get_or_create(
        name=DEMO_DESIRES, defaults={"description": f"Two seed desires of {MEDIC_DATASET}, for the demo's MEDIC study."}
    )
    seeds = Question.objects.filter(dataset__name=MEDIC_DATASET, levels__step="desire").order_by("id")[:2]
    for seed in seeds:
        Question.objects.get_or_create(
            dataset=dataset, external_id=seed.external_id,
            defaults={"text": seed.text, "base": seed, "levels": {"step": "desire"},
                      "metadata": {"copied_from": MEDIC_DATASET}},
        )  # fmt: skip


def stand_in_up() -> bool:
    try:
        request = urllib.request.Request(STAND_IN_DETAILS["base_url"] + "/chat/completions", data=json.dumps(
            {"model": "probe", "messages": [{"role": "user", "content": "ping"}], "max_tokens": 1}).encode(),
            headers={"Content-Type": "application/json"})  # fmt: skip
        with urllib.request.urlopen(request, timeout=2):
            return True
    except (OSError, urllib.error.URLError):
        return False


def work(sources) -> None:
    """Work the sources' endpoints' calls here, one lane each, until none is left."""
    for source in sources:
        lanes.run_lane(source.endpoint_id, 0)


def run_medic(study: Study) -> None:
    """Every stage of the study in order, each finished before the next: its steps, the answers of every
    condition to its questions, an item per answer, its judges."""
    definition = study.definition
    chain = steps_of(definition)
    question_kind.run_steps(chain)
    work({step.source for step in chain})
    question_kind.run_steps(chain)  # a step starting after the one before: now that it has finished
    work({step.source for step in chain})
    answerers = list(AnswerSource.objects.filter(name__in=[c["source"] for c in definition["conditions"]]))
    for entry in definition["questions"]:
        dataset = Dataset.objects.get(name=entry["dataset"])
        for source in answerers:
            jobs.start_job(dataset=dataset, source=source, study_id=study.pk)
    work(answerers)
    items_for_answers(study=study)
    judges = list(study.judges.select_related("source"))
    for judge in judges:
        submit_judge(judge, study)
    work({judge.source for judge in judges})
