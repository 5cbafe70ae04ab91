"""Imports stream: memory stays bounded whatever the file's size (the file is read twice, a line at a time)."""

import tracemalloc

import pytest

from datasets.importers.answers import AnswerOptions
from datasets.importers.questions import QuestionOptions
from datasets.models import Answer, Dataset, Question
from datasets.services import import_answers, import_questions

pytestmark = pytest.mark.django_db

ROWS = 12_000
PADDING = "x" * 2000  # ~2 KB a row: a 24 MB file


def peak_bytes(function) -> int:
    tracemalloc.start()
    try:
        function()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_question_file_many_times_the_memory_bound_imports_within_it(tmp_path):
    path = tmp_path / "questions.csv"
    with path.open("w") as handle:
        handle.write("id,question\n")
        for n in range(ROWS):
            handle.write(f"{n},Question {n}: {PADDING}\n")
    size = path.stat().st_size

    peak = peak_bytes(lambda: import_questions(data=lambda: path.open("rb"), filename=path.name,
                                               options=QuestionOptions(dataset="Big")))  # fmt: skip

    assert Question.objects.count() == ROWS
    assert size > 20 * 1024 * 1024
    assert peak < size / 3, f"peak {peak / 2**20:.1f} MiB for a {size / 2**20:.1f} MiB file"


def test_an_answer_file_many_times_the_memory_bound_imports_within_it(tmp_path):
    dataset = Dataset.objects.create(name="Big")
    Question.objects.bulk_create(
        Question(dataset=dataset, external_id=str(n), text=f"Q{n}", text_hash=f"{n:064d}") for n in range(ROWS)
    )
    path = tmp_path / "answers.jsonl"
    with path.open("w") as handle:
        for n in range(ROWS):
            handle.write(f'{{"question_id": "{n}", "answer": "Answer {n}: {PADDING}", "parameters": {{"t": 0}}}}\n')
    size = path.stat().st_size

    peak = peak_bytes(lambda: import_answers(data=lambda: path.open("rb"), filename=path.name,
                                             options=AnswerOptions(source="Big model")))  # fmt: skip

    assert Answer.objects.count() == ROWS
    assert peak < size / 3, f"peak {peak / 2**20:.1f} MiB for a {size / 2**20:.1f} MiB file"


def test_line_ends_of_every_kind_still_split_rows_and_quoted_cells_keep_theirs():
    data = b'id,question\r1,"What helps\rwith pain?"\r\n2,Why?\n3,How long?\r'

    report = import_questions(data=data, filename="q.csv", options=QuestionOptions(dataset="Mine"))

    assert report.questions_created == 3
    assert Question.objects.get(external_id="1").text == "What helps\rwith pain?"
