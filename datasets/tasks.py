from celery import shared_task

from . import services


@shared_task(acks_late=True)
def run_import_job(job_id: int) -> str:
    job = services.run_import_job(job_id=job_id)
    return job.status if job else "already claimed"


@shared_task(acks_late=True)
def run_variant_run(run_id: int) -> str:
    from .variants.runs import run_variant_run as run

    result = run(run_id)
    return result.status if result else "already claimed"
