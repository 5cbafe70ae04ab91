"""Importing questions and answers: the entry points for commands, upload pages and tasks."""

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from .importers import ImportRejected, ImportReport
from .importers.answers import AnswerOptions, import_answers_file
from .importers.questions import QuestionOptions, parse_questions
from .importers.store import store_questions
from .models import ImportJob


def import_questions(*, data: bytes, filename: str, options: QuestionOptions) -> ImportReport:
    """Import every question (and counterfactual pair) of a file, or nothing: raises ImportRejected."""
    parsed = parse_questions(data, filename, options)
    return store_questions(parsed, ImportReport())


def import_answers(*, data: bytes, filename: str, options: AnswerOptions) -> ImportReport:
    """Attach every answer of a file to its question, or none: raises ImportRejected."""
    return import_answers_file(data, filename, options)


def start_import_job(*, kind: str, filename: str, data: bytes, options: dict, user) -> ImportJob:
    from .tasks import run_import_job

    job = ImportJob.objects.create(kind=kind, filename=filename, content=data, options=options, created_by=user)
    transaction.on_commit(lambda: run_import_job.delay(job.id))
    return job


def run_import_job(*, job_id: int) -> ImportJob | None:
    """Claim a pending job and run it; a job another worker is running is left alone.

    A job still marked running after the task time limit belonged to a worker that died: the import is one
    transaction, so nothing of it was written, and the redelivered task may run it again.
    """
    now = timezone.now()
    stale = now - timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT)
    claimable = Q(status=ImportJob.Status.PENDING) | Q(status=ImportJob.Status.RUNNING, started_at__lt=stale)
    claimed = ImportJob.objects.filter(claimable, id=job_id).update(status=ImportJob.Status.RUNNING, started_at=now)
    if not claimed:
        return None
    job = ImportJob.objects.get(id=job_id)
    data = bytes(job.content)
    try:
        if job.kind == ImportJob.Kind.QUESTIONS:
            report = import_questions(data=data, filename=job.filename, options=QuestionOptions(**job.options))
        else:
            report = import_answers(data=data, filename=job.filename, options=AnswerOptions(**job.options))
    except ImportRejected as rejected:
        job.status = ImportJob.Status.FAILED
        job.errors = [error.as_dict() for error in rejected.errors]
    else:
        job.status = ImportJob.Status.DONE
        job.report = report.as_dict()
        job.content = b""  # The data now lives in the database proper.
    job.finished_at = timezone.now()
    job.save(update_fields=["status", "errors", "report", "content", "finished_at"])
    return job
