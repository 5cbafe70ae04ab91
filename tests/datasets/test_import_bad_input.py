"""Files the database cannot hold (NUL, lone surrogates, deep nesting, NaN): line-numbered rejections, never a crash.

Through the service, the commands and an import job; a job that fails for any reason ends `failed` with a message.
"""

import json
import logging

import pytest
from django.core.management import CommandError, call_command

from datasets.importers import ImportRejected
from datasets.importers.answers import AnswerOptions
from datasets.importers.questions import QuestionOptions
from datasets.models import Answer, Dataset, ImportChunk, ImportJob, Question
from datasets.services import import_answers, import_questions, run_import_job, start_import_job
from tests.factories import QuestionFactory

pytestmark = pytest.mark.django_db

GOOD = '{"id": "1", "question": "What helps with back pain?"}'
DEEP = "[" * 100_000 + "]" * 100_000
# (line 2 of a JSONL question file, what the rejection says)
BAD_JSONL_LINES = [
    pytest.param('{"id": "2", "question": "Pain\\u0000?"}', "NUL character", id="nul-escape"),
    pytest.param('{"id": "2", "question": "Pain \\ud800?"}', "lone surrogate", id="lone-surrogate"),
    pytest.param('{"id": "2", "question": "Pain?", "notes": {"\\ud83d": 1}}', "lone surrogate", id="surrogate-key"),
    pytest.param('{"id": "2", "question": "Pain?", "deep": ' + DEEP + "}", "nested", id="deep-nesting-recursion"),
    pytest.param('{"id": "2", "question": "Pain?", "deep": ' + "[" * 40 + "]" * 40 + "}", "nested", id="nesting-depth"),
    pytest.param('{"id": "2", "question": "Pain?", "score": NaN}', "NaN", id="nan"),
    pytest.param('{"id": "2", "question": "Pain?", "score": 1e999}', "too large", id="infinity"),
    pytest.param('{"id": "2", "question": "Pain?", "n": ' + "9" * 5000 + "}", "not valid JSON", id="huge-integer"),
    pytest.param('{"id": "2", "question": ["Pain?"]}', "is empty", id="question-not-text"),
]


def jsonl(*lines: str) -> bytes:
    return "\n".join(lines).encode() + b"\n"


@pytest.mark.parametrize(("line", "message"), BAD_JSONL_LINES)
def test_a_question_row_the_database_cannot_hold_is_rejected_at_its_line(line, message):
    with pytest.raises(ImportRejected) as rejected:
        import_questions(data=jsonl(GOOD, line, GOOD.replace('"1"', '"3"')), filename="q.jsonl",
                         options=QuestionOptions(dataset="Mine"))  # fmt: skip

    assert [error.line for error in rejected.value.errors] == [2]
    assert message in rejected.value.errors[0].message
    assert Question.objects.count() == 0 and Dataset.objects.count() == 0


def test_every_bad_row_gets_its_own_line():
    lines = [GOOD, '{"id": "2", "question": "A\\u0000"}', '{"id": "3", "question": "B\\udfff"}', "[" * 5000, GOOD]

    with pytest.raises(ImportRejected) as rejected:
        import_questions(data=jsonl(*lines), filename="q.jsonl", options=QuestionOptions(dataset="Mine"))

    assert [error.line for error in rejected.value.errors] == [2, 3, 4]


def test_a_nul_byte_in_a_csv_file_is_rejected_at_its_line():
    with pytest.raises(ImportRejected) as rejected:
        import_questions(data=b"id,question\n1,What helps?\n2,Wh\x00y?\n", filename="q.csv",
                         options=QuestionOptions(dataset="Mine"))  # fmt: skip

    assert [str(error) for error in rejected.value.errors] == [
        "line 3: the file contains NUL bytes: is it a binary file or UTF-16?"
    ]


@pytest.mark.parametrize(
    ("data", "filename", "message"),
    [
        pytest.param(
            b'question_id,answer,parameters\nq1,Rest.,"{""t"": ""\\u0000""}"\n', "a.csv", "NUL", id="nul-in-parameters"
        ),  # fmt: skip
        pytest.param(
            b'question_id,answer,parameters\nq1,Rest.,"' + b"[" * 50_000 + b'"\n',
            "a.csv",
            "nested",
            id="deep-parameters",
        ),  # fmt: skip
        pytest.param(
            b'{"question_id": "q1", "answer": "Rest \\ud800"}\n', "a.jsonl", "lone surrogate", id="surrogate-in-answer"
        ),  # fmt: skip
        pytest.param(
            b'{"question_id": "q1", "answer": {"text": "Rest"}}\n', "a.jsonl", "must be text", id="answer-not-text"
        ),  # fmt: skip
        pytest.param(
            b'{"question_id": ["q1"], "answer": "Rest"}\n', "a.jsonl", "must be text", id="question-id-not-text"
        ),  # fmt: skip
    ],
)
def test_an_answer_row_the_database_cannot_hold_is_rejected_at_its_line(data, filename, message):
    QuestionFactory(external_id="q1")
    line = 1 if filename.endswith(".jsonl") else 2

    with pytest.raises(ImportRejected) as rejected:
        import_answers(data=data, filename=filename, options=AnswerOptions(source="Med-PaLM 2"))

    assert [error.line for error in rejected.value.errors] == [line]
    assert message in rejected.value.errors[0].message
    assert Answer.objects.count() == 0


@pytest.mark.parametrize(("line", "message"), BAD_JSONL_LINES[:4])
def test_the_import_commands_report_bad_rows_without_a_traceback(tmp_path, line, message):
    questions = tmp_path / "q.jsonl"
    questions.write_bytes(jsonl(GOOD, line))
    answers = tmp_path / "a.jsonl"
    answers.write_bytes(jsonl('{"question_id": "q1", "answer": "Rest."}', line.replace('"question"', '"answer"')))
    QuestionFactory(external_id="q1")

    with pytest.raises(CommandError, match=r"line 2: .*" + message):
        call_command("import_questions", str(questions), "--dataset", "Mine")
    with pytest.raises(CommandError, match=r"line 2: .*" + message):
        call_command("import_answers", str(answers), "--source", "Med-PaLM 2")


def stored_job(data: bytes, filename: str = "q.jsonl", options=None) -> ImportJob:
    pieces = [data[start : start + 7] for start in range(0, len(data), 7)]  # arrives in small pieces
    return start_import_job(kind=ImportJob.Kind.QUESTIONS, filename=filename, chunks=pieces,
                            options=options or {"dataset": "Mine"}, user=None)  # fmt: skip


@pytest.mark.parametrize(("line", "message"), BAD_JSONL_LINES[:4])
def test_an_import_job_with_a_bad_row_ends_failed_with_the_line(line, message):
    job = run_import_job(job_id=stored_job(jsonl(GOOD, line)).pk)

    assert job.status == ImportJob.Status.FAILED
    assert [error["line"] for error in job.errors] == [2]
    assert message in job.errors[0]["message"]
    assert job.finished_at is not None
    assert not ImportChunk.objects.filter(job=job).exists()


def test_an_unexpected_error_inside_an_import_fails_the_job_with_a_message(monkeypatch, caplog):
    def broken(*args, **kwargs):
        raise RuntimeError("the disk caught fire")

    monkeypatch.setattr("datasets.importers.store.describe_difference", broken)
    job = stored_job(b"id,question,pair\n1,Pain in men?,Pain in women?\n", "pairs.csv",
                     {"dataset": "Mine", "pair_column": "pair"})  # fmt: skip

    with caplog.at_level(logging.ERROR, logger="datasets.services"):
        job = run_import_job(job_id=job.pk)

    job.refresh_from_db()
    assert job.status == ImportJob.Status.FAILED
    assert job.errors == [{"line": 0, "message": job.errors[0]["message"]}]
    assert "unexpected error (RuntimeError)" in job.errors[0]["message"]
    assert "the disk caught fire" in caplog.text  # the traceback goes to the log, not to the coordinator
    assert Question.objects.count() == 0 and Dataset.objects.count() == 0


def test_bad_options_on_a_job_fail_it_instead_of_leaving_it_running():
    job = stored_job(jsonl(GOOD), options={"dataset": "Mine", "no_such_option": 1})

    job = run_import_job(job_id=job.pk)

    assert job.status == ImportJob.Status.FAILED
    assert "unexpected error (TypeError)" in job.errors[0]["message"]


def test_a_stored_upload_reads_back_byte_for_byte_across_chunks(settings):
    from datasets import services

    data = "".join(json.dumps({"id": str(n), "question": f"Question {n} " + "é" * 300}) + "\n" for n in range(8000))
    job = stored_job(data.encode())

    assert ImportChunk.objects.filter(job=job).count() == -(-len(data.encode()) // services.IMPORT_CHUNK_BYTES)
    with services._open_stored_file(job.pk) as stream:
        assert stream.read() == data.encode()
    assert run_import_job(job_id=job.pk).report["questions_created"] == 8000
