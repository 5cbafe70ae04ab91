"""The job base (jobs/DESIGN.md) on the real job models: claim, finish, fail, `is_finished`, `live()`."""

import ast
import threading
from datetime import timedelta
from pathlib import Path

import pytest
from django.apps import apps
from django.db import connection, transaction
from django.utils import timezone

from analysis.models import AnalysisRun
from datasets.models import GenerationJob, ImportJob, VariantRun
from jobs.models import Job
from tests.factories import AnswerSourceFactory, DatasetFactory

JOBS_APP = Path(__file__).resolve().parents[2] / "jobs"


def new_job(model: type[Job]) -> Job:
    if model is ImportJob:
        return ImportJob.objects.create(kind=ImportJob.Kind.QUESTIONS, filename="questions.jsonl")
    if model is AnalysisRun:
        return AnalysisRun.objects.create()
    if model is VariantRun:
        return VariantRun.objects.create(generator="biasmedqa", version=1, base_dataset=DatasetFactory())
    return GenerationJob.objects.create(
        dataset=DatasetFactory(), source=AnswerSourceFactory(), parameters={}, settings_hash="0" * 64
    )


ALL_JOBS = [ImportJob, GenerationJob, VariantRun, AnalysisRun]
FAILING_JOBS = [ImportJob, VariantRun, AnalysisRun]


def test_every_job_model_names_statuses_it_declares_and_waits_in_its_waiting_status():
    concrete = {model for model in apps.get_models() if issubclass(model, Job)}
    assert set(ALL_JOBS) <= concrete
    for model in concrete:
        status = model._meta.get_field("status")
        values = {value for value, _ in status.choices}
        named = {model.waiting_status, model.running_status, model.done_status, model.failed_status} - {None}
        assert named <= values, model
        assert status.default == model.waiting_status, model


def test_the_statuses_stay_as_they_were_stored():
    assert (ImportJob.waiting_status, ImportJob.failed_status) == ("pending", "failed")
    assert (GenerationJob.waiting_status, GenerationJob.failed_status) == ("queued", None)
    assert (VariantRun.waiting_status, AnalysisRun.waiting_status) == ("queued", "queued")
    assert ImportJob(status="failed").get_status_display() == "Rejected"
    assert GenerationJob(status="done").get_status_display() == "Finished"


@pytest.mark.django_db
@pytest.mark.parametrize("model", ALL_JOBS)
def test_a_waiting_job_is_claimed_once_with_its_start_time_and_fields(model):
    job = new_job(model)
    assert job.status == model.waiting_status and job.started_at is None and not job.is_finished
    before = timezone.now()

    assert model.claim(job.pk) is True
    assert model.claim(job.pk) is False  # already running

    job.refresh_from_db()
    assert job.status == model.running_status and not job.is_finished
    assert before <= job.started_at <= timezone.now() and job.finished_at is None


@pytest.mark.django_db
def test_a_claim_sets_the_given_fields_in_the_same_update():
    run = AnalysisRun.objects.create(progress=40, step="Old")
    assert AnalysisRun.claim(run.pk, progress=0, step="Loading the ratings")
    run.refresh_from_db()
    assert (run.status, run.progress, run.step) == ("running", 0, "Loading the ratings")


@pytest.mark.django_db
def test_a_claim_of_a_missing_job_is_lost():
    assert ImportJob.claim(123456789) is False


@pytest.mark.django_db
@pytest.mark.parametrize("model", [ImportJob, AnalysisRun])
def test_a_running_job_is_claimed_again_only_when_its_worker_is_presumed_dead(model):
    job = new_job(model)
    recent = timezone.now() - timedelta(minutes=5)
    model.objects.filter(pk=job.pk).update(status=model.running_status, started_at=recent)

    assert model.claim(job.pk) is False  # no staleness given: a running job is never taken
    assert model.claim(job.pk, stale_after=timedelta(minutes=10)) is False  # its worker may still be at it
    assert model.claim(job.pk, stale_after=timedelta(minutes=1)) is True

    job.refresh_from_db()
    assert job.status == model.running_status and job.started_at > recent


@pytest.mark.django_db
@pytest.mark.parametrize("model", ALL_JOBS)
def test_an_ended_job_is_never_claimed_again(model):
    job = new_job(model)
    assert model.claim(job.pk)
    job.finish()
    long_ago = timezone.now() - timedelta(days=1)
    model.objects.filter(pk=job.pk).update(started_at=long_ago)

    assert model.claim(job.pk, stale_after=timedelta(seconds=1)) is False
    job.refresh_from_db()
    assert job.status == model.done_status and job.started_at == long_ago


@pytest.mark.django_db
@pytest.mark.parametrize("model", ALL_JOBS)
def test_finish_marks_the_job_done_with_its_finish_time(model):
    job = new_job(model)
    model.claim(job.pk)
    job.refresh_from_db()

    job.finish()

    assert job.status == model.done_status and job.is_finished
    stored = model.objects.get(pk=job.pk)
    assert stored.status == model.done_status and stored.is_finished
    assert stored.finished_at == job.finished_at and stored.started_at <= stored.finished_at <= timezone.now()


@pytest.mark.django_db
def test_finish_saves_the_results_given_and_nothing_else():
    job = new_job(ImportJob)
    ImportJob.claim(job.pk)
    stale_copy = ImportJob.objects.get(pk=job.pk)
    ImportJob.objects.filter(pk=job.pk).update(filename="renamed.jsonl")

    stale_copy.finish(report={"questions": 3})

    stored = ImportJob.objects.get(pk=job.pk)
    assert stored.report == {"questions": 3} and stored.status == "done"
    assert stored.filename == "renamed.jsonl"  # the copy's old filename was not written back


@pytest.mark.django_db
@pytest.mark.parametrize("model", [VariantRun, AnalysisRun])
def test_fail_marks_the_job_failed_with_its_error_text(model):
    job = new_job(model)
    model.claim(job.pk)
    job.refresh_from_db()
    before = timezone.now()

    job.fail(error="ValueError: no ratings")

    stored = model.objects.get(pk=job.pk)
    assert stored.status == model.failed_status == "failed" and stored.is_finished
    assert stored.error == "ValueError: no ratings"
    assert before <= stored.finished_at <= timezone.now()


@pytest.mark.django_db
def test_a_failed_import_keeps_its_errors_and_reads_rejected():
    job = new_job(ImportJob)
    ImportJob.claim(job.pk)

    job.fail(errors=[{"line": 2, "message": "missing text"}])

    stored = ImportJob.objects.get(pk=job.pk)
    assert stored.errors == [{"line": 2, "message": "missing text"}] and stored.report == {}
    assert stored.get_status_display() == "Rejected" and stored.finished_at is not None


@pytest.mark.django_db
def test_a_generation_job_cannot_fail_and_is_finished_when_cancelled():
    job = new_job(GenerationJob)
    with pytest.raises(TypeError, match="cannot fail"):
        job.fail()
    assert GenerationJob.objects.get(pk=job.pk).status == "queued"

    job.status = GenerationJob.Status.CANCELLED
    assert job.is_finished


@pytest.mark.django_db
@pytest.mark.parametrize("model", ALL_JOBS)
def test_live_jobs_are_those_waiting_or_running(model):
    waiting, running, done = new_job(model), new_job(model), new_job(model)
    model.claim(running.pk)
    model.claim(done.pk)
    done.finish()

    assert set(model.objects.live().values_list("pk", flat=True)) == {waiting.pk, running.pk}


@pytest.mark.django_db
def test_finishing_many_jobs_at_once_counts_them():
    source = AnswerSourceFactory()
    jobs = [
        GenerationJob.objects.create(dataset=DatasetFactory(), source=source, parameters={}, settings_hash="0" * 64)
        for _ in range(3)
    ]
    GenerationJob.claim(jobs[0].pk)

    assert GenerationJob.objects.live().filter(pk__in=[job.pk for job in jobs[:2]]).finish() == 2

    statuses = dict(GenerationJob.objects.values_list("pk", "status"))
    assert [statuses[job.pk] for job in jobs] == ["done", "done", "queued"]
    assert GenerationJob.objects.filter(status="done", finished_at__isnull=True).count() == 0
    assert not hasattr(GenerationJob.objects, "finish")  # as with delete(): a queryset says which jobs


def claim_at_once(model: type[Job], pk: int, callers: int = 2) -> list[bool]:
    """`callers` threads, each on its own database connection, claim the job at the same moment."""
    start = threading.Barrier(callers)
    won: list[bool] = []

    def claim() -> None:
        try:
            start.wait(timeout=10)
            won.append(model.claim(pk))
        finally:
            connection.close()

    threads = [threading.Thread(target=claim) for _ in range(callers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return won


@pytest.mark.postgresql
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("model", [ImportJob, AnalysisRun, VariantRun])
def test_of_two_workers_claiming_at_once_exactly_one_wins(model):
    if connection.vendor != "postgresql":
        pytest.fail("this test needs PostgreSQL (concurrent connections)")
    jobs = [new_job(model) for _ in range(10)]
    for job in jobs:
        assert sorted(claim_at_once(model, job.pk)) == [False, True]
    assert model.objects.filter(status=model.running_status).count() == len(jobs)


@pytest.mark.postgresql
@pytest.mark.django_db(transaction=True)
def test_a_claim_waits_for_a_claim_not_yet_committed_and_then_loses():
    """The row lock decides: the second UPDATE waits for the first transaction, then finds the job running."""
    if connection.vendor != "postgresql":
        pytest.fail("this test needs PostgreSQL (row locks)")
    run = new_job(AnalysisRun)
    first_claimed, commit_first = threading.Event(), threading.Event()
    outcomes: dict[str, bool] = {}

    def first() -> None:
        try:
            with transaction.atomic():
                outcomes["first"] = AnalysisRun.claim(run.pk)
                first_claimed.set()
                commit_first.wait(timeout=10)
        finally:
            connection.close()

    def second() -> None:
        try:
            first_claimed.wait(timeout=10)
            outcomes["second"] = AnalysisRun.claim(run.pk)
        finally:
            connection.close()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    threads[1].join(timeout=1)
    waiting = threads[1].is_alive()  # blocked on the first claim's row lock
    commit_first.set()
    for thread in threads:
        thread.join(timeout=30)

    assert waiting
    assert outcomes == {"first": True, "second": False}
    assert AnalysisRun.objects.get(pk=run.pk).status == "running"


def test_the_jobs_app_imports_no_app_of_ours():
    ours = {path.name for path in JOBS_APP.parent.iterdir() if (path / "__init__.py").exists()} - {"config", "jobs"}
    for path in JOBS_APP.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""] if node.level == 0 else []
            else:
                continue
            assert not {name.split(".")[0] for name in names} & ours, f"{path.name} imports {names}"
