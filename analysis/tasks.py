from celery import shared_task

from . import services


@shared_task(acks_late=True)
def run_analysis(run_id: int) -> str:
    run = services.run_analysis(run_id=run_id)
    return run.status if run else "already claimed"
