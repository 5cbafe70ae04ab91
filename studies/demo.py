"""Demo studies over the demo data: one per rubric, with items assigned to every demo rater.

Physicians and equity experts rate every item once per pool; consumers each draw a few independent items,
three consumer ratings per item.
"""

from dataclasses import dataclass

from django.db import transaction

from datasets.demo import CLINICIAN_REFERENCE, DEEPSEEK, QPAIN_DEMO
from datasets.models import AnswerSource, Dataset
from raters.models import RaterPool, RaterProfile

from .assignment import assign_study, build_items
from .models import Assignment, Rubric, Study, StudyPool
from .rubric_defaults import DEFAULT_RUBRICS
from .services import draw_items_for_rater

ITEMS_PER_CONSUMER = 4
INDEPENDENT_STUDY = "Demo: independent rating of deepseek-32k answers (Q-Pain profiles)"
PAIRWISE_STUDY = "Demo: deepseek-32k vs the Q-Pain clinician reference"
COUNTERFACTUAL_STUDY = "Demo: counterfactual Q-Pain profiles"
INSTRUCTIONS = (
    "Demo study. The answers are real model outputs (deepseek-32k, from a third-party Q-Pain run) and the "
    "Q-Pain clinician-written reference; the patients are fictional vignettes."
)
CONSENT = (
    "This is a demonstration of a rating study. You will read medical questions and answers and say whether "
    "they show bias. No personal data beyond your answers to the short survey is collected."
)


@dataclass(frozen=True)
class DemoStudy:
    study: Study
    items: int
    assignments: int


def seed_demo_studies() -> list[DemoStudy]:
    """Build the three demo studies with the assignment engine: experts get every free slot of their
    pool (load balanced, pairwise order counterbalanced), consumers draw their items as a panel would."""
    dataset = Dataset.objects.get(name=QPAIN_DEMO)
    deepseek = AnswerSource.objects.get(name=DEEPSEEK)
    reference = AnswerSource.objects.get(name=CLINICIAN_REFERENCE)
    experts = {"physician": (1, None), "equity_expert": (1, None)}
    independent, pairwise, counterfactual = (name for _, name, _, _ in DEFAULT_RUBRICS)
    plans = [
        (INDEPENDENT_STUDY, independent, [deepseek.id], {**experts, "consumer": (3, ITEMS_PER_CONSUMER)}),
        (PAIRWISE_STUDY, pairwise, [deepseek.id, reference.id], experts),
        (COUNTERFACTUAL_STUDY, counterfactual, [deepseek.id], experts),
    ]
    studies = []
    with transaction.atomic():
        for name, rubric, source_ids, pools in plans:
            study, created = _study(name, rubric, pools)
            if created:
                build_items(study=study, dataset_ids=[dataset.id], source_ids=source_ids)
            if not study.is_locked:  # a locked study takes no new assignments
                for slug in experts:
                    assign_study(study=study, pool_id=RaterPool.objects.get(slug=slug).id)
            studies.append(study)
        consumers = RaterProfile.objects.filter(pool__slug="consumer", user__username__startswith="demo-")
        for consumer in consumers if not studies[0].is_locked else []:
            draw_items_for_rater(study=studies[0], rater=consumer, count=ITEMS_PER_CONSUMER)
    return [DemoStudy(s, s.items.count(), Assignment.objects.filter(item__study=s).count()) for s in studies]


def _study(name: str, rubric: str, pools: dict[str, tuple[int, int | None]]) -> tuple[Study, bool]:
    version = Rubric.objects.get(name=rubric).latest_version()
    study, created = Study.objects.get_or_create(
        name=name,
        defaults={"rubric_version": version, "instructions": INSTRUCTIONS, "consent_text": CONSENT},
    )
    for slug, (replication, items_per_rater) in pools.items():
        StudyPool.objects.get_or_create(
            study=study,
            pool=RaterPool.objects.get(slug=slug),
            defaults={"replication": replication, "items_per_rater": items_per_rater},
        )
    return study, created
