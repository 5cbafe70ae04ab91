"""MEDIC's tables from a study's judge ratings (analysis.services.medic_report; `analyze --study` with the `medic`
plan): the three CSVs with their contract columns and the values analysis.medic computes on the same results.

The judge ratings are made through the real models (`JudgeReply` + `JudgeRating`), not `record_judge_reply`: the
MEDIC rubric's list question (hallucination and omission spans) is another branch's work, so the rubric's
validator cannot check them yet; `JudgeRating.values` stores them as a validated reply would (a list of objects)."""

import random

import pandas as pd
import pytest
from django.core.management import call_command

from analysis import medic, services
from analysis.plan_loading import table_csv
from analysis.plan_parameters import PlanParameterError
from analysis.results import JUDGE, results_table
from datasets.models import AnswerSource
from studies.models import Judge, JudgeRating, JudgeReply, Study
from studies.study_files import known_plans
from tests.factories import AnswerFactory, AnswerSourceFactory, DatasetFactory, IndependentItemFactory, QuestionFactory

pytestmark = pytest.mark.django_db

MEANS_CONTRACT = ["study", "source", "judge", "outcome", "factor", "level", "n", "mean", "sd", "ci_low", "ci_high"]
AGREEMENT_CONTRACT = ["study", "category", "judge_a", "judge_b", "n_items", "percent_agreement", "cohen_kappa"]
GENERALISATION_CONTRACT = ["study", "outcome", "factor", "level_a", "level_b", "n_pairs", "n_significant",
                           "n_same_direction"]  # fmt: skip
JUDGE_MODELS = {"llama": "Llama judge", "qwen": "Qwen judge"}
PARTS = ("hallucination", "omission", "category")  # MEDIC: one judge per rubric part, three per model


def judge_of(study, model: str, part: str) -> Judge:
    endpoint, _ = AnswerSource.objects.get_or_create(
        name=JUDGE_MODELS[model], defaults={"kind": AnswerSource.Kind.MODEL, "model_name": model}
    )
    judge = Judge.objects.create(name=f"{model}-{part}", source=endpoint, rubric_version=study.rubric_version,
                                 instructions=f"MEDIC {part}.", shown_fields=["question", "answer"])  # fmt: skip
    study.judges.add(judge)
    return judge


def judge_rates(judge, item, values: dict, repeat: int = 0) -> JudgeRating:
    reply = JudgeReply.objects.create(judge=judge, item=item, repeat=repeat, request={"messages": []},
                                      raw_reply="{}", latency_ms=5)  # fmt: skip
    return JudgeRating.objects.create(reply=reply, judge=judge, item=item, repeat=repeat,
                                      rubric_version=judge.rubric_version, values=values)  # fmt: skip


def span(rng: random.Random) -> dict:
    return {"snippet": "take ibuprofen", "explanation": "not for this patient", "harm": rng.randint(0, 7),
            "confidence": round(rng.random(), 2)}  # fmt: skip


def make_medic_study(*, plans=({"plan": "medic"},), seed: int = 3) -> Study:
    """40 questions (style standard / 8th grade x gender woman / man), answered by two sources; per judge model
    (llama, qwen) three judges, one per part. Llama finds more hallucinations in the 8th-grade restyles of Source A;
    qwen finds none more; the two models agree on MANAGE most of the time."""
    rng = random.Random(seed)
    study = Study.objects.create(name="MEDIC study", rubric_version=IndependentItemFactory.build().study.rubric_version,
                                 definition={"plans": list(plans)})  # fmt: skip
    dataset = DatasetFactory(name="MEDIC questions")
    sources = [AnswerSourceFactory(name="Source A"), AnswerSourceFactory(name="Source B")]
    judges = {(model, part): judge_of(study, model, part) for model in JUDGE_MODELS for part in PARTS}
    for number in range(40):
        style = "8th grade" if number % 2 else "standard"
        gender = "woman" if number % 4 < 2 else "man"
        levels = {"style": style, "gender": gender, "desire": f"d{number % 3}"}
        question = QuestionFactory(dataset=dataset, external_id=f"q{number}", levels=levels)
        for source in sources:
            item = IndependentItemFactory(study=study, answer=AnswerFactory(question=question, source=source))
            manage = rng.random() < 0.5
            for model in JUDGE_MODELS:
                extra = 2 if model == "llama" and source.name == "Source A" and style == "8th grade" else 0
                found = [span(rng) for _ in range(rng.randint(0, 1) + extra)]
                judge_rates(judges[model, "hallucination"], item, {"hallucinations": found})
                missed = [span(rng) for _ in range(rng.randint(0, 2))]
                judge_rates(judges[model, "omission"], item, {"omissions": missed})
                agree = rng.random() < 0.85
                says = manage if model == "llama" or agree else not manage  # qwen differs now and then
                categories = {"manage": "yes" if says else "no",
                              "visit": rng.choice(["yes", "no"]), "resource": rng.choice(["yes", "no"])}  # fmt: skip
                judge_rates(judges[model, "category"], item, categories)
    return study


@pytest.fixture
def medic_study():
    return make_medic_study()


def expected_report(study, factors=("style", "gender")) -> dict[str, pd.DataFrame]:
    """analysis.medic's functions on the study's results table, called one by one."""
    results = results_table(study, kinds=(JUDGE,))
    models = {f"{model}-{part}": source for model, source in JUDGE_MODELS.items() for part in PARTS}
    obs = medic.medic_observations(results, judge_models=models, factors=factors)
    tests = medic.level_tests(obs, factors=factors)
    return {
        "judge_means.csv": medic.judge_means(obs, study=study.name, factors=factors),
        "judge_agreement.csv": medic.judge_pair_agreement(obs, study=study.name),
        "generalisation.csv": medic.generalisation(tests, study=study.name),
    }


def test_the_medic_plan_is_known_to_study_files_and_takes_factors():
    assert "medic" in known_plans()
    study = Study(name="x", definition={"plans": [{"plan": "medic", "params": {"factors": ["race", "gender"]}}]})
    (plan,) = services.plans_of(study)
    assert plan.reads_judges and plan.factors == ("race", "gender")
    with pytest.raises(PlanParameterError, match=r"plans\[0\].params: medic has no parameter block; its parameters "
                                                 r"are factors"):  # fmt: skip
        services.plans_of(Study(name="y", definition={"plans": [{"plan": "medic", "params": {"block": "x"}}]}))


def test_analyze_writes_the_three_medic_tables_equal_to_the_statistics(medic_study, tmp_path):
    call_command("analyze", "--study", str(medic_study.pk), "--out", str(tmp_path))

    expected = expected_report(medic_study)  # desire is not among the plan's factors; race, grade absent
    for name, table in expected.items():
        assert (tmp_path / name).read_text(encoding="utf-8") == table_csv(table), name
    means = pd.read_csv(tmp_path / "judge_means.csv", keep_default_na=False)
    assert list(means.columns) == MEANS_CONTRACT
    assert set(means["judge"]) == {"Llama judge", "Qwen judge"}  # the judges' models, not the nine judge names
    assert set(means["outcome"]) == {"hallucinations", "hallucination_harm", "omissions", "omission_harm", "MANAGE",
                                     "VISIT", "RESOURCE"}  # fmt: skip
    # Each (source, model, outcome) over all 40 items: the three judges of a model count once per item.
    overall = means[(means["factor"] == "") & (means["outcome"] == "hallucinations")]
    assert overall["n"].tolist() == [40, 40, 40, 40]
    agreement = pd.read_csv(tmp_path / "judge_agreement.csv", keep_default_na=False)
    assert list(agreement.columns) == AGREEMENT_CONTRACT
    assert agreement["category"].tolist() == ["MANAGE", "VISIT", "RESOURCE", "mean"]
    assert agreement.loc[0, "n_items"] == 80 and 0.75 < agreement.loc[0, "percent_agreement"] < 0.95
    generalised = pd.read_csv(tmp_path / "generalisation.csv", keep_default_na=False)
    assert list(generalised.columns)[: len(GENERALISATION_CONTRACT)] == GENERALISATION_CONTRACT
    effect = generalised.set_index(["outcome", "factor"]).loc[("hallucinations", "style")]
    # Only llama on Source A sees the restyles' extra hallucinations: significant in 1 of the 4 pairs.
    assert (effect["level_a"], effect["level_b"], effect["n_pairs"]) == ("8th grade", "standard", 4)
    assert effect["n_significant"] == 1 and effect["directions"] == "+0 / -1"


def test_the_plans_factors_parameter_chooses_the_factors(tmp_path):
    study = make_medic_study(plans=[{"plan": "medic", "params": {"factors": ["gender", "race"]}}])

    call_command("analyze", "--study", str(study.pk), "--out", str(tmp_path))

    means = pd.read_csv(tmp_path / "judge_means.csv", keep_default_na=False)
    assert set(means["factor"]) == {"", "gender"}  # race: no item carries it
    expected = expected_report(study, factors=("gender",))["judge_means.csv"]
    assert (tmp_path / "judge_means.csv").read_text(encoding="utf-8") == table_csv(expected)


def test_a_study_not_naming_the_plan_gets_no_medic_tables(tmp_path):
    study = make_medic_study(plans=())

    call_command("analyze", "--study", str(study.pk), "--out", str(tmp_path))

    assert not any((tmp_path / name).exists() for name in medic.TABLE_FILES.values())
    assert services.medic_report(study) is not None  # its page still shows them, with the plan's default factors
