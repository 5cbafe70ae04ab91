"""Datasets, questions, pairs, answer sources and answers through the API; importing questions."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from datasets.models import AnswerSource, Dataset, ImportJob, Question
from tests.api.client import client_for
from tests.factories import (
    AnalystFactory,
    AnswerFactory,
    AnswerSourceFactory,
    CounterfactualPairFactory,
    DatasetFactory,
    OnboardedRaterFactory,
    QuestionFactory,
)

pytestmark = pytest.mark.django_db


def test_datasets_list_their_question_and_pair_counts(coordinator):
    dataset = DatasetFactory(name="Equity in Health AI (EHAI)")
    QuestionFactory.create_batch(3, dataset=dataset)
    CounterfactualPairFactory(dataset=dataset)

    response = client_for(coordinator).get("/api/datasets/")

    [row] = response.json()["results"]
    assert (row["name"], row["question_count"], row["pair_count"]) == ("Equity in Health AI (EHAI)", 5, 1)


def test_a_coordinator_creates_a_dataset(coordinator):
    response = client_for(coordinator).post(
        "/api/datasets/", {"name": "MEDIC", "licence": "CC BY 4.0", "source": "arXiv:2401.00000"}, format="json"
    )

    assert response.status_code == 201
    dataset = Dataset.objects.get(name="MEDIC")
    assert response.json() == {
        "id": dataset.id,
        "name": "MEDIC",
        "description": "",
        "licence": "CC BY 4.0",
        "source": "arXiv:2401.00000",
        "created_at": response.json()["created_at"],
        "question_count": 0,
        "pair_count": 0,
    }


def test_a_dataset_name_already_taken_is_refused(coordinator):
    DatasetFactory(name="MEDIC")
    response = client_for(coordinator).post("/api/datasets/", {"name": "MEDIC"}, format="json")
    assert response.status_code == 400
    assert "name" in response.json()
    assert Dataset.objects.count() == 1


def test_analysts_and_raters_cannot_create_datasets():
    for user in (AnalystFactory(), OnboardedRaterFactory()):
        response = client_for(user).post("/api/datasets/", {"name": "Sneaky"}, format="json")
        assert response.status_code == 403
    assert not Dataset.objects.exists()


def test_importing_questions_queues_a_job_whose_status_url_shows_the_report(
    coordinator, django_capture_on_commit_callbacks
):
    upload = SimpleUploadedFile("equitymedqa_omaq.csv", b"Is this pain normal for women?\nWhat diet suits Black men?\n")
    client = client_for(coordinator)

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/api/datasets/import/", {"file": upload, "format": "auto"}, format="multipart")

    assert response.status_code == 202
    job = ImportJob.objects.get()
    assert response.json()["id"] == job.id
    assert response.json()["status_url"] == f"http://testserver/api/import-jobs/{job.id}/"
    assert job.created_by == coordinator
    assert job.options["format"] == "auto"
    status = client.get(response.json()["status_url"]).json()
    assert status["status"] == "done"
    assert status["report"]["questions_created"] == 2
    assert Question.objects.filter(dataset__name="Open-ended Medical Adversarial Queries (OMAQ)").count() == 2


def test_a_rejected_import_shows_its_errors_by_line(coordinator, django_capture_on_commit_callbacks):
    upload = SimpleUploadedFile("mine.csv", b"a,b,c\n")
    client = client_for(coordinator)

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/api/datasets/import/", {"file": upload, "dataset": "Mine"}, format="multipart")

    status = client.get(response.json()["status_url"]).json()
    assert status["status"] == "failed"
    assert status["errors"][0]["line"] == 1
    assert "found 3" in status["errors"][0]["message"]
    assert not Question.objects.exists()


def test_an_import_with_a_lone_surrogate_fails_with_its_line(coordinator, django_capture_on_commit_callbacks):
    data = b'{"id": "1", "question": "What helps?"}\n{"id": "2", "question": "Pain \\ud800?"}\n'
    client = client_for(coordinator)

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/api/datasets/import/", {"file": SimpleUploadedFile("q.jsonl", data),
                                                         "dataset": "Mine"}, format="multipart")  # fmt: skip

    assert response.status_code == 202
    status = client.get(response.json()["status_url"]).json()
    assert status["status"] == "failed"
    assert [error["line"] for error in status["errors"]] == [2]
    assert "lone surrogate" in status["errors"][0]["message"]
    assert not Question.objects.exists()


def test_an_empty_upload_or_unknown_format_is_400_and_nothing_is_queued(coordinator):
    client = client_for(coordinator)
    empty = client.post("/api/datasets/import/", {"file": SimpleUploadedFile("e.csv", b"")}, format="multipart")
    bad_format = client.post(
        "/api/datasets/import/", {"file": SimpleUploadedFile("q.csv", b"q\n"), "format": "xml"}, format="multipart"
    )
    missing = client.post("/api/datasets/import/", {}, format="multipart")

    assert (empty.status_code, bad_format.status_code, missing.status_code) == (400, 400, 400)
    assert "file" in empty.json()
    assert "format" in bad_format.json()
    assert "file" in missing.json()
    assert not ImportJob.objects.exists()


def test_only_coordinators_import(physician):
    upload = SimpleUploadedFile("q.csv", b"q\n")
    for user in (AnalystFactory(), physician):
        response = client_for(user).post("/api/datasets/import/", {"file": upload}, format="multipart")
        assert response.status_code == 403
    assert not ImportJob.objects.exists()


def test_questions_filter_by_dataset_and_search_text_or_id(coordinator):
    dataset = DatasetFactory()
    wanted = QuestionFactory(dataset=dataset, text="How is sickle cell disease treated?", external_id="q-7")
    QuestionFactory(dataset=dataset, text="What causes migraines?")
    QuestionFactory(text="Is sickle cell disease inherited?")  # another dataset
    AnswerFactory(question=wanted)
    client = client_for(coordinator)

    by_text = client.get("/api/questions/", {"dataset": dataset.id, "search": "SICKLE"}).json()
    by_id = client.get("/api/questions/", {"search": "q-7"}).json()

    assert [row["id"] for row in by_text["results"]] == [wanted.id]
    assert by_text["results"][0]["answer_count"] == 1
    assert by_text["results"][0]["dataset"] == dataset.id
    assert [row["id"] for row in by_id["results"]] == [wanted.id]


def test_a_malformed_filter_is_400_naming_the_parameter(coordinator):
    response = client_for(coordinator).get("/api/questions/", {"dataset": "seven"})
    assert response.status_code == 400
    assert "dataset" in response.json()


def test_pairs_show_both_questions_and_filter_by_dataset(coordinator):
    pair = CounterfactualPairFactory(difference="Black men → White men")
    CounterfactualPairFactory()

    response = client_for(coordinator).get("/api/pairs/", {"dataset": pair.dataset_id})

    [row] = response.json()["results"]
    assert row["difference"] == "Black men → White men"
    assert row["question_1"] == {"id": pair.question_1.id, "external_id": pair.question_1.external_id,
                                 "text": pair.question_1.text}  # fmt: skip
    assert row["question_2"]["id"] == pair.question_2.id


def test_answer_sources_are_listed_with_their_settings(coordinator):
    AnswerSourceFactory(name="Med-PaLM 2", model_name="med-palm-2", parameters={"temperature": 0})

    response = client_for(coordinator).get("/api/answer-sources/")

    [row] = response.json()["results"]
    assert (row["name"], row["kind"], row["parameters"]) == ("Med-PaLM 2", AnswerSource.Kind.MODEL, {"temperature": 0})


def test_answers_carry_their_provenance_and_filter_by_dataset_and_source():
    author = OnboardedRaterFactory(username="dr-jones")
    answer = AnswerFactory(
        model_name="gpt-4o-2024-08-06",
        prompt="Answer briefly.",
        parameters={"temperature": 0.2},
        latency_ms=1234,
        author=author,
        provenance_note="Generated by the project's answer task.",
    )
    AnswerFactory(question=answer.question)  # same dataset, other source
    AnswerFactory(source=answer.source)  # same source, other dataset
    client = client_for(AnalystFactory())

    response = client.get("/api/answers/", {"dataset": answer.question.dataset_id, "source": answer.source_id})

    [row] = response.json()["results"]
    assert row["id"] == answer.id
    assert row["model_name"] == "gpt-4o-2024-08-06"
    assert row["prompt"] == "Answer briefly."
    assert row["parameters"] == {"temperature": 0.2}
    assert row["settings_hash"] == answer.settings_hash
    assert row["latency_ms"] == 1234
    assert row["provenance_note"] == "Generated by the project's answer task."
    assert row["source_name"] == answer.source.name
    assert row["author"] == author.rater_profile.pseudonym
    assert "dr-jones" not in response.content.decode()
