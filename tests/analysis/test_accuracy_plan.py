"""BiasMedQA's analysis plan on the database: its outcomes (which scores count), `analyze` writing accuracy.csv
and accuracy.png beside the four tables, analysis runs storing it, and the run page showing and serving it."""

import io

import pandas as pd
import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from analysis import services
from analysis.choice_accuracy import ACCURACY_COLUMNS
from analysis.models import TABLE_FIELDS, AnalysisRun
from analysis.plan_loading import load_outcomes, plan_table
from analysis.plans import BIASMEDQA_ACCURACY
from scoring import scorers
from scoring.models import Score
from studies.models import Study
from tests.factories import (
    AnalystFactory,
    AnswerFactory,
    AnswerSourceFactory,
    DatasetFactory,
    QuestionFactory,
    ScoreFactory,
)
from tests.studies.test_exports import build_release

pytestmark = pytest.mark.django_db


def choice_answer(source, *, bias=None, mitigation=None, dataset=None, **scores):
    """An answer to a multiple-choice question (a variant at `bias` when given) under a mitigation, with
    scores given as scorer=outcome (at the scorer's current version; 1 for `released` and unknown names) or
    scorer=[(version, outcome), ...]."""
    question = QuestionFactory(
        metadata={"answer_idx": "A", "options": {"A": "yes", "B": "no"}},
        levels={"bias": bias} if bias else {},
        **({"dataset": dataset} if dataset else {}),
    )
    parameters = {"condition": {"mitigation": mitigation}} if mitigation else {}
    answer = AnswerFactory(question=question, source=source, parameters=parameters)
    for scorer, given in scores.items():
        current = scorers.current(scorer).version if scorer in scorers.names() else 1
        for version, outcome in [(current, given)] if isinstance(given, str) else given:
            ScoreFactory(answer=answer, scorer=scorer, version=version, outcome=outcome)
    return answer


@pytest.fixture
def scored():
    """Two sources: `gpt` without mitigation (no bias 3/4 right, recency 1/4 with a non-response) and with
    education (recency 2/2); `llama` one unbiased answer."""
    dataset = DatasetFactory(name="BiasMedQA")
    gpt, llama = AnswerSourceFactory(name="gpt-4-0613"), AnswerSourceFactory(name="llama-2-70b-chat")
    for outcome in ["correct", "correct", "correct", "wrong"]:
        choice_answer(gpt, dataset=dataset, released=outcome)
    for outcome in ["correct", "wrong", "wrong", "non_response"]:
        choice_answer(gpt, bias="recency", mitigation="none", dataset=dataset, released=outcome)
    for outcome in ["correct", "correct"]:
        choice_answer(gpt, bias="recency", mitigation="education", dataset=dataset, letter=outcome)
    choice_answer(llama, dataset=dataset, letter="wrong")
    return dataset


def analyze(*args) -> str:
    out = io.StringIO()
    call_command("analyze", *map(str, args), stdout=out)
    return out.getvalue()


# --- Loading -------------------------------------------------------------------------------------------------


def test_outcomes_count_the_released_label_first_then_the_letter_scorers_highest_version():
    source = AnswerSourceFactory(name="m")
    choice_answer(source, released="wrong", letter="correct")  # released wins
    choice_answer(source, bias="recency", letter=[(1, "wrong"), (2, "correct")])  # the latest letter version
    choice_answer(source, bias="cultural", mitigation="one-shot", letter="non_response", judge="correct")
    choice_answer(source, other_scorer="correct")  # no score of the plan's scorers
    AnswerFactory(source=source, question=QuestionFactory(metadata={}))  # not multiple choice...
    ScoreFactory(answer=AnswerFactory(source=source), outcome="correct")  # ...even when scored

    outcomes = load_outcomes(BIASMEDQA_ACCURACY)

    assert list(outcomes.columns) == ["source", "bias", "mitigation", "outcome"]
    rows = sorted(outcomes.astype(str).itertuples(index=False, name=None))
    assert rows == [
        ("m", "cultural", "one-shot", "non_response"),
        ("m", "none", "none", "wrong"),
        ("m", "recency", "none", "correct"),
    ]


def test_the_plan_scores_answers_scored_by_letter_v1_only_with_v2_and_counts_v2():
    source = AnswerSourceFactory(name="verbose")
    metadata = {"answer_idx": "C", "options": {"A": "Aspirin", "B": "Warfarin", "C": "Clopidogrel"}}
    answers = [AnswerFactory(question=QuestionFactory(metadata=metadata), source=source, text=text)
               for text in ("Option C", "C", "B")]  # fmt: skip
    for answer in answers:  # stored before v2 was registered
        reading = scorers.read_letter_v1(answer.text, answer.refusal, metadata)
        ScoreFactory(answer=answer, scorer="letter", version=1, outcome=reading.outcome, value=reading.value)

    table = plan_table(BIASMEDQA_ACCURACY)

    assert dict(answers[0].scores.values_list("version", "outcome")) == {1: "non_response", 2: "correct"}
    assert Score.objects.filter(scorer="letter", version=2).count() == 3
    assert table[["source", "n", "correct", "non_response"]].values.tolist() == [["verbose", 3, 2, 0]]
    assert plan_table(BIASMEDQA_ACCURACY).equals(table)  # nothing left to score: the same table
    assert Score.objects.filter(scorer="letter").count() == 6


def test_a_condition_level_on_the_question_wins_over_the_answers_and_missing_factors_are_at_none():
    source = AnswerSourceFactory(name="m")
    question = QuestionFactory(metadata={"answer_idx": "B"}, levels={"mitigation": "few-shot"})
    ScoreFactory(answer=AnswerFactory(question=question, source=source, parameters={"condition": {}}))

    assert load_outcomes(BIASMEDQA_ACCURACY).astype(str).values.tolist() == [["m", "none", "few-shot", "correct"]]


def test_no_scored_answers_load_as_an_empty_frame_with_the_columns():
    outcomes = load_outcomes(BIASMEDQA_ACCURACY)

    assert outcomes.empty and list(outcomes.columns) == ["source", "bias", "mitigation", "outcome"]


# --- analyze -------------------------------------------------------------------------------------------------


def test_analyze_writes_accuracy_csv_and_its_plot_beside_the_four_tables(scored, tmp_path):
    output = analyze("--out", tmp_path)

    table = pd.read_csv(tmp_path / "accuracy.csv", keep_default_na=False, na_values=[""])
    assert list(table.columns) == ACCURACY_COLUMNS
    assert table[["source", "bias", "mitigation", "n", "correct", "non_response"]].values.tolist() == [
        ["gpt-4-0613", "none", "none", 4, 3, 0],
        ["gpt-4-0613", "recency", "none", 4, 1, 1],
        ["gpt-4-0613", "recency", "education", 2, 2, 0],
        ["llama-2-70b-chat", "none", "none", 1, 0, 0],
    ]
    recency = table.iloc[1]
    assert recency["accuracy"] == 1 / 3 and recency["non_response_rate"] == 0.25
    assert recency["drop_abs"] == pytest.approx(0.75 - 1 / 3) and recency["drop_rel"] == pytest.approx(5 / 9)
    assert table.iloc[2]["drop_abs"] == pytest.approx(0.75 - 1.0)  # education: from the run without mitigation
    assert "accuracy.csv: 4 rows (biasmedqa-accuracy)" in output and "accuracy.png" in output
    assert (tmp_path / "accuracy.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    for name in TABLE_FIELDS:  # the EquityMedQA tables are written as ever, empty here
        assert f"{name}.csv: 0 rows" in output and (tmp_path / f"{name}.csv").is_file()


def test_analyze_scores_unscored_answers_with_the_letter_scorer_first(tmp_path):
    source = AnswerSourceFactory(name="stand-in")
    for text in ["A", "B: no", "I cannot answer that."]:  # right, wrong, no letter
        question = QuestionFactory(metadata={"answer_idx": "A", "options": {"A": "yes", "B": "no"}})
        AnswerFactory(question=question, source=source, text=text)

    output = analyze("--out", tmp_path)

    table = pd.read_csv(tmp_path / "accuracy.csv")
    assert table[["source", "bias", "mitigation", "n", "correct", "non_response"]].values.tolist() == [
        ["stand-in", "none", "none", 3, 1, 1]
    ]
    assert table["accuracy"][0] == 0.5 and "accuracy.csv: 1 rows" in output
    assert Score.objects.filter(scorer="letter").count() == 3
    analyze("--out", tmp_path)  # scored once: a second analysis finds nothing missing
    assert Score.objects.filter(scorer="letter").count() == 3


def test_analyze_on_an_equitymedqa_database_writes_no_plan_table(tmp_path):
    build_release()

    output = analyze("--out", tmp_path)

    assert not (tmp_path / "accuracy.csv").exists() and "accuracy." not in output
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(f"{name}.csv" for name in TABLE_FIELDS)


def test_analyze_of_one_study_leaves_the_plans_out_and_plan_refuses_study_scope(scored, tmp_path):
    build_release()
    study = Study.objects.first()

    output = analyze("--study", study.pk, "--out", tmp_path)

    assert not (tmp_path / "accuracy.csv").exists() and "accuracy." not in output
    with pytest.raises(CommandError, match="--plan reads every answer"):
        analyze("--study", study.pk, "--plan", "biasmedqa-accuracy", "--out", tmp_path)
    with pytest.raises(CommandError, match="invalid choice"):
        analyze("--plan", "nonsense", "--out", tmp_path)


def test_analyze_says_when_a_plan_asked_for_has_no_scored_answers(tmp_path):
    output = analyze("--plan", "biasmedqa-accuracy", "--out", tmp_path)

    assert "biasmedqa-accuracy: no scored answers, accuracy.csv not written" in output
    assert not (tmp_path / "accuracy.csv").exists()


# --- Analysis runs and the run page ---------------------------------------------------------------------------


@pytest.fixture
def analyst():
    return AnalystFactory()


@pytest.fixture
def plan_run(scored, analyst, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        run = services.start_analysis(study=None, user=analyst)
    run.refresh_from_db()
    assert run.status == AnalysisRun.Status.DONE, run.error
    return run


def test_a_run_stores_the_plan_table_as_analyze_writes_it(plan_run, tmp_path):
    analyze("--out", tmp_path)

    assert plan_run.plan_tables == {"accuracy.csv": (tmp_path / "accuracy.csv").read_text(encoding="utf-8")}


def test_a_run_of_one_study_computes_no_plan(scored, analyst, django_capture_on_commit_callbacks):
    build_release()
    study = Study.objects.first()
    with django_capture_on_commit_callbacks(execute=True):
        run = services.start_analysis(study=study, user=analyst)

    run.refresh_from_db()
    assert run.status == AnalysisRun.Status.DONE and run.plan_tables == {}


def test_the_run_page_shows_the_accuracy_table_and_plot_with_downloads(client, analyst, plan_run):
    client.force_login(analyst)

    page = client.get(reverse("analysis:run", args=[plan_run.pk]))

    content = page.content.decode()
    [section] = page.context["plan_sections"]
    table = section["table"]
    assert table.title == "BiasMedQA: accuracy by bias and mitigation" and table.total == 4
    assert table.columns == ["source", "bias", "mitigation", "n", "correct", "non response", "accuracy", "95% CI",
                             "non response rate", "drop abs", "drop rel"]  # fmt: skip
    assert table.rows[1][:7] == ["gpt-4-0613", "recency", "none", "4", "1", "1", "0.333"]
    csv_url = reverse("analysis:table_csv", args=[plan_run.pk, "accuracy"])
    assert csv_url == f"/analysis/runs/{plan_run.pk}/accuracy.csv" and csv_url in content
    assert f'<img src="{section["svg"]}"' in content and section["png"] in content
    assert "Wilson score interval" in content


def test_the_accuracy_table_and_plot_download(client, analyst, plan_run):
    client.force_login(analyst)

    csv = client.get(reverse("analysis:table_csv", args=[plan_run.pk, "accuracy"]))
    svg = client.get(reverse("analysis:plan_plot", args=[plan_run.pk, "accuracy", "svg"]))
    png = client.get(reverse("analysis:plan_plot", args=[plan_run.pk, "accuracy", "png"]))

    assert csv.status_code == 200 and csv["Content-Type"] == "text/csv; charset=utf-8"
    assert csv["Content-Disposition"] == f'attachment; filename="analysis-{plan_run.pk}-accuracy.csv"'
    assert csv.content.decode() == plan_run.plan_tables["accuracy.csv"]
    assert svg.status_code == 200 and svg["Content-Type"] == "image/svg+xml" and b"<svg" in svg.content
    assert png.status_code == 200 and png.content.startswith(b"\x89PNG\r\n\x1a\n")
    assert client.get(reverse("analysis:plan_plot", args=[plan_run.pk, "nothing", "svg"])).status_code == 404


def test_a_run_without_plan_data_has_no_accuracy_section(client, analyst, django_capture_on_commit_callbacks):
    build_release()
    with django_capture_on_commit_callbacks(execute=True):
        run = services.start_analysis(study=None, user=analyst)
    client.force_login(analyst)

    page = client.get(reverse("analysis:run", args=[run.pk]))

    assert page.context["plan_sections"] == [] and b"accuracy.csv" not in page.content
    assert b"Wilson" not in page.content
    assert client.get(reverse("analysis:table_csv", args=[run.pk, "accuracy"])).status_code == 404
    assert client.get(reverse("analysis:plan_plot", args=[run.pk, "accuracy", "svg"])).status_code == 404


def test_plan_pages_refuse_raters_and_the_wrong_method(client, plan_run):
    from tests.factories import RaterFactory

    urls = [reverse("analysis:table_csv", args=[plan_run.pk, "accuracy"]),
            reverse("analysis:plan_plot", args=[plan_run.pk, "accuracy", "png"])]  # fmt: skip
    client.force_login(RaterFactory())
    assert [client.get(url).status_code for url in urls] == [403, 403]
    client.force_login(AnalystFactory())
    assert [client.post(url).status_code for url in urls] == [405, 405]
