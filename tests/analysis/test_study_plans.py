"""Plans per study: `analyze --study ID`, analysis runs and the run page compute the plans a study's definition
names, with its parameters, over that study's answers only; parameters a plan does not take are refused."""

import io
import itertools

import pandas as pd
import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from analysis import services
from analysis.models import TABLE_FIELDS, AnalysisRun
from analysis.plan_parameters import PlanParameterError, configure, parameters_of, study_plans
from analysis.plans import BIASMEDQA_ACCURACY, QPAIN_GROUP_MEANS, QPAIN_PAIRED_TESTS
from datasets.models import Answer
from studies.models import StudyAnswer
from tests.analysis.test_accuracy_plan import choice_answer
from tests.factories import (
    AnalystFactory,
    AnswerFactory,
    AnswerSourceFactory,
    DatasetFactory,
    QuestionFactory,
    ScoreFactory,
    StudyFactory,
)

ACCURACY = [{"plan": "biasmedqa-accuracy"}]
QPAIN = [{"plan": "qpain-group-means"}, {"plan": "qpain-paired-tests"}]
QPAIN_TABLES = {"group_means.csv", "paired_tests.csv"}


def automatic_study(name: str, plans: list[dict]):
    """A study read by scorers only (no rubric), its definition naming plans (as a loaded study file would)."""
    return StudyFactory(name=name, rubric_version=None, definition={"format": 1, "name": name, "plans": plans})


def belong(study, answers) -> None:
    StudyAnswer.objects.link(study_id=study.pk, answer_ids=[a.pk for a in answers], via=StudyAnswer.Via.IMPORTED)


def analyze(*args) -> str:
    out = io.StringIO()
    call_command("analyze", *map(str, args), stdout=out)
    return out.getvalue()


def written(directory) -> set[str]:
    return {path.name for path in directory.iterdir()}


# --- Parameters (pure) --------------------------------------------------------------------------------------


def test_a_comparison_plan_takes_another_factor_block_strata_and_correction():
    plan = configure(QPAIN_PAIRED_TESTS, {"compare": ["race"], "block": "case", "strata": [], "correction": "holm"})

    assert plan.comparison.compare == ("race",) and plan.comparison.block == "case" and plan.correction == "holm"
    assert plan.factors == ("source", "race", "case") and plan.requires_levels == ("race", "case")
    assert plan.table == QPAIN_PAIRED_TESTS.table and plan.name == QPAIN_PAIRED_TESTS.name
    assert QPAIN_PAIRED_TESTS.comparison.compare == ("race", "gender")  # the registered plan is unchanged
    values = pd.DataFrame({"source": "m", "outcome": "p_no", "race": ["A", "B", "A", "B"],
                           "case": ["1", "1", "2", "2"], "value": [0.1, 0.3, 0.2, 0.5]})  # fmt: skip
    table = plan.compute(values)
    assert list(table["correction"]) == ["holm"] and list(table["factor"]) == ["race"]
    assert table["mean_diff"].iloc[0] == pytest.approx(-0.25)


def test_the_accuracy_plan_takes_reference_levels():
    plan = configure(BIASMEDQA_ACCURACY, {"reference_levels": {"bias": "recency"}})
    assert dict(plan.reference_levels) == {"bias": "recency", "mitigation": "none"}
    assert parameters_of(BIASMEDQA_ACCURACY) == ("reference_levels",)
    assert "correction" not in parameters_of(QPAIN_GROUP_MEANS)  # group means correct nothing


@pytest.mark.parametrize(
    ("plan", "params", "message"),
    [
        (
            BIASMEDQA_ACCURACY,
            {"block": "vignette"},
            "biasmedqa-accuracy has no parameter block; its parameters are reference_levels",
        ),  # fmt: skip
        (BIASMEDQA_ACCURACY, {"reference_levels": {"race": "White"}}, "has no such factor; its factors: bias"),
        (QPAIN_GROUP_MEANS, {"correction": "holm"}, "qpain-group-means has no parameter correction"),
        (QPAIN_PAIRED_TESTS, {"correction": "sidak"}, "'sidak' is not a correction; choose bonferroni, holm, none"),
        (QPAIN_PAIRED_TESTS, {"compare": []}, "params.compare: expected a list of one or more factor names"),
        (QPAIN_PAIRED_TESTS, {"block": "levels__x"}, "params.block: 'levels__x' is not a factor name"),
        (QPAIN_PAIRED_TESTS, {"block": "race"}, "a factor is compared, the block or a stratum, never two"),
        (QPAIN_PAIRED_TESTS, ["holm"], "params: expected name: value pairs"),
    ],
)
def test_parameters_a_plan_does_not_take_are_refused_with_what_it_takes(plan, params, message):
    with pytest.raises(PlanParameterError, match=message):
        configure(plan, params)


def test_a_definitions_plans_are_read_in_order_and_every_problem_is_named_with_its_place():
    assert study_plans(None) == [] and study_plans([]) == []
    plans = study_plans(
        [{"plan": "qpain-paired-tests", "params": {"correction": "none"}}, {"plan": "biasmedqa-accuracy"}]
    )
    assert [plan.name for plan in plans] == ["qpain-paired-tests", "biasmedqa-accuracy"]
    assert plans[0].correction == "none" and plans[1] is BIASMEDQA_ACCURACY

    with pytest.raises(PlanParameterError) as refused:
        study_plans([
            {"plan": "nonsense"}, {"plan": "biasmedqa-accuracy", "params": {"x": 1}}, "accuracy",
            {"plan": "qpain-paired-tests"}, {"plan": "qpain-paired-tests", "params": {"block": "context"}},
        ])  # fmt: skip
    assert refused.value.problems == [
        "plans[0].plan: no plan named 'nonsense'; the plans: biasmedqa-accuracy, qpain-group-means, "
        "qpain-paired-tests, medic, contextsrh",
        "plans[1].params: biasmedqa-accuracy has no parameter x; its parameters are reference_levels",
        "plans[2]: expected {plan: NAME, params: {...}} (params optional)",
        "plans[4].params: a factor is compared, the block or a stratum, never two of these",
        "plans[4]: qpain-paired-tests writes paired_tests.csv, as plans[3] does",
    ]


# --- Two BiasMedQA studies over the same questions, and a Q-Pain study -------------------------------------------


@pytest.fixture
def biasmedqa_studies(db):
    """Two BiasMedQA-like studies over the same questions: one imported gpt's answers (3 of 4 right), the other
    asked llama (1 of 4 right, plus one recency answer)."""
    dataset = DatasetFactory(name="BiasMedQA")
    gpt, llama = AnswerSourceFactory(name="gpt-4-0613"), AnswerSourceFactory(name="llama-2-70b-chat")
    gpt_answers = [choice_answer(gpt, dataset=dataset, released=o) for o in ["correct", "correct", "correct", "wrong"]]
    llama_answers = [choice_answer(llama, dataset=dataset, released=o) for o in ["correct", "wrong", "wrong", "wrong"]]
    llama_answers.append(choice_answer(llama, bias="recency", dataset=dataset, released="wrong"))
    first, second = automatic_study("BiasMedQA: gpt", ACCURACY), automatic_study("BiasMedQA: llama", ACCURACY)
    belong(first, gpt_answers)
    belong(second, llama_answers)
    return first, second


def qpain_answers(source, *, vignettes=3) -> list:
    """Answers to race x gender variants of `vignettes` vignettes with released P(No) scores: Black patients'
    0.1 higher than White patients' in every vignette."""
    dataset = DatasetFactory(name="Q-Pain variants")
    answers = []
    for vignette, race, gender in itertools.product(range(vignettes), ["Black", "White"], ["man", "woman"]):
        levels = {"context": "post_op", "vignette": f"post_op-{vignette:02d}", "race": race, "gender": gender}
        answer = AnswerFactory(question=QuestionFactory(dataset=dataset, levels=levels), source=source)
        p_no = 0.2 + 0.05 * vignette + (0.1 if race == "Black" else 0.0)
        ScoreFactory(answer=answer, scorer="released_p_no", outcome="measured", number=p_no)
        answers.append(answer)
    return answers


@pytest.fixture
def qpain_study(db):
    study = automatic_study("Q-Pain: deepseek", QPAIN)
    belong(study, qpain_answers(AnswerSourceFactory(name="deepseek-32k")))
    return study


@pytest.mark.django_db
def test_each_biasmedqa_study_sees_only_its_own_answers(biasmedqa_studies, qpain_study, tmp_path):
    first, second = biasmedqa_studies
    output = analyze("--study", first.pk, "--out", tmp_path / "first")
    analyze("--study", second.pk, "--out", tmp_path / "second")

    gpt = pd.read_csv(tmp_path / "first" / "accuracy.csv")
    llama = pd.read_csv(tmp_path / "second" / "accuracy.csv")
    assert list(gpt["source"]) == ["gpt-4-0613"] and (gpt["n"].iloc[0], gpt["correct"].iloc[0]) == (4, 3)
    assert list(llama["source"]) == ["llama-2-70b-chat"] * 2 and list(llama["bias"]) == ["none", "recency"]
    assert list(llama["correct"]) == [1, 0]
    # A BiasMedQA study writes accuracy.csv (and its plot), no Q-Pain table and no rating table (no rubric).
    assert written(tmp_path / "first") == {"accuracy.csv", "accuracy.png"}
    assert "has no rubric: no ratings, so no rating tables" in output and "accuracy.csv: 1 rows" in output


@pytest.mark.django_db
def test_a_qpain_study_writes_its_tables_and_no_accuracy(biasmedqa_studies, qpain_study, tmp_path):
    analyze("--study", qpain_study.pk, "--out", tmp_path)

    assert written(tmp_path) == QPAIN_TABLES | {"group_means.png", "paired_tests.png"}
    paired = pd.read_csv(tmp_path / "paired_tests.csv")
    p_no = paired[paired["outcome"] == "p_no"].set_index(["level_a", "level_b"])
    assert set(paired["source"]) == {"deepseek-32k"} and len(p_no) == 6  # 4 groups: 6 pairs
    assert p_no.loc[("Black man", "White man"), "mean_diff"] == pytest.approx(0.1)
    assert p_no.loc[("Black man", "White man"), "n_blocks"] == 3


@pytest.mark.django_db
def test_a_studys_parameters_change_its_tables(qpain_study, biasmedqa_studies, tmp_path):
    qpain_study.definition["plans"] = [{"plan": "qpain-paired-tests", "params": {"compare": ["race"],
                                                                                 "correction": "holm"}}]  # fmt: skip
    qpain_study.save()
    first, _ = biasmedqa_studies
    analyze("--study", qpain_study.pk, "--out", tmp_path)

    paired = pd.read_csv(tmp_path / "paired_tests.csv")
    assert written(tmp_path) == {"paired_tests.csv", "paired_tests.png"}
    p_no = paired[paired["outcome"] == "p_no"]
    assert list(zip(p_no["level_a"], p_no["level_b"], strict=True)) == [("Black", "White")]
    assert set(paired["correction"]) == {"holm"} and set(paired["factor"]) == {"race"}
    assert p_no["n_blocks"].iloc[0] == 3 and p_no["mean_diff"].iloc[0] == pytest.approx(0.1)


@pytest.mark.django_db
def test_bad_plans_or_a_study_without_plans_are_said_plainly(biasmedqa_studies, tmp_path):
    first, second = biasmedqa_studies
    first.definition["plans"] = [{"plan": "biasmedqa-accuracy", "params": {"correction": "holm"}}]
    first.save()
    with pytest.raises(CommandError, match=r"The plans of study \d+ \(BiasMedQA: gpt\): plans\[0\].params: "
                                           "biasmedqa-accuracy has no parameter correction"):  # fmt: skip
        analyze("--study", first.pk, "--out", tmp_path)
    assert not tmp_path.exists() or written(tmp_path) == set()

    second.definition = {}
    second.save()
    output = analyze("--study", second.pk, "--out", tmp_path)
    assert f"Study {second.pk} names no analysis plan." in output and written(tmp_path) == set()


@pytest.mark.django_db
def test_a_study_with_a_rubric_and_plans_gets_both(biasmedqa_studies, tmp_path):
    first, _ = biasmedqa_studies
    rated = StudyFactory(name="Rated and scored", definition={"plans": ACCURACY})
    belong(rated, Answer.objects.filter(study_links__study=first))
    analyze("--study", rated.pk, "--out", tmp_path)

    assert written(tmp_path) == {f"{name}.csv" for name in TABLE_FIELDS} | {"accuracy.csv", "accuracy.png"}
    assert pd.read_csv(tmp_path / "accuracy.csv")["n"].sum() == 4


def test_analyze_without_a_study_still_reads_every_answer(biasmedqa_studies, qpain_study, tmp_path):
    analyze("--out", tmp_path)
    table = pd.read_csv(tmp_path / "accuracy.csv")
    assert set(table["source"]) == {"gpt-4-0613", "llama-2-70b-chat"}
    assert written(tmp_path) >= QPAIN_TABLES


# --- Runs and the run page --------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_run_of_a_study_stores_its_plans_and_the_page_shows_them(
    client, biasmedqa_studies, qpain_study, django_capture_on_commit_callbacks, tmp_path
):
    analyst = AnalystFactory()
    with django_capture_on_commit_callbacks(execute=True):
        run = services.start_analysis(study=qpain_study, user=analyst)
    run.refresh_from_db()
    assert run.status == AnalysisRun.Status.DONE, run.error
    analyze("--study", qpain_study.pk, "--out", tmp_path)
    assert run.plan_tables == {name: (tmp_path / name).read_text(encoding="utf-8") for name in QPAIN_TABLES}
    assert run.ratings == {} and run.rates_csv == ""

    client.force_login(analyst)
    page = client.get(reverse("analysis:run", args=[run.pk])).content.decode()
    assert "Q-Pain: paired t-tests of the race x gender pairs" in page
    assert "Only the answers of Q-Pain: deepseek count" in page
    assert "has no rubric: nobody rates its answers, so there are no rating tables" in page
    assert "Rates with 95% CIs" not in page and "BiasMedQA: accuracy" not in page
    download = client.get(reverse("analysis:table_csv", args=[run.pk, "paired_tests"]))
    assert download.status_code == 200 and download.content.decode() == run.plan_tables["paired_tests.csv"]

    first, _ = biasmedqa_studies
    with django_capture_on_commit_callbacks(execute=True):
        other = services.start_analysis(study=first, user=analyst)
    other.refresh_from_db()
    assert set(other.plan_tables) == {"accuracy.csv"}
    assert "gpt-4-0613" in other.plan_tables["accuracy.csv"] and "llama" not in other.plan_tables["accuracy.csv"]


@pytest.mark.django_db
def test_a_run_of_a_study_with_bad_plans_fails_with_the_reason(biasmedqa_studies, django_capture_on_commit_callbacks):
    first, _ = biasmedqa_studies
    first.definition["plans"] = [{"plan": "accuracy"}]
    first.save()
    with django_capture_on_commit_callbacks(execute=True):
        run = services.start_analysis(study=first, user=AnalystFactory())
    run.refresh_from_db()
    assert run.status == AnalysisRun.Status.FAILED and "plans[0].plan: no plan named 'accuracy'" in run.error


# --- The released files imported into their studies (the README's reproduction, per study) ---------------------


@pytest.mark.django_db
def test_released_files_imported_into_their_studies_give_each_its_own_tables(shared_datasets, tmp_path):
    """BiasMedQA's released responses (the first 300 rows) and Q-Pain's deepseek-32k outputs, each imported into
    its study: each study's analysis writes its own tables and no other's, equal to the tables of all answers
    where the database holds only its answers."""
    from datasets.importers.questions import QuestionOptions
    from datasets.services import import_questions

    medqa = shared_datasets / "biasmedqa" / "questions" / "test.jsonl"
    import_questions(data=medqa.read_bytes(), filename=medqa.name, options=QuestionOptions(format="medqa"))
    responses = tmp_path / "responses.csv"
    released = shared_datasets / "biasmedqa" / "model_responses" / "model_responses_qid0-49.csv"
    pd.read_csv(released, dtype=str, keep_default_na=False).head(300).to_csv(responses, index=False)
    biasmedqa = automatic_study("BiasMedQA (released)", ACCURACY)
    qpain = automatic_study("Q-Pain (deepseek-32k)", QPAIN)
    quiet = io.StringIO()

    call_command("import_biasmedqa_responses", str(responses), "--study", str(biasmedqa.pk), stdout=quiet)
    analyze("--out", tmp_path / "all-biasmedqa")  # only BiasMedQA answers in the database so far
    outputs = shared_datasets / "qpain" / "model_outputs" / "deepseek-32k_qpain_outputs.jsonl"
    call_command("import_qpain_outputs", str(outputs), "--study", str(qpain.pk), stdout=quiet)
    analyze("--study", biasmedqa.pk, "--out", tmp_path / "biasmedqa")
    analyze("--study", qpain.pk, "--out", tmp_path / "qpain")
    analyze("--out", tmp_path / "all")

    assert written(tmp_path / "biasmedqa") == {"accuracy.csv", "accuracy.png"}
    assert written(tmp_path / "qpain") == QPAIN_TABLES | {"group_means.png", "paired_tests.png"}
    accuracy = (tmp_path / "biasmedqa" / "accuracy.csv").read_text()
    assert accuracy == (tmp_path / "all-biasmedqa" / "accuracy.csv").read_text()
    assert pd.read_csv(tmp_path / "biasmedqa" / "accuracy.csv")["n"].sum() == 300
    for name in QPAIN_TABLES:  # every Q-Pain answer is the study's: the same table as over all answers
        assert (tmp_path / "qpain" / name).read_text() == (tmp_path / "all" / name).read_text()
    paired = pd.read_csv(tmp_path / "qpain" / "paired_tests.csv")
    assert (paired["outcome"] == "p_no").sum() == 28


@pytest.mark.django_db
def test_the_run_form_names_the_studys_plans_and_refuses_bad_ones_before_queueing(client, biasmedqa_studies):
    first, second = biasmedqa_studies
    client.force_login(AnalystFactory())
    page = " ".join(client.get(reverse("analysis:index"), {"study": first.pk}).content.decode().split())
    assert "Analysis plans: BiasMedQA: accuracy by bias and mitigation, over this study's answers only." in page
    assert "(none: it has no rubric, so only its analysis plans are computed)" in page
    everything = " ".join(client.get(reverse("analysis:index")).content.decode().split())
    assert "Q-Pain: paired t-tests of the race x gender pairs, over every answer" in everything

    second.definition["plans"] = [{"plan": "biasmedqa-accuracy", "params": {"block": "vignette"}}]
    second.save()
    response = client.post(reverse("analysis:index"), {"study": second.pk})
    assert response.status_code == 400 and not AnalysisRun.objects.exists()
    assert "The analysis plans of BiasMedQA: llama cannot be computed: plans[0].params: biasmedqa-accuracy has no " \
           "parameter block" in response.content.decode()  # fmt: skip
    assert client.post(reverse("analysis:index"), {"study": first.pk}).status_code == 302
