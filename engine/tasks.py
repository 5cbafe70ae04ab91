from celery import shared_task
from celery.signals import worker_ready

from . import lanes


# No time limit: a lane hands over to a fresh task after GENERATION_LANE_BUDGET_SECONDS instead, and each
# request has its own timeout.
@shared_task(acks_late=True, time_limit=None, soft_time_limit=None)
def run_engine_lane(endpoint_id: int, index: int) -> str:
    reason = lanes.run_lane(endpoint_id, index)
    if reason == "handed over":
        run_engine_lane.apply_async((endpoint_id, index), **lanes.queue_options())
    return reason


@worker_ready.connect
def resume_engine_on_worker_start(**_):
    """Calls whose workers died (or were never running) continue as soon as any worker starts."""
    lanes.resume_unfinished()
