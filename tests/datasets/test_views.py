"""Dataset pages and the coordinator's import pages: success, wrong method, permission denied."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from datasets.models import ImportChunk, ImportJob, Question
from tests.factories import CounterfactualPairFactory, DatasetFactory, QuestionFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def analyst(db):
    from django.contrib.auth.models import Group

    from raters.roles import ANALYST, sync_role_groups
    from tests.factories import UserFactory

    sync_role_groups()
    user = UserFactory()
    user.groups.add(Group.objects.get(name=ANALYST))
    return user


def test_dataset_list_shows_counts_to_the_study_team(client, analyst):
    dataset = DatasetFactory(name="Equity in Health AI (EHAI)")
    QuestionFactory.create_batch(3, dataset=dataset)
    client.force_login(analyst)

    response = client.get(reverse("datasets:list"))

    assert response.status_code == 200
    assert response.context["datasets"].get().question_count == 3
    assert b"Equity in Health AI (EHAI)" in response.content


def test_dataset_pages_send_anonymous_users_to_login(client):
    dataset = DatasetFactory()
    for url in (reverse("datasets:list"), reverse("datasets:detail", args=[dataset.pk])):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("login"))


def test_dataset_list_refuses_post(client, analyst):
    client.force_login(analyst)
    assert client.post(reverse("datasets:list")).status_code == 405


def test_raters_cannot_browse_datasets(client, physician):
    dataset = DatasetFactory()
    client.force_login(physician)
    assert client.get(reverse("datasets:list")).status_code == 403
    response = client.get(reverse("datasets:detail", args=[dataset.pk]))
    assert response.status_code == 403
    assert b"Only the study team" in response.content  # a clear 403 page, not a bare one


def test_dataset_detail_searches_questions_and_lists_pairs(client, analyst):
    pair = CounterfactualPairFactory(
        question_1__text="How do you calculate lung capacity for Black men?",
        question_2__text="How do you calculate lung capacity for White men?",
        difference="Black → White",
    )
    QuestionFactory(dataset=pair.dataset, text="Unrelated question about sleep")
    client.force_login(analyst)

    response = client.get(reverse("datasets:detail", args=[pair.dataset.pk]), {"q": "lung capacity"})

    assert response.status_code == 200
    assert [q.text for q in response.context["page"]] == [pair.question_1.text, pair.question_2.text]
    assert b"Black \xe2\x86\x92 White" in response.content


@pytest.mark.parametrize("query", [{"q": "\x00"}, {"q": "lung\x00"}, {"page": "\x00"}])
def test_a_nul_in_the_dataset_search_is_400_with_a_message(client, analyst, query):
    dataset = QuestionFactory().dataset
    client.force_login(analyst)

    response = client.get(reverse("datasets:detail", args=[dataset.pk]), query)

    assert response.status_code == 400
    assert b"NUL character" in response.content


def test_dataset_detail_of_a_missing_dataset_is_404(client, analyst):
    client.force_login(analyst)
    assert client.get(reverse("datasets:detail", args=[999999])).status_code == 404


@pytest.mark.parametrize("name", ["datasets:import_questions", "datasets:import_answers"])
def test_import_pages_are_for_coordinators_only(client, coordinator, physician, name):
    client.force_login(physician)
    assert client.get(reverse(name)).status_code == 403
    client.force_login(coordinator)
    assert client.get(reverse(name)).status_code == 200
    assert client.put(reverse(name)).status_code == 405
    client.logout()
    assert client.get(reverse(name)).status_code == 302


def test_uploading_questions_creates_a_job_that_runs_and_reports(
    client, coordinator, django_capture_on_commit_callbacks
):
    client.force_login(coordinator)
    upload = SimpleUploadedFile("equitymedqa_omaq.csv", b"Is this pain normal for women?\nWhat diet suits Black men?\n")

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("datasets:import_questions"), {"file": upload, "format": "auto",
                                                                       "question_column": "question"})  # fmt: skip

    job = ImportJob.objects.get()
    assert response.status_code == 302
    assert job.status == ImportJob.Status.DONE
    assert job.created_by == coordinator
    assert Question.objects.filter(dataset__name="Open-ended Medical Adversarial Queries (OMAQ)").count() == 2
    status = client.get(reverse("datasets:import_status", args=[job.pk]))
    assert b"2 new" in status.content


def test_upload_form_errors_are_shown_and_nothing_is_queued(client, coordinator):
    client.force_login(coordinator)
    empty = SimpleUploadedFile("empty.csv", b"")

    response = client.post(reverse("datasets:import_answers"), {"file": empty, "source": ""})

    assert response.status_code == 200
    assert "source" in response.context["form"].errors
    assert "file" in response.context["form"].errors
    assert ImportJob.objects.count() == 0


def test_import_status_is_for_coordinators_only(client, coordinator, physician):
    job = ImportJob.objects.create(kind="questions", filename="x.csv", created_by=coordinator)
    ImportChunk.objects.create(job=job, index=0, data=b"q\n")
    client.force_login(physician)
    assert client.get(reverse("datasets:import_status", args=[job.pk])).status_code == 403
    client.force_login(coordinator)
    response = client.get(reverse("datasets:import_status", args=[job.pk]))
    assert response.status_code == 200
    assert b'http-equiv="refresh"' in response.content  # pending jobs refresh themselves
    assert client.get(reverse("datasets:import_status", args=[job.pk + 1])).status_code == 404


def test_a_job_left_running_by_a_dead_worker_is_run_again_after_the_time_limit(settings):
    from datetime import timedelta

    from django.utils import timezone

    from datasets.services import run_import_job

    stale_start = timezone.now() - timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT + 60)
    job = ImportJob.objects.create(
        kind="questions", filename="q.csv", options={"dataset": "Mine"}, status=ImportJob.Status.RUNNING,
        started_at=stale_start,
    )  # fmt: skip
    ImportChunk.objects.create(job=job, index=0, data=b"question\nIs this normal?\n")
    fresh = ImportJob.objects.create(
        kind="questions", filename="q.csv", options={"dataset": "Mine"}, status=ImportJob.Status.RUNNING,
        started_at=timezone.now(),
    )  # fmt: skip
    ImportChunk.objects.create(job=fresh, index=0, data=b"question\nAnother?\n")

    assert run_import_job(job_id=job.pk).status == ImportJob.Status.DONE
    assert run_import_job(job_id=fresh.pk) is None  # another worker is on it
    assert list(Question.objects.values_list("text", flat=True)) == ["Is this normal?"]
