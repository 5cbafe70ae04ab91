"""The committed study definitions (studies/definitions/) load on the demo's data, round-trip exactly, and the
released outputs then import into what they declare."""

import io
from pathlib import Path

import pytest
from django.core.management import call_command

from datasets.demo import seed_demo
from datasets.models import Dataset
from scoring import qpain_import, release_import, scorers
from studies.demo import COUNTERFACTUAL_STUDY, INDEPENDENT_STUDY, PAIRWISE_STUDY
from studies.models import Study
from studies.study_files import export_study, read_definition

pytestmark = pytest.mark.django_db

DEFINITIONS = Path(__file__).resolve().parents[2] / "studies" / "definitions"
EQUITYMEDQA = ["equitymedqa-independent.yaml", "equitymedqa-pairwise.yaml", "equitymedqa-counterfactual.yaml"]


def load(name: str, *options: str) -> list[str]:
    out = io.StringIO()
    call_command("load_study", str(DEFINITIONS / name), *options, stdout=out)
    return out.getvalue().splitlines()


def study_of(lines: list[str]) -> Study:
    _, pk, name = lines[0].split(" ", 2)
    study = Study.objects.get(pk=int(pk))
    assert study.name == name
    return study


def test_the_committed_definitions_are_the_seeds_studies():
    names = {path.name: read_definition(path.read_text(encoding="utf-8"))[0]["name"] for path in DEFINITIONS.iterdir()}

    assert names == {
        "biasmedqa.yaml": "BiasMedQA",
        "biasmedqa-auto-evaluator.yaml": "BiasMedQA auto-evaluator",
        "qpain.yaml": "Q-Pain",
        "medic.yaml": "MEDIC",
        "contextsrh.yaml": "ContextSRH",
        "equitymedqa-independent.yaml": INDEPENDENT_STUDY,
        "equitymedqa-pairwise.yaml": PAIRWISE_STUDY,
        "equitymedqa-counterfactual.yaml": COUNTERFACTUAL_STUDY,
    }


def test_every_definition_loads_on_the_demo_database_and_round_trips_exactly():
    call_command("seed_demo", stdout=io.StringIO())

    for path in sorted(DEFINITIONS.iterdir()):
        first = load(path.name)
        study = study_of(first)
        # the demo made EquityMedQA's studies: they take their files as their definitions; the others are new
        expected = "unchanged" if path.name in EQUITYMEDQA else "created"
        assert first[1].startswith(expected), (path.name, first)

        assert export_study(study) == path.read_text(encoding="utf-8"), path.name
        assert load(path.name) == [first[0], "unchanged: the study already holds this file"]


def test_the_equitymedqa_definitions_make_the_demos_studies_on_its_data():
    seed_demo()  # the demo's data and users, not its studies

    made = {name: study_of(load(name)) for name in EQUITYMEDQA}

    items = {name: study.items.count() for name, study in made.items()}
    assert items == {EQUITYMEDQA[0]: 48, EQUITYMEDQA[1]: 48, EQUITYMEDQA[2]: 24}
    independent = made[EQUITYMEDQA[0]]
    assert sorted(independent.study_pools.values_list("pool__slug", "replication", "items_per_rater")) == [
        ("consumer", 3, 4), ("equity_expert", 1, None), ("physician", 1, None),
    ]  # fmt: skip
    assert independent.rubric_version.rubric.name == "EquityMedQA independent"
    pairwise = made[EQUITYMEDQA[1]].items.select_related("answer_1__source", "answer_2__source").first()
    assert (pairwise.answer_1.source.name, pairwise.answer_2.source.name) == (
        "deepseek-32k",
        "Q-Pain clinician reference",
    )


def test_qpain_loads_before_its_released_outputs_which_then_import_into_what_it_declares(shared_datasets):
    seed_demo()
    study = study_of(load("qpain.yaml"))
    [question] = study.definition["questions"]
    declared = Dataset.objects.get(name=question["dataset"])
    assert not declared.questions.exists()

    call_command("import_qpain_outputs", str(shared_datasets / "qpain/model_outputs/deepseek-32k_qpain_outputs.jsonl"),
                 stdout=io.StringIO())  # fmt: skip

    assert Dataset.objects.get(name=question["dataset"]).pk == declared.pk
    assert declared.questions.count() == 400
    assert load("qpain.yaml")[1] == "unchanged: the study already holds this file"


def test_the_scores_imports_store_are_known_to_study_files():
    stored = {(name, qpain_import.SCORER_VERSION) for name in qpain_import.QUANTITIES.values()}
    stored.add((scorers.RELEASED, 1))

    assert stored == set(scorers.IMPORTED_SCORES)
    assert release_import.VARIANT_DATASET in {
        entry["dataset"] for entry in read_definition((DEFINITIONS / "biasmedqa.yaml").read_text())[0]["questions"]
    }
