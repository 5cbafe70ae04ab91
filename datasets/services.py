"""Importing questions and answers: the entry points for commands, upload pages and tasks."""

import io
import logging
from collections.abc import Iterable

from django.db import transaction

from jobs.models import task_time_limit

from .importers import ImportRejected, ImportReport
from .importers.answers import AnswerOptions, import_answers_file
from .importers.questions import QuestionOptions
from .importers.reading import Source
from .importers.store import import_question_file
from .models import ImportChunk, ImportJob

logger = logging.getLogger(__name__)

IMPORT_CHUNK_BYTES = 1024 * 1024


def import_questions(*, data: Source, filename: str, options: QuestionOptions) -> ImportReport:
    """Import every question (and counterfactual pair) of a file, or nothing: raises ImportRejected.

    `data` is the file's bytes or a function that opens it; the file is read twice, as a stream.
    """
    return import_question_file(data, filename, options)


def import_answers(*, data: Source, filename: str, options: AnswerOptions) -> ImportReport:
    """Attach every answer of a file to its question, or none: raises ImportRejected."""
    return import_answers_file(data, filename, options)


def start_import_job(*, kind: str, filename: str, chunks: Iterable[bytes], options: dict, user) -> ImportJob:
    """Store an upload (as it comes, a chunk at a time) on a new job and queue the job."""
    from .tasks import run_import_job

    with transaction.atomic():
        job = ImportJob.objects.create(kind=kind, filename=filename, options=options, created_by=user)
        for index, piece in enumerate(_rechunked(chunks)):
            ImportChunk.objects.create(job=job, index=index, data=piece)
        transaction.on_commit(lambda: run_import_job.delay(job.id))
    return job


def _rechunked(chunks: Iterable[bytes]) -> Iterable[bytes]:
    """Pieces of IMPORT_CHUNK_BYTES (the last shorter) from pieces of any size."""
    buffer = bytearray()
    for chunk in chunks:
        buffer += chunk
        while len(buffer) >= IMPORT_CHUNK_BYTES:
            yield bytes(buffer[:IMPORT_CHUNK_BYTES])
            del buffer[:IMPORT_CHUNK_BYTES]
    if buffer:
        yield bytes(buffer)


class _StoredFile(io.RawIOBase):
    """A job's stored upload as a binary stream, fetching one chunk at a time from the database."""

    def __init__(self, job_id: int):
        self.job_id = job_id
        self.index = 0
        self.pending = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while not self.pending:
            data = ImportChunk.objects.filter(job_id=self.job_id, index=self.index).values_list("data", flat=True)
            piece = data.first()
            if piece is None:
                return 0
            self.pending = memoryview(bytes(piece))
            self.index += 1
        size = min(len(buffer), len(self.pending))
        buffer[:size] = self.pending[:size]
        self.pending = self.pending[size:]
        return size


def _open_stored_file(job_id: int):
    return io.BufferedReader(_StoredFile(job_id), buffer_size=64 * 1024)


def run_import_job(*, job_id: int) -> ImportJob | None:
    """Claim a pending job and run it; a job another worker is running is left alone.

    A job still marked running after the task time limit belonged to a worker that died: the import is one
    transaction, so nothing of it was written, and the redelivered task may run it again. A job ends done or
    failed, whatever goes wrong: an unexpected error fails it with a message (the traceback goes to the log).
    """
    if not ImportJob.claim(job_id, stale_after=task_time_limit()):
        return None
    job = ImportJob.objects.get(id=job_id)
    try:
        report = _import_stored_file(job)
    except ImportRejected as rejected:
        errors = [error.as_dict() for error in rejected.errors]
        if rejected.omitted:
            errors.append({"line": 0, "message": f"... and {rejected.omitted} more problems not listed"})
        job.fail(errors=errors)
    except Exception as error:
        logger.exception("import job %s failed", job.id)
        message = (
            f"The import stopped on an unexpected error ({type(error).__name__}); nothing was imported. "
            "The details are in the server log: tell the administrator."
        )
        job.fail(errors=[{"line": 0, "message": message}])
    else:
        job.finish(report=report.as_dict())
    job.chunks.all().delete()  # The data now lives in the database proper, or was rejected.
    return job


def _import_stored_file(job: ImportJob) -> ImportReport:
    def opener():
        return _open_stored_file(job.id)

    if job.kind == ImportJob.Kind.QUESTIONS:
        return import_questions(data=opener, filename=job.filename, options=QuestionOptions(**job.options))
    return import_answers(data=opener, filename=job.filename, options=AnswerOptions(**job.options))
