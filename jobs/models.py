"""The job base (jobs/DESIGN.md): what every long-running job row shares.

A job waits, is claimed by one worker, and ends done or failed. The base holds the common fields and one
implementation of these steps; each job declares its own `status` field (its own values and labels) and
names which of its statuses play each part. This module imports no app of ours.
"""

from datetime import timedelta
from typing import Any, ClassVar

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone


def task_time_limit() -> timedelta:
    """How long a Celery task may run: a job still running after this lost its worker."""
    return timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT)


class JobQuerySet(models.QuerySet):
    def live(self) -> "JobQuerySet":
        """Jobs waiting for a worker or running."""
        return self.filter(status__in=[self.model.waiting_status, self.model.running_status])

    def finish(self, **fields: Any) -> int:
        """Mark these jobs done now (with `fields`); returns how many."""
        return self.update(status=self.model.done_status, finished_at=timezone.now(), **fields)

    # Not on the manager (as QuerySet.delete): `objects.finish()` would end every job.
    finish.queryset_only = True  # type: ignore[attr-defined]


class Job(models.Model):
    """Abstract: a job row with a status, who asked for it, and when it was created, started and finished.

    Each job declares `status = models.CharField(max_length=20, choices=Status.choices, default=<waiting>)`
    with its own `Status`; the stored values and labels differ between jobs (an import waits as "pending",
    the others as "queued"; a generation job is cancelled, never failed), so the base only names them.
    """

    # Which of the job's own statuses play each part; a job overrides those that differ.
    waiting_status: ClassVar[str] = "queued"
    running_status: ClassVar[str] = "running"
    done_status: ClassVar[str] = "done"
    failed_status: ClassVar[str | None] = "failed"  # None: the job cannot fail

    status: str  # declared by each job with its own choices (above)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = JobQuerySet.as_manager()

    class Meta:
        abstract = True

    @property
    def is_finished(self) -> bool:
        """Neither waiting nor running: done, failed or (a generation job) cancelled."""
        return self.status not in {self.waiting_status, self.running_status}

    @classmethod
    def claim(cls, pk: int, *, stale_after: timedelta | None = None, **fields: Any) -> bool:
        """Start the job (running, `started_at` now, and `fields`) if it is waiting; whether this caller won.

        One conditional UPDATE decides, so of two workers claiming at once exactly one wins. With
        `stale_after`, a job running since longer ago than that is claimable too: its worker died.
        """
        now = timezone.now()
        claimable = Q(status=cls.waiting_status)
        if stale_after is not None:
            claimable |= Q(status=cls.running_status, started_at__lt=now - stale_after)
        claimed = cls.objects.filter(claimable, pk=pk).update(status=cls.running_status, started_at=now, **fields)
        return claimed == 1

    def finish(self, **fields: Any) -> None:
        """Done now, saving `fields` (the job's results) in the same UPDATE."""
        self._end(self.done_status, fields)

    def fail(self, **fields: Any) -> None:
        """Failed now, saving `fields` (the job's error text or errors) in the same UPDATE."""
        if self.failed_status is None:
            raise TypeError(f"a {type(self).__name__} cannot fail")
        self._end(self.failed_status, fields)

    def _end(self, status: str, fields: dict[str, Any]) -> None:
        fields = {"status": status, "finished_at": timezone.now(), **fields}
        for name, value in fields.items():
            setattr(self, name, value)
        self.save(update_fields=list(fields))
