"""What the answer-generation pages show beside a job's progress: recent jobs, the worker notice, provenance rows.

datasets.generation (on the model-call engine) decides what a job does; this module only shapes it for pages,
the API and the command.
"""

import json

from django.db.models import Count, Q
from django.utils import timezone

from engine.models import Call

from .generation import answer_kind, jobs
from .models import GenerationJob

FAILURES_SHOWN = 200

NO_WORKER = (
    "No Celery worker is answering, so this job is waiting. Start one with celery -A config worker "
    "(see docs/deployment.md); the job continues when it starts."
)
IDLE_GRACE_SECONDS = 10
IDLE_WORKERS = (
    "Celery workers are answering, but none is working on this job: they may be busy with other work, or its "
    "queued tasks were lost (after a broker restart, say). Resume sends them again."
)

PARAMETER_LABELS = {
    "model": "Model requested",
    "temperature": "Temperature",
    "max_tokens": "Max tokens",
    "system_prompt": "System prompt",
    "prompt_template": "Prompt template",
    "logprobs": "Log-probabilities requested",
    "top_logprobs": "Top log-probabilities requested",
}


def recent_jobs(limit: int = 20) -> list[GenerationJob]:
    """The latest jobs with the counts of their calls (`task_total`, `task_done`, `task_failed`), in two queries."""
    recent = list(GenerationJob.objects.select_related("dataset", "source")[:limit])
    batches = {answer_kind.batch_of(job.id): job for job in recent}
    for job in recent:
        job.task_total = job.task_done = job.task_failed = 0
    counts = (
        Call.objects.filter(kind=answer_kind.KIND, batch__in=batches)
        .values("batch")
        .annotate(
            total=Count("id"),
            done=Count("id", filter=Q(status=Call.Status.DONE)),
            failed=Count("id", filter=Q(status=Call.Status.FAILED)),
        )  # fmt: skip
    )
    for row in counts:
        job = batches[row["batch"]]
        job.task_total, job.task_done, job.task_failed = row["total"], row["done"], row["failed"]
    return recent


def worker_notice(job: GenerationJob, progress: jobs.JobProgress) -> dict | None:
    """Why an unfinished job is not moving, when it is not: {"kind": "no-worker" | "idle", "text", "detail"}.

    With eager Celery (no broker) the work runs in the process that starts it, so there is nothing to say.
    """
    if job.is_finished:
        return None
    status = jobs.worker_status()
    if status["mode"] == "eager":
        return None
    if not status["workers"]:
        return {"kind": "no-worker", "text": NO_WORKER, "detail": status.get("error", "")}
    if progress.active_lanes == 0 and progress.pending + progress.running > 0 and _quiet_for_a_while(job, progress):
        return {"kind": "idle", "text": IDLE_WORKERS, "detail": ""}
    return None


def _quiet_for_a_while(job: GenerationJob, progress: jobs.JobProgress) -> bool:
    """A lane takes a moment to start (a broker polled once a second, a busy worker): no alarm before that."""
    last_sign = max(filter(None, [job.created_at, progress.last_heartbeat]))
    return (timezone.now() - last_sign).total_seconds() > IDLE_GRACE_SECONDS


def progress_payload(job: GenerationJob, progress: jobs.JobProgress) -> dict:
    """What the job page's script (and anyone polling) needs: status, counts and the worker notice."""
    notice = worker_notice(job, progress)
    return {
        "id": job.id,
        "status": job.status,
        "status_display": job.get_status_display(),
        "finished": job.is_finished,
        "progress": progress.as_dict(),
        "worker_warning": notice["text"] if notice else None,
        "worker_notice": notice["kind"] if notice else None,
        "worker_detail": notice["detail"] if notice else "",
    }


def parameter_rows(parameters: dict) -> list[tuple[str, str]]:
    """An answer's generation settings as (label, readable text), known settings first and in a fixed order."""
    known = [(label, readable(parameters[key])) for key, label in PARAMETER_LABELS.items() if key in parameters]
    others = [(key, readable(value)) for key, value in sorted(parameters.items()) if key not in PARAMETER_LABELS]
    return known + others


def readable(value: object) -> str:
    """A setting as a person reads it: yes/no, "key: value" pairs, a list's items; "" for nothing set."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return ""
    if isinstance(value, dict):
        return "; ".join(f"{key}: {readable(item)}" for key, item in value.items())
    if isinstance(value, list):
        return ", ".join(readable(item) for item in value)
    return str(value)


def metadata_rows(metadata: dict) -> list[tuple[str, str]]:
    """A question's metadata as (key, text): strings as they are, anything else as JSON."""
    return [
        (key, value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))
        for key, value in (metadata or {}).items()
    ]
