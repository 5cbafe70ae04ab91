from celery import shared_task

from . import services


@shared_task(acks_late=True)
def run_import_job(job_id: int) -> str:
    job = services.run_import_job(job_id=job_id)
    return job.status if job else "already claimed"
