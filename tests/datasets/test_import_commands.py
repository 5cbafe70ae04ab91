"""The import_questions and import_answers management commands."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from datasets.models import Answer, AnswerSource, CounterfactualPair, Question
from tests.factories import QuestionFactory


def run(*args, **options) -> str:
    out = StringIO()
    call_command(*args, stdout=out, **options)
    return out.getvalue()


@pytest.mark.django_db
def test_import_questions_prints_the_report(shared_datasets):
    path = shared_datasets / "equitymedqa" / "voak222_equitymedqa_paired_prompt_review_sample.csv"
    columns = ["--question-column", "prompt_a", "--pair-column", "prompt_b"]
    columns += ["--id-column", "record_id", "--dataset-column", "dataset_name"]

    output = run("import_questions", str(path), *columns)
    again = run("import_questions", str(path), *columns)

    assert "Rows read: 20" in output
    assert "Questions: 38 new, 0 already present" in output
    assert "Counterfactual pairs: 20 new, 0 already present" in output
    assert (
        "Datasets created: Counterfactual Context - LLM (CC-LLM), Counterfactual Context - Manual (CC-Manual)" in output
    )
    assert f"Imported {path}" in output
    assert "Counterfactual pairs: 0 new, 20 already present" in again
    assert CounterfactualPair.objects.count() == 20


@pytest.mark.django_db
def test_import_questions_takes_several_files(shared_datasets):
    folder = shared_datasets / "qpain"

    output = run("import_questions", str(folder / "data_acute_cancer.csv"), str(folder / "data_post_op.csv"))

    assert output.count("Questions: 11 new, 0 already present") == 2
    assert Question.objects.filter(dataset__name="Q-Pain").count() == 22


@pytest.mark.django_db
def test_import_questions_rejection_names_the_line(tmp_path):
    path = tmp_path / "equitymedqa_cc_manual.csv"
    path.write_text("Pain in men?,Pain in women?\nCough in men?,Cough in women?\nFever in men?,\n")

    with pytest.raises(CommandError) as error:
        run("import_questions", str(path))

    assert str(error.value).startswith(f"{path}: Nothing was imported: 1 problem(s).")
    assert "line 3: a pair with one side missing" in str(error.value)
    assert Question.objects.count() == 0


@pytest.mark.django_db
def test_import_questions_options_are_passed_to_the_importer(tmp_path):
    path = tmp_path / "questions.jsonl"
    path.write_text('{"key": "a", "prompt": "What helps with migraine?", "topic": "pain"}\n')

    run("import_questions", str(path), "--dataset", "Migraine", "--question-column", "prompt", "--id-column", "key")

    question = Question.objects.get()
    assert (question.dataset.name, question.external_id, question.metadata) == ("Migraine", "a", {"topic": "pain"})


def test_import_questions_of_a_missing_file_says_so(tmp_path):
    missing = tmp_path / "nowhere.csv"

    with pytest.raises(CommandError, match=f"^{missing}: no such file$"):
        run("import_questions", str(missing))


def test_import_questions_rejects_an_unknown_format(tmp_path):
    with pytest.raises(CommandError, match="invalid choice: 'xlsx'"):
        run("import_questions", str(tmp_path / "q.csv"), "--format", "xlsx")


@pytest.mark.django_db
def test_import_answers_prints_the_report(tmp_path):
    first = QuestionFactory(dataset__name="Mine", external_id="q1")
    QuestionFactory(dataset=first.dataset, external_id="q2")
    path = tmp_path / "answers.csv"
    path.write_text("question_id,answer\nq1,Rest.\nq2,\n")

    output = run("import_answers", str(path), "--source", "Med-PaLM 2", "--source-kind", "model", "--model", "m-2")
    again = run("import_answers", str(path), "--source", "Med-PaLM 2")

    assert "Answer sources created: Med-PaLM 2" in output
    assert "Answers: 2 new, 0 already present" in output
    assert "Empty answers (kept): 1" in output
    assert "Answers: 0 new, 2 already present" in again
    source = AnswerSource.objects.get()
    assert (source.kind, source.model_name) == (AnswerSource.Kind.MODEL, "m-2")
    assert set(Answer.objects.values_list("model_name", flat=True)) == {"m-2"}


@pytest.mark.django_db
def test_import_answers_rejection_names_the_line(tmp_path):
    path = tmp_path / "answers.csv"
    path.write_text("question_id,answer\nq404,Rest.\n")

    with pytest.raises(CommandError, match="line 2: no question matches the question id 'q404'"):
        run("import_answers", str(path), "--source", "Med-PaLM 2")

    assert AnswerSource.objects.count() == 0


def test_import_answers_of_a_missing_file_says_so(tmp_path):
    missing = tmp_path / "nowhere.csv"

    with pytest.raises(CommandError, match=f"^{missing}: no such file$"):
        run("import_answers", str(missing), "--source", "Med-PaLM 2")


def test_import_answers_needs_a_source(tmp_path):
    with pytest.raises(CommandError, match="the following arguments are required: --source"):
        run("import_answers", str(tmp_path / "answers.csv"))
