"""Answer imports: matching rows to questions, provenance, re-imports and rejected files."""

import datetime
import json

import pytest

from datasets.importers import ImportRejected
from datasets.importers.answers import AnswerOptions
from datasets.models import Answer, AnswerSource, CounterfactualPair, Dataset, Question
from datasets.services import import_answers
from tests.factories import AnswerSourceFactory, QuestionFactory

PAIN = "What can I take for back pain?"
COUGH = "How long does a cough last after a cold?"


def import_answer_bytes(data: bytes, filename: str = "answers.csv", source: str = "Med-PaLM 2", **options):
    return import_answers(data=data, filename=filename, options=AnswerOptions(source=source, **options))


def row_counts() -> dict[str, int]:
    models = (Dataset, Question, CounterfactualPair, Answer, AnswerSource)
    return {model.__name__: model.objects.count() for model in models}


@pytest.fixture
def questions(db):
    pain = QuestionFactory(dataset__name="Mine", external_id="q1", text=PAIN)
    cough = QuestionFactory(dataset=pain.dataset, external_id="q2", text=COUGH)
    return pain, cough


def test_answers_attach_by_question_id_and_create_their_source(questions):
    pain, cough = questions
    data = b"question_id,answer,model\nq1,Try paracetamol first.,gpt-4-0613\nq2,About three weeks.,gpt-4-0613\n"

    report = import_answer_bytes(data, source_kind=AnswerSource.Kind.MODEL, provenance_note="Our May run")

    assert (report.rows, report.answers_created) == (2, 2)
    assert report.sources_created == ["Med-PaLM 2"]
    assert report.datasets_used == ["Mine"]
    source = AnswerSource.objects.get()
    assert (source.name, source.kind) == ("Med-PaLM 2", AnswerSource.Kind.MODEL)
    answer = Answer.objects.get(question=pain)
    assert (answer.source, answer.text, answer.model_name) == (source, "Try paracetamol first.", "gpt-4-0613")
    assert answer.provenance_note == "Our May run"
    assert Answer.objects.get(question=cough).text == "About three weeks."


def test_answers_attach_by_exact_question_text(questions):
    pain, cough = questions
    lines = [{"question": COUGH, "answer": "About three weeks."}, {"question": PAIN, "answer": "Rest and ibuprofen."}]
    data = "\n".join(json.dumps(line) for line in lines).encode()

    report = import_answer_bytes(data, filename="answers.jsonl", model="gpt-4o")

    assert report.answers_created == 2
    assert Answer.objects.get(question=pain).text == "Rest and ibuprofen."
    assert Answer.objects.get(question=cough).model_name == "gpt-4o"


def test_reimporting_the_same_answers_adds_nothing(questions):
    data = b"question_id,answer\nq1,Try paracetamol first.\nq2,About three weeks.\n"
    import_answer_bytes(data)
    before = row_counts()

    report = import_answer_bytes(data)

    assert row_counts() == before
    assert (report.answers_created, report.answers_existing, report.sources_created) == (0, 2, [])


def test_a_different_text_for_an_existing_answer_is_rejected_with_its_line(questions):
    import_answer_bytes(b"question_id,answer\nq1,Try paracetamol first.\nq2,About three weeks.\n")
    before = row_counts()

    with pytest.raises(ImportRejected) as rejected:
        import_answer_bytes(b"question_id,answer\nq1,Try paracetamol first.\nq2,About two weeks.\n")

    assert [error.line for error in rejected.value.errors] == [3]
    assert "'Med-PaLM 2' already has a different answer to question 'q2'" in rejected.value.errors[0].message
    assert row_counts() == before
    assert Answer.objects.get(question__external_id="q2").text == "About three weeks."


def test_two_texts_for_one_question_and_settings_in_one_file_are_rejected(questions):
    data = b"question_id,answer\nq1,Try paracetamol first.\nq1,Try ibuprofen first.\n"

    with pytest.raises(ImportRejected) as rejected:
        import_answer_bytes(data)

    assert [error.line for error in rejected.value.errors] == [3]
    assert row_counts()["Answer"] == row_counts()["AnswerSource"] == 0


def test_unknown_question_id_is_rejected_and_the_source_is_not_created(questions):
    before = row_counts()

    with pytest.raises(ImportRejected) as rejected:
        import_answer_bytes(b"question_id,answer\nq1,Rest.\nq404,Nothing.\n")

    assert [str(error) for error in rejected.value.errors] == ["line 3: no question matches the question id 'q404'"]
    assert row_counts() == before


def test_question_id_in_two_datasets_needs_the_dataset_named(db):
    mine = QuestionFactory(dataset__name="Mine", external_id="0", text=PAIN)
    theirs = QuestionFactory(dataset__name="Theirs", external_id="0", text=COUGH)
    data = b"question_id,answer\n0,Rest.\n"

    with pytest.raises(ImportRejected, match=r"line 2: the question id '0' is in several datasets \(Mine, Theirs\)"):
        import_answer_bytes(data)
    import_answer_bytes(data, dataset="Theirs")
    import_answer_bytes(b"question_id,dataset,answer\n0,Mine,Rest.\n", source="Other model")

    assert Answer.objects.get(source__name="Med-PaLM 2").question == theirs
    assert Answer.objects.get(source__name="Other model").question == mine


def test_unknown_dataset_is_rejected(questions):
    with pytest.raises(ImportRejected, match="line 2: no dataset named 'Nowhere'"):
        import_answer_bytes(b"question_id,answer\nq1,Rest.\n", dataset="Nowhere")

    assert Answer.objects.count() == 0


def test_other_generation_settings_make_a_second_answer_in_any_key_order(questions):
    pain, _ = questions
    data = (
        b"question_id,answer,parameters\n"
        b'q1,Try paracetamol first.,"{""temperature"": 0, ""max_tokens"": 150}"\n'
        b'q1,Maybe try paracetamol.,"{""temperature"": 1, ""max_tokens"": 150}"\n'
    )
    import_answer_bytes(data)
    reordered = (
        b'question_id,answer,parameters\nq1,Try paracetamol first.,"{""max_tokens"": 150, ""temperature"": 0}"\n'
    )

    report = import_answer_bytes(reordered)

    assert (report.answers_created, report.answers_existing) == (0, 1)
    answers = Answer.objects.filter(question=pain).order_by("text")
    assert [a.parameters["temperature"] for a in answers] == [1, 0]
    assert answers[0].settings_hash != answers[1].settings_hash


def test_provenance_columns_are_parsed_and_other_columns_kept(questions):
    row = {
        "question_id": "q1",
        "answer": "Try paracetamol first.",
        "prompt": "Answer briefly: What can I take for back pain?",
        "parameters": {"temperature": 0},
        "generated_at": "2024-05-01T10:30:00+02:00",
        "latency_ms": "1234",
        "finish_reason": "stop",
    }

    import_answer_bytes(json.dumps(row).encode(), filename="answers.jsonl")

    answer = Answer.objects.get()
    assert answer.generated_at == datetime.datetime(2024, 5, 1, 8, 30, tzinfo=datetime.UTC)
    assert answer.latency_ms == 1234
    assert answer.parameters == {"temperature": 0}
    assert answer.prompt == row["prompt"]
    assert answer.response_metadata == {"finish_reason": "stop"}


def test_empty_answers_are_kept_and_counted(questions):
    report = import_answer_bytes(b"question_id,answer\nq1,\nq2,About three weeks.\n")

    assert (report.answers_created, report.empty_answers) == (2, 1)
    assert Answer.objects.get(question__external_id="q1").text == ""
    assert "Empty answers (kept): 1" in report.summary_lines()


def test_answers_are_added_to_an_existing_source(questions):
    source = AnswerSourceFactory(name="Physicians", kind=AnswerSource.Kind.PHYSICIAN)

    report = import_answer_bytes(b"question_id,answer\nq1,Rest.\n", source="Physicians")

    assert report.sources_created == []
    assert Answer.objects.get().source == source


@pytest.mark.parametrize(
    ("data", "line", "message"),
    [
        (b"question_id,text\nq1,Rest.\n", 1, "missing column 'answer'"),
        (b"id,answer\nq1,Rest.\n", 1, "name each row's question"),
        (b"question_id,answer\nq1,Rest.\n,Ice.\n", 3, "the row names no question"),
        (b"question_id,answer,parameters\nq1,Rest.,temperature=0\n", 2, "parameters must be a JSON object"),
        (b"question_id,answer,parameters\nq1,Rest.,[0]\n", 2, "parameters must be a JSON object"),
        (b"question_id,answer,generated_at\nq1,Rest.,yesterday\n", 2, "is not an ISO 8601 date and time"),
        (b"question_id,answer,generated_at\nq1,Rest.,2024-02-30T10:00:00\n", 2, "is not an ISO 8601 date and time"),
        (b"question_id,answer,latency_ms\nq1,Rest.,fast\n", 2, "latency_ms 'fast' is not a number"),
        (b"question_id,answer,latency_ms\nq1,Rest.,-5\n", 2, "latency_ms '-5' is not a number of milliseconds"),
        (b"question_id,answer,latency_ms\nq1,Rest.,1e12\n", 2, "latency_ms '1e12' is not a number of milliseconds"),
        (b"question_id,answer\nq1,Rest.\n\nq2,Ice.\n", 3, "empty row"),
        ("question_id,answer\nq1,Caf\u00e9.\n".encode("latin-1"), 2, "not valid UTF-8"),
    ],
)
def test_malformed_answer_file_is_rejected_at_its_line_and_changes_nothing(questions, data, line, message):
    before = row_counts()

    with pytest.raises(ImportRejected) as rejected:
        import_answer_bytes(data)

    assert [error.line for error in rejected.value.errors] == [line]
    assert message in rejected.value.errors[0].message
    assert row_counts() == before


def test_an_imported_finish_reason_column_marks_answers_cut_off_at_the_length_limit(questions):
    pain, cough = questions
    data = b"question_id,answer,finish_reason\nq1,Try paracetamol and,length\nq2,About three weeks.,stop\n"

    import_answer_bytes(data)

    assert Answer.objects.get(question=pain).was_cut_off
    assert not Answer.objects.get(question=cough).was_cut_off
