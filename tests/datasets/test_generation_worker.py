"""Generation on real Celery workers over Redis, against PostgreSQL and a local chat-completions server.

Jobs are tested in one process in test_generation_engine.py (the engine's mechanism in tests/engine/); here the
engine's lanes run as Celery tasks in worker processes, one of which is killed mid-job, and the broker itself is
restarted under a running job.
"""

import shutil
import socket
import subprocess
import threading
import time
import uuid

import pytest
from django.db.models import Sum

from datasets.generation import jobs
from datasets.models import Answer, GenerationJob
from engine.models import Call, Lane
from tests import celery_process
from tests.factories import AnswerSourceFactory, DatasetFactory, QuestionFactory
from tests.llm_server import FakeLLM

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


class CountingLLM(FakeLLM):
    """FakeLLM that also records the most requests it ever had in flight at once (benchmarks/generation.py too)."""

    def __init__(self, **options):
        super().__init__(**options)
        self.in_flight = 0
        self.peak_in_flight = 0
        self._counter = threading.Lock()
        # A killed worker drops its connections mid-request; the broken pipe is expected, not worth a traceback.
        self._server.handle_error = lambda request, client_address: None

    def _respond(self, body: dict) -> tuple[int, dict]:
        with self._counter:
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            return super()._respond(body)
        finally:
            with self._counter:
                self.in_flight -= 1


def make_dataset(size: int):
    dataset = DatasetFactory(name=f"Generation {uuid.uuid4().hex[:6]}")
    for n in range(size):
        QuestionFactory(dataset=dataset, external_id=f"q{n}", text=f"Question {n}: which dose suits patient {n}?")
    return dataset


def model_source(server, **fields):
    defaults = {"base_url": server.base_url, "model_name": "fake-model", "concurrency": 4,
                "request_timeout_seconds": 10}  # fmt: skip
    return AnswerSourceFactory(**{**defaults, **fields})


def wait_for(condition, *, seconds: float, what: str, workers=(), interval: float = 0.1):
    """Poll the database until `condition()` returns something true; fail with the workers' logs otherwise."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        result = condition()
        if result:
            return result
        time.sleep(interval)
    logs = [f"--- worker {worker.name} (pid {worker.pid}), log tail ---\n{worker.log_tail()}" for worker in workers]
    pytest.fail(f"{what}: not within {seconds:g} s\n" + "\n".join(logs))


def finished_job(job: GenerationJob, *, seconds: float, workers=()) -> GenerationJob:
    def finished():
        job.refresh_from_db()
        return job.is_finished

    wait_for(finished, seconds=seconds, workers=workers,
             what=f"job {job.id} to finish (progress {jobs.job_progress(job).as_dict()})")  # fmt: skip
    return job


def lanes_released(source, *, workers=()) -> None:
    def released():
        return not Lane.objects.filter(endpoint=source.endpoint_id).exclude(token="").exists()

    wait_for(released, seconds=15, what=f"the lanes of {source} to be released", workers=workers)


def assert_one_correct_answer_per_question(dataset, source, server) -> dict[int, tuple[int, str]]:
    answers = list(Answer.objects.filter(source=source).select_related("question"))
    question_ids = [answer.question_id for answer in answers]
    assert len(answers) == dataset.questions.count() == len(set(question_ids))
    for answer in answers:
        assert answer.prompt == answer.question.text
        assert answer.text == server.answer_for(answer.prompt)
    return {answer.question_id: (answer.id, answer.text) for answer in answers}


def test_a_job_runs_on_the_worker_within_the_sources_concurrency(celery_worker, reference_data):
    dataset = make_dataset(30)
    with CountingLLM(latency=0.2) as server:
        source = model_source(server, concurrency=3)
        job = jobs.start_job(dataset=dataset, source=source)  # lanes are sent once this commits

        job = finished_job(job, seconds=60, workers=[celery_worker])
        lanes_released(source, workers=[celery_worker])

    assert job.status == GenerationJob.Status.DONE and job.started_at and job.finished_at
    assert_one_correct_answer_per_question(dataset, source, server)
    progress = jobs.job_progress(job)
    assert (progress.total, progress.done, progress.failed, progress.pending, progress.running) == (30, 30, 0, 0, 0)
    assert progress.percent == 100 and progress.active_lanes == 0
    assert len(server.requests) == 30
    assert server.peak_in_flight == 3  # all lanes worked side by side, and never more than the source allows
    assert Lane.objects.filter(endpoint=source.endpoint_id).count() == 3


def test_a_rerun_on_the_worker_asks_nothing(celery_worker, reference_data):
    dataset = make_dataset(10)
    with CountingLLM() as server:
        source = model_source(server, concurrency=2)
        finished_job(jobs.start_job(dataset=dataset, source=source), seconds=60, workers=[celery_worker])
        lanes_released(source, workers=[celery_worker])
        requests = len(server.requests)

        again = jobs.start_job(dataset=dataset, source=source)
        time.sleep(1)  # were anything sent to the worker, it would have started by now

    assert requests == 10
    assert again.status == GenerationJob.Status.DONE and again.already_present == 10
    assert not jobs.batch_calls(again).exists()
    assert len(server.requests) == 10 and Answer.objects.count() == 10


def test_a_job_survives_its_worker_being_killed(celery_broker, reference_data, settings, tmp_path):
    """SIGKILL a worker mid-job: a new worker takes its lanes over once their heartbeats are stale and asks
    again the questions it left in flight once their leases expire. Nothing is lost, nothing is doubled."""
    margin = 2  # lease = request timeout (3 s) + margin: a dead worker's claims expire within 5 s
    settings.GENERATION_LEASE_MARGIN_SECONDS = margin  # dispatch delays are computed where lanes are sent
    queue = f"equityrate-kill-{uuid.uuid4().hex[:8]}"
    settings.CELERY_GENERATION_QUEUE = queue
    options = {"queue": queue, "broker_url": celery_broker.broker_url, "database_url": celery_broker.database_url,
               "pool": "threads", "concurrency": 6,
               "env": {"GENERATION_LEASE_MARGIN_SECONDS": str(margin)}}  # fmt: skip
    app = celery_broker.app
    dataset = make_dataset(40)
    with CountingLLM(latency=0.2) as server:
        source = model_source(server, concurrency=4, request_timeout_seconds=3)
        worker_a = celery_process.start_worker(app, name=f"{queue}-a", log=tmp_path / "a.log", **options)
        try:
            job = jobs.start_job(dataset=dataset, source=source)
            answered = Answer.objects.filter(source=source)
            wait_for(lambda: answered.count() >= 8, seconds=30, interval=0.02, what="8 answers", workers=[worker_a])
            wait_for(lambda: server.in_flight > 0, seconds=5, interval=0.001, what="a request in flight")
        finally:
            worker_a.kill()  # the crash under test, mid-request (and the clean-up, should a wait fail)
        before = {answer.question_id: (answer.id, answer.text) for answer in answered.all()}
        progress = jobs.job_progress(job)
        assert 8 <= len(before) < 40 and progress.running >= 1, progress.as_dict()
        assert Lane.objects.filter(endpoint=source.endpoint_id).exclude(token="").exists()  # left held by the dead

        with celery_process.running_worker(app, name=f"{queue}-b", log=tmp_path / "b.log", **options) as worker_b:
            job = finished_job(job, seconds=90, workers=[worker_a, worker_b])
            lanes_released(source, workers=[worker_b])

    assert job.status == GenerationJob.Status.DONE
    after = assert_one_correct_answer_per_question(dataset, source, server)
    assert {question: after[question] for question in before} == before  # nothing stored before the kill changed
    assert not jobs.batch_calls(job).exclude(status=Call.Status.DONE).exists()
    resent = jobs.batch_calls(job).filter(attempts__gt=1)
    assert resent.count() >= progress.running  # the questions left in flight were asked again
    attempts = jobs.batch_calls(job).aggregate(total=Sum("attempts"))["total"]
    assert 40 <= len(server.requests) <= attempts  # a claim may die before its request is sent, not after
    assert server.peak_in_flight <= 4
    print(f"\nkilled worker: {len(before)} answers before the kill, {progress.running} in flight; "
          f"{len(server.requests)} requests for 40 questions, {resent.count()} asked twice")  # fmt: skip


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _start_redis(port: int, directory) -> subprocess.Popen:
    server = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", str(directory)],
        stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
    )  # fmt: skip
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return server
        except OSError:
            time.sleep(0.05)
    server.kill()
    pytest.fail(f"redis-server did not listen on port {port}")


def _stop_redis(server: subprocess.Popen) -> None:
    if server.poll() is None:
        server.terminate()  # with no persistence configured, everything it held is gone: queued and unacked tasks
        server.wait(timeout=10)


def _serving_again(app, worker: celery_process.CeleryWorker, restart) -> celery_process.CeleryWorker:
    """The worker once it answers over the restarted broker, or its replacement if it exited meanwhile."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if worker.process.poll() is not None:
            return restart()
        try:
            celery_process.wait_for_worker(app, worker, timeout=2)
            return worker
        except celery_process.WorkerNotReady:
            continue
    pytest.fail(f"the worker neither reconnected nor exited within 60 s:\n{worker.log_tail()}")


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server to run a private broker")
def test_a_job_survives_a_broker_restart(celery_broker, reference_data, settings, tmp_path):
    """Restart the broker, losing everything it held, under a running job.

    On a private redis-server (a free port), so other tests and runs sharing the usual Redis are not disturbed.
    Lanes already running need only the database: they carry on while the broker is down and finish the job.
    With Celery/kombu 5.7 a worker holding unacknowledged tasks does not reconnect: kombu fails restoring them
    to the lost broker, and the worker exits once its running tasks end. Compose's restart policy starts it
    again, as this test does; either way, new jobs run once the broker is back.
    """
    port = _free_port()
    broker = f"redis://127.0.0.1:{port}/0"
    queue = f"equityrate-broker-{uuid.uuid4().hex[:8]}"
    settings.CELERY_GENERATION_QUEUE = queue
    options = {"queue": queue, "broker_url": broker, "database_url": celery_broker.database_url, "concurrency": 6}
    app = celery_broker.app
    redis = _start_redis(port, tmp_path)
    worker = None
    try:
        with celery_process.using_broker(app, broker_url=broker, queue=queue), CountingLLM(latency=0.2) as server:
            worker = celery_process.start_worker(app, name=f"{queue}-a", log=tmp_path / "a.log", **options)
            dataset = make_dataset(80)
            source = model_source(server, concurrency=4)
            job = jobs.start_job(dataset=dataset, source=source)
            answered = Answer.objects.filter(source=source)
            wait_for(lambda: answered.count() >= 8, seconds=30, interval=0.02, what="8 answers", workers=[worker])

            _stop_redis(redis)
            while_down = answered.count()
            time.sleep(2)
            assert while_down < answered.count() < 80  # the lanes work on while the broker is down
            redis = _start_redis(port, tmp_path)
            celery_process.reset_connection_pools(app)

            job = finished_job(job, seconds=60, workers=[worker])
            assert job.status == GenerationJob.Status.DONE
            assert_one_correct_answer_per_question(dataset, source, server)
            assert len(server.requests) == 80 and server.peak_in_flight <= 4
            lanes_released(source, workers=[worker])

            def restart():
                return celery_process.start_worker(app, name=f"{queue}-b", log=tmp_path / "b.log", **options)

            worker = _serving_again(app, worker, restart)
            second = make_dataset(8)
            job = finished_job(jobs.start_job(dataset=second, source=source), seconds=60, workers=[worker])
            assert job.status == GenerationJob.Status.DONE and len(server.requests) == 88
            lanes_released(source, workers=[worker])
            print(f"\nbroker restart: the worker {'reconnected' if worker.name.endswith('-a') else 'was restarted'}")
    finally:
        if worker is not None:
            worker.stop()
        _stop_redis(redis)
