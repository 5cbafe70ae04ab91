"""The demo's ContextSRH (issue 21): the 187 questions imported with their 1,518 context variants (what the committed
`contextsrh.yaml` names), and a small ContextSRH study run end to end on the stand-in: 8 of the questions and their
64 context variants, answered by two stand-in sources (whose answers stray further from the answer without context
the further the group is from the one the stand-in favours: scripts/stand_in_llm.py), read by the `minilm_cosine`
scorer, and the answers to the 8 originals rated by the two demo health-equity experts (simulated ratings, one
item each left for a person to try). Nothing here is a finding: the stand-in makes up every answer.
"""

import io
from dataclasses import dataclass

from django.core.management import call_command
from django.db import transaction

from datasets.demo import STAND_IN_DETAILS
from datasets.generation import jobs
from datasets.importers.contextsrh import CONTEXTSRH_DATASET, import_contextsrh
from datasets.models import AnswerSource, Dataset, Question
from datasets.variants import contextsrh as generator
from datasets.variants.contextsrh_recipes import ensure_contextsrh_recipe
from datasets.variants.runs import run_variant_run, start_variant_run
from raters.models import RaterPool, RaterProfile

from .assignment import assign_study, items_for_answers
from .contextsrh import CORRECT_FOR, GATE, GATE_ALL, GATE_SOME, NOT_APPLICABLE
from .contextsrh_study import contextsrh_file
from .demo_medic import ANSWERERS, stand_in_up, work
from .models import Assignment, Study
from .rubrics import factor_groups
from .services import submit_rating
from .study_files import load_study_text

STUDY_NAME = "Demo: ContextSRH on the stand-in"
DEMO_QUESTIONS = "Demo: ContextSRH questions (8 of 187)"
DEMO_VARIANTS = "Demo: ContextSRH context variants"
# Two questions per attribute, and two depending on two attributes (age and sex, age and location).
DEMO_IDS = ["srh-002", "srh-004", "srh-006", "srh-009", "srh-012", "srh-021", "srh-024", "srh-030"]
POOL = "equity_expert"
RATERS = ["demo-equity-expert-1", "demo-equity-expert-2"]
# The groups each simulated rater finds the answer (which assumes no context) wrong for: the second is stricter,
# so they disagree on some groups and the agreement has something to show.
NOT_CORRECT_FOR = {
    "demo-equity-expert-1": {"10", "15", "70", "South Dakota", "male"},
    "demo-equity-expert-2": {"10", "15", "60", "70", "Idaho", "South Dakota", "male"},
}


@dataclass(frozen=True)
class ContextsrhDemo:
    study: Study
    ran: bool  # whether the stand-in answered and the study was run here


def demo_file() -> str:
    return contextsrh_file(
        name=STUDY_NAME,
        description="Demo: ContextSRH at a small size on the stand-in (studies/demo_contextsrh.py). Not real data: "
        "the stand-in makes up the answers, and the two experts' ratings are simulated.",
        originals=DEMO_QUESTIONS, variants=DEMO_VARIANTS, answerers=list(ANSWERERS),
        pools={RaterPool.objects.get(slug=POOL).name: 2},
    )  # fmt: skip


def seed_contextsrh(*, run: bool) -> ContextsrhDemo:
    """Import the questions, make the variants, the sources and the small study (a second run adds nothing) and,
    with `run` and the stand-in up, run it."""
    with transaction.atomic():
        import_contextsrh()
        ensure_contextsrh_recipe()
        originals = Dataset.objects.get(name=CONTEXTSRH_DATASET)
        _variants(originals, {})
        _variants(_demo_questions(originals), {"dataset": DEMO_VARIANTS})
        for name, model in ANSWERERS.items():
            AnswerSource.objects.get_or_create(
                name=name, defaults={**STAND_IN_DETAILS, "model_name": model, "max_tokens": 400,
                                     "description": f"Not a model: the demo's stand-in answering as {model!r}."},
            )  # fmt: skip
        study = load_study_text(demo_file()).study
    ran = run and stand_in_up()
    if ran:
        run_contextsrh(study)
    return ContextsrhDemo(study, ran)


def _variants(base: Dataset, options: dict) -> None:
    if not Dataset.objects.filter(name=generator.dataset_name(0, options)).exists():
        run_variant_run(start_variant_run(generator=generator.NAME, base_dataset=base, options=options, queue=False).pk)


def _demo_questions(originals: Dataset) -> Dataset:
    """Eight of the questions, copied (as plain questions, their metadata kept) into the demo study's own dataset."""
    dataset, _ = Dataset.objects.get_or_create(
        name=DEMO_QUESTIONS, defaults={"description": f"Eight questions of {CONTEXTSRH_DATASET}, for the demo."}
    )
    for question in originals.questions.filter(external_id__in=DEMO_IDS).order_by("external_id"):
        Question.objects.get_or_create(
            dataset=dataset, external_id=question.external_id,
            defaults={"text": question.text, "metadata": {**question.metadata, "copied_from": CONTEXTSRH_DATASET}},
        )  # fmt: skip
    return dataset


def run_contextsrh(study: Study) -> None:
    """Every stage in order: the answers of each condition to the originals and the variants, the similarity
    scores, an item per original answer (a gate attention check), the experts' assignments and their ratings."""
    definition = study.definition
    recipe = ensure_contextsrh_recipe()
    answerers = list(AnswerSource.objects.filter(name__in=[c["source"] for c in definition["conditions"]]))
    for entry in definition["questions"]:
        dataset = Dataset.objects.get(name=entry["dataset"])
        for source in answerers:
            jobs.start_job(dataset=dataset, source=source, recipe=recipe, study_id=study.pk)
    work(answerers)
    call_command("score_answers", "--scorer", "minilm_cosine", "--study", str(study.pk), stdout=io.StringIO())
    items_for_answers(study=study, base_only=True, expect={GATE: GATE_ALL})
    assign_study(study=study, pool_id=RaterPool.objects.get(slug=POOL).pk)
    simulate_ratings(study)


def simulate_ratings(study: Study) -> int:
    """The two experts' ratings of every item given to them but the last (left for a person to try)."""
    made = 0
    for username in RATERS:
        rater = RaterProfile.objects.filter(user__username=username).first()
        if rater is None:
            continue
        assignments = list(
            Assignment.objects.filter(item__study=study, rater=rater, status=Assignment.Status.ASSIGNED)
            .select_related("item__answer__question")
            .order_by("position", "pk")
        )
        for index, assignment in enumerate(assignments[:-1]):
            submit_rating(assignment=assignment, values=_values(username, assignment, index), active_seconds=40)
            made += 1
    return made


def _values(username: str, assignment: Assignment, index: int) -> dict:
    groups = [key for key, _ in factor_groups(assignment.item.answer.question)]
    if username == RATERS[1] and index == 2:
        return {GATE: GATE_ALL, CORRECT_FOR: [NOT_APPLICABLE]}  # the model "refused", as this rater read it
    correct = [group for group in groups if group not in NOT_CORRECT_FOR[username]] or groups[:1]
    gate = GATE_SOME if username == RATERS[0] and index == 1 else GATE_ALL  # one gate failed: dropped, counted
    return {GATE: gate, CORRECT_FOR: correct}
