"""Migration 0011 moves every generation task onto an engine call (and back), so no job's work is lost when
GenerationTask goes (0012). The historical task table is created inside the test's transaction."""

import importlib

import pytest
from django.db import connection
from django.db.migrations.loader import MigrationLoader
from django.utils import timezone

from datasets.generation import jobs
from datasets.models import GenerationJob
from engine.models import Call
from tests.factories import AnswerFactory, AnswerSourceFactory, DatasetFactory, QuestionFactory

pytestmark = pytest.mark.django_db

migration = importlib.import_module("datasets.migrations.0011_generation_tasks_to_calls")


@pytest.fixture
def state_apps():
    """The models as they were at 0011, with the task table back (dropped again when the test rolls back)."""
    apps = MigrationLoader(connection).project_state(("datasets", "0011_generation_tasks_to_calls")).apps
    with connection.schema_editor() as editor:
        editor.create_model(apps.get_model("datasets", "GenerationTask"))
    return apps


def make_job(source, dataset, **fields):
    parameters = jobs.job_parameters(source)
    return GenerationJob.objects.create(dataset=dataset, source=source, parameters=parameters, settings_hash="h",
                                        **fields)  # fmt: skip


def test_tasks_become_calls_of_the_jobs_batch_and_back(state_apps):
    Task = state_apps.get_model("datasets", "GenerationTask")
    dataset = DatasetFactory()
    questions = [QuestionFactory(dataset=dataset) for _ in range(5)]
    source = AnswerSourceFactory(base_url="http://127.0.0.1:9/v1", model_name="m")
    job = make_job(source, dataset, status=GenerationJob.Status.RUNNING)
    cancelled = make_job(source, dataset, status=GenerationJob.Status.CANCELLED, cancelled_at=timezone.now())
    answer = AnswerFactory(question=questions[0], source=source)
    history = [{"at": "2026-01-01T00:00:00+00:00", "attempt": 1, "error": "HTTP 500"}]
    backoff = timezone.now()
    rows = [
        (job, questions[0], {"status": "done", "attempts": 1, "answer_id": answer.id}),
        (job, questions[1], {"status": "running", "attempts": 2, "claimed_by": "a dead worker"}),
        (job, questions[2], {"status": "pending", "attempts": 1, "not_before": backoff, "history": history}),
        (job, questions[3], {"status": "failed", "attempts": 5, "error": "HTTP 401: no", "history": history}),
        (cancelled, questions[4], {"status": "pending"}),
    ]
    for of_job, question, fields in rows:
        Task.objects.create(job_id=of_job.id, source_id=source.id, question_id=question.id, **fields)

    migration.tasks_to_calls(state_apps, None)

    made = {call.subject["question"]: call for call in Call.objects.filter(kind="answer")}
    assert {call.batch for call in made.values()} == {f"generation-job:{job.id}", f"generation-job:{cancelled.id}"}
    assert all(call.endpoint_id == source.endpoint_id for call in made.values())
    done, in_flight, backing_off, failed, not_asked = (made[question.id] for question in questions)
    assert (done.status, done.result, done.subject) == (
        "done",
        {"answer": answer.id},
        {"job": job.id, "question": questions[0].id},
    )
    assert (in_flight.status, in_flight.attempts, in_flight.lease_expires_at) == ("pending", 2, None)
    assert (backing_off.status, backing_off.not_before, backing_off.history) == ("pending", backoff, history)
    assert (failed.status, failed.attempts, failed.error, failed.history) == ("failed", 5, "HTTP 401: no", history)
    assert not_asked.status == "cancelled"  # its job was cancelled: never asked
    progress = jobs.job_progress(job)
    assert (progress.total, progress.done, progress.failed, progress.pending) == (4, 1, 1, 2)

    Task.objects.all().delete()
    migration.calls_to_tasks(state_apps, None)

    assert not Call.objects.filter(kind="answer").exists()
    back = {task.question_id: task for task in Task.objects.all()}
    assert [back[question.id].status for question in questions] == ["done", "pending", "pending", "failed", "pending"]
    assert back[questions[0].id].answer_id == answer.id and back[questions[3].id].error == "HTTP 401: no"
