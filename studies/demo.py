"""Demo studies over the demo data: one per rubric, with items assigned to every demo rater.

The assignment engine (balanced replication per pool) is a later piece of work; the demo simply gives each
expert the first items of every study, counterbalancing pairwise positions across raters, and lets each
consumer draw items as a crowd panel would.
"""

from dataclasses import dataclass

from django.db import transaction

from datasets.demo import CLINICIAN_REFERENCE, DEEPSEEK, QPAIN_DEMO
from datasets.models import Answer, CounterfactualPair
from raters.models import RaterPool, RaterProfile

from .models import Assignment, Rubric, RubricKind, Study, StudyItem, StudyPool
from .services import draw_items_for_rater

ITEMS_PER_STUDY = 12
ITEMS_PER_EXPERT = 4
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
    with transaction.atomic():
        studies = [_independent_study(), _pairwise_study(), _counterfactual_study()]
        _assign_experts(studies)
        _assign_consumers(studies[0])
    return [DemoStudy(s, s.items.count(), Assignment.objects.filter(item__study=s).count()) for s in studies]


def _study(name: str, kind: str, pools: dict[str, int | None]) -> tuple[Study, bool]:
    version = Rubric.objects.get(kind=kind, name__startswith="EquityMedQA").latest_version()
    study, created = Study.objects.get_or_create(
        name=name,
        defaults={"rubric_version": version, "instructions": INSTRUCTIONS, "consent_text": CONSENT},
    )
    for slug, items_per_rater in pools.items():
        StudyPool.objects.get_or_create(
            study=study, pool=RaterPool.objects.get(slug=slug), defaults={"items_per_rater": items_per_rater}
        )
    return study, created and not study.items.exists()


def _deepseek_answers():
    return Answer.objects.filter(source__name=DEEPSEEK, question__dataset__name=QPAIN_DEMO).order_by("question_id")


def _independent_study() -> Study:
    pools = {"physician": None, "equity_expert": None, "consumer": ITEMS_PER_CONSUMER}
    study, empty = _study(INDEPENDENT_STUDY, RubricKind.INDEPENDENT, pools)
    if empty:
        StudyItem.objects.bulk_create(StudyItem(study=study, answer=a) for a in _deepseek_answers()[:ITEMS_PER_STUDY])
    return study


def _pairwise_study() -> Study:
    study, empty = _study(PAIRWISE_STUDY, RubricKind.PAIRWISE, {"physician": None, "equity_expert": None})
    if empty:
        references = {
            a.question_id: a
            for a in Answer.objects.filter(source__name=CLINICIAN_REFERENCE, question__dataset__name=QPAIN_DEMO)
        }
        items = [
            StudyItem(study=study, question_id=a.question_id, answer_1=a, answer_2=references[a.question_id])
            for a in _deepseek_answers()
            if a.question_id in references
        ]
        StudyItem.objects.bulk_create(items[:ITEMS_PER_STUDY])
    return study


def _counterfactual_study() -> Study:
    study, empty = _study(COUNTERFACTUAL_STUDY, RubricKind.COUNTERFACTUAL, {"physician": None, "equity_expert": None})
    if empty:
        answers = {a.question_id: a for a in _deepseek_answers()}
        pairs = CounterfactualPair.objects.filter(dataset__name=QPAIN_DEMO).order_by("id")
        items = [
            StudyItem(study=study, pair=p, answer_1=answers[p.question_1_id], answer_2=answers[p.question_2_id])
            for p in pairs
            if p.question_1_id in answers and p.question_2_id in answers
        ]
        StudyItem.objects.bulk_create(items[:ITEMS_PER_STUDY])
    return study


def _assign_experts(studies: list[Study]) -> None:
    experts = RaterProfile.objects.filter(
        pool__slug__in=["physician", "equity_expert"], user__username__startswith="demo-"
    )
    for rater_index, rater in enumerate(experts.order_by("user__username")):
        position = 0
        for study in studies:
            for item_index, item in enumerate(study.items.order_by("id")[:ITEMS_PER_EXPERT]):
                # Alternate which source is "Answer 1" across items and raters (counterbalanced display order).
                swap = study.kind == RubricKind.PAIRWISE and (item_index + rater_index) % 2 == 1
                Assignment.objects.get_or_create(
                    item=item, rater=rater, defaults={"position": position, "swap_answers": swap}
                )
                position += 1


def _assign_consumers(study: Study) -> None:
    consumers = RaterProfile.objects.filter(pool__slug="consumer", user__username__startswith="demo-")
    for consumer in consumers:
        draw_items_for_rater(study=study, rater=consumer, count=ITEMS_PER_CONSUMER)
