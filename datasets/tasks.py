from celery import shared_task
from celery.signals import worker_ready
from django.conf import settings

from . import services
from .generation import lanes


@shared_task(acks_late=True)
def run_import_job(job_id: int) -> str:
    job = services.run_import_job(job_id=job_id)
    return job.status if job else "already claimed"


# No time limit: a lane hands over to a fresh task after GENERATION_LANE_BUDGET_SECONDS instead, and each
# request has its own timeout.
@shared_task(acks_late=True, time_limit=None, soft_time_limit=None)
def run_generation_lane(source_id: int, index: int) -> str:
    reason = lanes.run_lane(source_id, index)
    if reason == "handed over":
        queue = settings.CELERY_GENERATION_QUEUE
        run_generation_lane.apply_async((source_id, index), **({"queue": queue} if queue else {}))
    return reason


@worker_ready.connect
def resume_generation_on_worker_start(**_):
    """Jobs whose workers died (or were never running) continue as soon as any worker starts."""
    lanes.resume_unfinished_jobs()


@shared_task(acks_late=True)
def run_variant_run(run_id: int) -> str:
    from .variants.runs import run_variant_run as run

    result = run(run_id)
    return result.status if result else "already claimed"
