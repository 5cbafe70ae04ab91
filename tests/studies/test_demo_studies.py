"""The demo gives every demo rater a queue with all three rubric types (consumers: the independent one)."""

import io
from collections import Counter

import pytest
from django.core.management import call_command

from studies.demo_contextsrh import STUDY_NAME as CONTEXTSRH_STUDY
from studies.demo_medic import STUDY_NAME as MEDIC_STUDY
from studies.demo_ratings import STUDY_NAME as SIMULATED
from studies.models import Assignment, Study, StudyItem

pytestmark = pytest.mark.django_db


@pytest.fixture
def seeded():
    call_command("seed_demo", stdout=io.StringIO())


def test_demo_has_one_study_per_rubric_with_valid_items(seeded):
    # Not the analysis pages' simulated ratings, the MEDIC study judges rate (studies/demo_medic.py), nor the
    # ContextSRH study of its own rubric (studies/demo_contextsrh.py)
    demo_studies = (Study.objects.exclude(name__startswith=SIMULATED).exclude(name=MEDIC_STUDY)
                    .exclude(name=CONTEXTSRH_STUDY))  # fmt: skip
    assert sorted(demo_studies.values_list("rubric_version__rubric__kind", flat=True)) == [
        "counterfactual", "independent", "pairwise",
    ]  # fmt: skip
    for item in StudyItem.objects.select_related("study__rubric_version__rubric"):
        item.clean()  # raises if an item does not fit its study's rubric


def test_every_demo_expert_has_items_of_every_rubric_and_consumers_the_independent_one(seeded):
    kinds_by_pool: dict[str, set] = {}
    equitymedqa = Assignment.objects.exclude(item__study__name=CONTEXTSRH_STUDY)
    for pool, kind in equitymedqa.values_list("rater__pool__slug", "item__study__rubric_version__rubric__kind"):
        kinds_by_pool.setdefault(pool, set()).add(kind)
    assert kinds_by_pool["physician"] == kinds_by_pool["equity_expert"] == {"independent", "pairwise", "counterfactual"}
    assert kinds_by_pool["consumer"] == {"independent"}


def test_pairwise_display_order_is_counterbalanced_across_raters(seeded):
    pairwise = StudyItem.objects.filter(study__rubric_version__rubric__kind="pairwise", assignments__isnull=False)
    for item in pairwise.exclude(study__name__startswith=SIMULATED).distinct():
        swaps = list(item.assignments.values_list("swap_answers", flat=True))
        assert abs(swaps.count(True) - swaps.count(False)) <= 1


def test_reseeding_adds_no_items_or_assignments(seeded):
    before = (StudyItem.objects.count(), Assignment.objects.count())
    call_command("seed_demo", stdout=io.StringIO())
    assert (StudyItem.objects.count(), Assignment.objects.count()) == before


def test_a_new_study_of_the_demo_data_hands_no_slot_to_the_simulated_raters(seeded):
    """The simulated raters (`sim-...`) are imported pseudonyms that cannot sign in: no study built from the
    demo data, nor a second run of the demo, gives them items."""
    from datasets.demo import CLINICIAN_REFERENCE, DEEPSEEK, QPAIN_DEMO
    from datasets.models import AnswerSource, Dataset
    from raters.models import RaterPool
    from studies.assignment import assign_study
    from studies.coordination import PoolSetting, create_study
    from studies.models import Rubric

    call_command("seed_demo", stdout=io.StringIO())
    pools = [RaterPool.objects.get(slug=slug) for slug in ("physician", "equity_expert")]
    study = create_study(
        name="A new comparison",
        description="",
        rubric_version=Rubric.objects.get(kind="pairwise", name__startswith="EquityMedQA").latest_version(),
        dataset_ids=[Dataset.objects.get(name=QPAIN_DEMO).id],
        source_ids=[AnswerSource.objects.get(name=DEEPSEEK).id, AnswerSource.objects.get(name=CLINICIAN_REFERENCE).id],
        pools=[PoolSetting(pool, 1) for pool in pools],
    )
    reports = [assign_study(study=study, pool_id=pool.id) for pool in pools]

    assert [(r.assigned, r.unassignable) for r in reports] == [(48, 0), (48, 0)]
    given = Assignment.objects.filter(item__study=study)
    assert set(given.values_list("rater__user__username", flat=True)) == {
        "demo-physician-1", "demo-physician-2", "demo-equity-expert-1", "demo-equity-expert-2",
    }  # fmt: skip
    per_rater = Counter(given.values_list("rater_id", "swap_answers"))
    assert set(per_rater.values()) == {12}  # 24 items each, 12 shown each way
    simulated = Assignment.objects.filter(rater__pseudonym__startswith="sim-")
    assert simulated.exists() and not simulated.exclude(item__study__name__startswith=SIMULATED).exists()


def test_the_demo_runs_again_after_its_studies_were_locked(seeded):
    from studies.coordination import lock_study

    for study in Study.objects.all():
        lock_study(study=study)
    before = Assignment.objects.count()

    call_command("seed_demo", stdout=io.StringIO())

    assert Assignment.objects.count() == before
