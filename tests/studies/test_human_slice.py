"""A study file's `human_slice`: people rate a seeded random sample of the study's items (judges rate all). Slots
are made only for the slice, the same seed draws the same items, the key is checked with its line, and an
export writes it back."""

import textwrap

import pytest
from django.db import connection

from datasets.models import AnswerSource, Dataset
from studies.assignment import create_slots, sliced_item_ids
from studies.study_files import export_study, load_study_text, read_definition
from studies.study_yaml import StudyFileError
from tests.factories import AnswerFactory, AnswerSourceFactory, DatasetFactory, QuestionFactory

pytestmark = pytest.mark.django_db

STUDY = """\
format: 1
name: Sliced
questions: [{{dataset: Questions}}]
conditions: [{{source: Model A}}]
rubric: {{name: EquityMedQA independent, version: 1}}
pools: [{{pool: Physician, replication: 2}}, {{pool: Consumer}}]
human_slice: {slice}
"""


@pytest.fixture
def forty_answers():
    dataset = DatasetFactory(name="Questions")
    source = AnswerSourceFactory(name="Model A")
    for number in range(40):
        AnswerFactory(question=QuestionFactory(dataset=dataset, external_id=f"q{number}"), source=source)


def problems_of(text: str) -> list[str]:
    with pytest.raises(StudyFileError) as raised:
        load_study_text(textwrap.dedent(text))
    return [str(problem) for problem in raised.value.problems]


def test_the_same_seed_draws_the_same_items_and_another_seed_others():
    items = list(range(1000, 1200))

    first = sliced_item_ids(items, {"share": 0.2, "seed": 7})

    assert len(first) == 40 and first <= set(items)
    assert sliced_item_ids(list(reversed(items)), {"share": 0.2, "seed": 7}) == first  # not the order given
    assert sliced_item_ids(items, {"share": 0.2, "seed": 8}) != first
    assert len(sliced_item_ids(items, {"items": 25, "seed": 7})) == 25
    assert sliced_item_ids(items, {"items": 500, "seed": 7}) == set(items)
    assert len(sliced_item_ids(items[:3], {"share": 0.01})) == 1  # a share rounds to at least one item
    # An item's hash never changes: 50 items added move the first 25 down at most 50 places.
    assert sliced_item_ids(items, {"items": 25, "seed": 7}) <= sliced_item_ids(
        [*items, *range(5000, 5050)], {"items": 25 + 50, "seed": 7}
    )


def test_only_the_slices_items_get_slots_and_the_slot_count_matches(forty_answers):
    study = load_study_text(STUDY.format(slice="{share: 0.25, seed: 7}")).study

    items = list(study.items.values_list("id", flat=True))
    sliced = sliced_item_ids(items, {"share": 0.25, "seed": 7})
    assert len(items) == 40 and len(sliced) == 10
    assert study.slots.count() == 10 * (2 + 1)  # Physician twice, Consumer once
    assert set(study.slots.values_list("item_id", flat=True)) == sliced
    assert not study.slots.exclude(item_id__in=sliced).exists()
    assert create_slots(study=study) == 0  # idempotent: nothing outside the slice is added later


def test_a_study_without_a_slice_gets_slots_for_every_item(forty_answers):
    study = load_study_text(STUDY.replace("human_slice: {slice}\n", "").format()).study

    assert study.slots.count() == 40 * 3
    assert "human_slice" not in study.definition and "human_slice" not in export_study(study)


def test_a_number_of_items_slice_and_its_export_round_trip(forty_answers):
    study = load_study_text(STUDY.format(slice="{items: 12, seed: 3}")).study

    assert study.slots.values("item_id").distinct().count() == 12
    exported = export_study(study)
    assert "human_slice:\n  items: 12\n  seed: 3\n" in exported
    assert read_definition(exported)[0] == study.definition
    assert load_study_text(exported).outcome == "unchanged"


def test_the_seed_defaults_to_zero_in_the_stored_form(forty_answers):
    study = load_study_text(STUDY.format(slice="{share: 0.5}")).study

    assert study.definition["human_slice"] == {"share": 0.5, "seed": 0}
    assert study.slots.values("item_id").distinct().count() == 20


@pytest.mark.parametrize(
    ("chosen", "problem"),
    [
        ("{share: 1.5, seed: 7}", "line 7, human_slice.share: must be at most 1"),
        ("{share: 0, seed: 7}", "line 7, human_slice.share: must be above 0 (people rate some of the items)"),
        ("{share: '20%'}", "line 7, human_slice.share: expected a number, not \"20%\""),
        ("{items: 0}", "line 7, human_slice.items: must be at least 1"),
        ("{share: 0.2, items: 10}", "line 7, human_slice: give either a share of the items or a number of items, "
                                    "not both"),
        ("{seed: 7}", "line 7, human_slice: give a share of the items (share: 0.2) or a number of items (items: 500)"),
        ("{share: 0.2, sed: 7}", "line 7, human_slice.sed: unknown key 'sed' (known here: share, items, seed)"),
    ],
)  # fmt: skip
def test_a_bad_slice_is_refused_with_its_line_and_nothing_is_created(forty_answers, chosen, problem):
    studies = Dataset.objects.count(), AnswerSource.objects.count()

    assert problems_of(STUDY.format(slice=chosen)) == [problem]
    assert (Dataset.objects.count(), AnswerSource.objects.count()) == studies


def test_a_slice_without_pools_is_refused(forty_answers):
    text = STUDY.format(slice="{share: 0.2}").replace("pools: [{pool: Physician, replication: 2}, {pool: Consumer}]\n",
                                                       "")  # fmt: skip

    assert problems_of(text) == [
        "line 6, human_slice: a human slice is what rater pools rate: give the study pools, or no slice"
    ]


def test_the_row_by_row_path_makes_the_same_slots(forty_answers, monkeypatch):
    """SQLite (development) makes slots row by row rather than in one INSERT ... SELECT: the same slice."""
    study = load_study_text(STUDY.format(slice="{share: 0.25, seed: 7}")).study
    expected = set(study.slots.values_list("item_id", "pool_id", "index"))
    study.slots.all().delete()
    monkeypatch.setattr(connection, "vendor", "sqlite")

    assert create_slots(study=study) == 30
    assert set(study.slots.values_list("item_id", "pool_id", "index")) == expected
