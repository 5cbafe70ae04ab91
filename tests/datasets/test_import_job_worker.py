"""Upload → Celery task on a real worker over Redis → status page, against PostgreSQL."""

import time

import pytest
from django.urls import reverse

from datasets.models import CounterfactualPair, ImportJob, Question

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def _wait_until_finished(job_id: int, seconds: float = 30) -> ImportJob:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        job = ImportJob.objects.get(pk=job_id)
        if job.is_finished:
            return job
        time.sleep(0.2)
    pytest.fail(f"import job {job_id} did not finish in {seconds} s (status {job.status})")


def test_uploaded_pair_file_is_imported_by_the_worker(
    celery_worker, reference_data, client, coordinator, shared_datasets
):
    client.force_login(coordinator)
    path = shared_datasets / "equitymedqa" / "voak222_equitymedqa_paired_prompt_review_sample.csv"
    with path.open("rb") as upload:
        response = client.post(
            reverse("datasets:import_questions"),
            {"file": upload, "format": "auto", "question_column": "prompt_a", "pair_column": "prompt_b",
             "id_column": "record_id", "dataset_column": "dataset_name"},
        )  # fmt: skip
    job = ImportJob.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("datasets:import_status", args=[job.pk])

    job = _wait_until_finished(job.pk)

    assert job.status == ImportJob.Status.DONE, job.errors
    assert job.report["pairs_created"] == 20
    assert CounterfactualPair.objects.count() == 20
    assert Question.objects.count() == 38
    page = client.get(reverse("datasets:import_status", args=[job.pk]))
    assert b"20 new" in page.content


def test_rejected_upload_reports_lines_and_imports_nothing(celery_worker, reference_data, client, coordinator):
    client.force_login(coordinator)
    from django.core.files.uploadedfile import SimpleUploadedFile

    bad = SimpleUploadedFile("pairs.csv", b"How do I treat X in men?,How do I treat X in women?\nOnly one side,\n")
    client.post(reverse("datasets:import_questions"), {"file": bad, "format": "auto", "question_column": "question",
                                                        "dataset": "CC test"})  # fmt: skip
    job = _wait_until_finished(ImportJob.objects.get().pk)

    assert job.status == ImportJob.Status.FAILED
    assert job.errors == [{"line": 2, "message": job.errors[0]["message"]}]
    assert "one side missing" in job.errors[0]["message"]
    assert Question.objects.count() == 0
    page = client.get(reverse("datasets:import_status", args=[job.pk]))
    assert b"Line 2:" in page.content


@pytest.mark.parametrize(
    ("line", "message"),
    [
        pytest.param(b'{"id": "2", "question": "Pain\\u0000?"}', "NUL character", id="nul"),
        pytest.param(b'{"id": "2", "question": "Pain \\ud800?"}', "lone surrogate", id="lone-surrogate"),
        pytest.param(b'{"id": "2", "question": "Pain?", "deep": ' + b"[" * 100_000 + b"}", "nested", id="deep"),
    ],
)
def test_an_upload_the_database_cannot_hold_ends_failed_with_the_line(
    celery_worker, reference_data, client, coordinator, line, message
):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client.force_login(coordinator)
    upload = SimpleUploadedFile("q.jsonl", b'{"id": "1", "question": "What helps?"}\n' + line + b"\n")
    client.post(reverse("datasets:import_questions"), {"file": upload, "format": "auto",
                                                        "question_column": "question", "dataset": "Mine"})  # fmt: skip
    job = _wait_until_finished(ImportJob.objects.get().pk)

    assert job.status == ImportJob.Status.FAILED
    assert [error["line"] for error in job.errors] == [2]
    assert message in job.errors[0]["message"]
    assert Question.objects.count() == 0
    page = client.get(reverse("datasets:import_status", args=[job.pk]))
    assert b"Line 2:" in page.content
