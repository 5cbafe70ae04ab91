"""Two kinds of work through the engine at once, on real Celery workers over Redis, against one endpoint of
the stand-in model server (the real `answer` kind of a generation job with a test kind, then two test kinds):
every call of both kinds is stored, and the server never has more requests in flight than the endpoint's
concurrency, whichever kinds they are for.

The worker is started here (not the run's shared one) so it loads the test kinds (ENGINE_KIND_MODULES).
"""

import threading
import time
import uuid

import pytest
from django.db import transaction

from datasets.generation import answer_kind, jobs
from datasets.models import Answer, GenerationJob, settings_fingerprint
from engine import calls, lanes
from engine.models import Call, Endpoint, Lane
from tests import celery_process
from tests.engine import kinds
from tests.factories import AnswerSourceFactory, DatasetFactory, QuestionFactory
from tests.llm_server import FakeLLM

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


class CountingLLM(FakeLLM):
    """Records the most requests it ever had in flight at once, and whether two kinds were ever in flight
    together (told apart by the model each kind asks for)."""

    def __init__(self, **options):
        super().__init__(**options)
        self.in_flight: list[str] = []
        self.peak_in_flight = 0
        self.kinds_together = False
        self._counter = threading.Lock()

    def _respond(self, body: dict) -> tuple[int, dict]:
        kind = body.get("model", "")
        with self._counter:
            self.in_flight.append(kind)
            self.peak_in_flight = max(self.peak_in_flight, len(self.in_flight))
            self.kinds_together |= len(set(self.in_flight)) == 2
        try:
            return super()._respond(body)
        finally:
            with self._counter:
                self.in_flight.remove(kind)


def worker_options(broker, queue: str, **env) -> dict:
    return {
        "queue": queue, "broker_url": broker.broker_url, "database_url": broker.database_url, "pool": "threads",
        "concurrency": 6, "env": {"ENGINE_KIND_MODULES": "tests.engine.kinds", **env},
    }  # fmt: skip


@pytest.fixture
def engine_queue(celery_test_broker):
    """This test's own queue, so only workers that load the test kinds take its lanes."""
    broker = celery_test_broker
    queue = f"equityrate-engine-{uuid.uuid4().hex[:8]}"
    with celery_process.using_broker(broker.app, broker_url=broker.broker_url, queue=queue):
        yield queue


@pytest.fixture
def engine_worker(celery_test_broker, engine_queue, tmp_path):
    options = worker_options(celery_test_broker, engine_queue)
    app = celery_test_broker.app
    with celery_process.running_worker(app, name=engine_queue, log=tmp_path / "worker.log", **options) as worker:
        yield worker


def wait_until_finished(endpoint, worker, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if calls.seconds_until_due(endpoint) is None and not Lane.objects.filter(endpoint=endpoint).exclude(token=""):
            return
        time.sleep(0.2)
    statuses = list(Call.objects.filter(endpoint=endpoint).values_list("kind", "status", "error"))
    pytest.fail(f"the calls did not finish within {seconds} s: {statuses}\n{worker.log_tail()}")


def test_answers_and_another_kind_at_once_never_exceed_the_sources_concurrency(engine_worker):
    """A generation job's `answer` calls and echo calls on the endpoint of one model source."""
    dataset = DatasetFactory(name="Sample")
    for n in range(16):
        QuestionFactory(dataset=dataset, external_id=f"q{n}", text=f"Question {n}?")
    with CountingLLM(latency=0.15) as server:
        source = AnswerSourceFactory(base_url=server.base_url, model_name="fake-model", concurrency=2,
                                     request_timeout_seconds=10)  # fmt: skip
        parameters = jobs.job_parameters(source)
        job = GenerationJob.objects.create(dataset=dataset, source=source, parameters=parameters,
                                           settings_hash=settings_fingerprint(parameters))  # fmt: skip
        endpoint = source.endpoint
        with transaction.atomic():
            # Interleaved, so the lanes meet both kinds throughout rather than one after the other.
            for question in dataset.questions.order_by("id"):
                calls.submit("answer", endpoint, [answer_kind.subject_for(job.id, question.id)],
                             batch=answer_kind.batch_of(job.id))  # fmt: skip
                calls.submit("echo", endpoint, [{"text": f"Echo {question.external_id}"}], batch="echoes")

        wait_until_finished(endpoint, engine_worker, seconds=90)

    made = list(Call.objects.filter(endpoint=endpoint).order_by("id"))
    assert len(made) == 32 and {call.status for call in made} == {Call.Status.DONE}
    answers = {answer.id: answer for answer in Answer.objects.filter(source=source)}
    for call in made:
        if call.kind == "answer":
            answer = answers[call.result["answer"]]
            assert answer.question_id == call.subject["question"]
            assert answer.text == server.answer_for(answer.question.text) and answer.prompt == answer.question.text
        else:
            assert kinds.stored("echo", call.id) == server.answer_for(call.subject["text"]) == call.result["text"]
    assert len(answers) == 16 and len(server.requests) == 32  # each call made once: no retries, no duplicates
    assert server.peak_in_flight == 2  # both lanes worked side by side, never more across both kinds
    assert server.kinds_together  # an answer and an echo were in flight at the same moment
    job.refresh_from_db()
    assert job.status == GenerationJob.Status.DONE


def test_two_kinds_at_once_never_exceed_the_endpoints_concurrency(engine_worker):
    with CountingLLM(latency=0.15) as server:
        endpoint = Endpoint.objects.create(name="shared", base_url=server.base_url, concurrency=2,
                                           request_timeout_seconds=10)  # fmt: skip
        with transaction.atomic():
            for n in range(16):
                calls.submit("echo", endpoint, [{"text": f"Echo {n}"}], batch="echoes")
                calls.submit("judge-like", endpoint, [{"item": n}], batch="judging")
        lanes.dispatch_lanes(endpoint)  # sent twice: a lane held by a live task ignores the second

        wait_until_finished(endpoint, engine_worker, seconds=90)

    made = list(Call.objects.filter(endpoint=endpoint).order_by("id"))
    assert len(made) == 32 and {call.status for call in made} == {Call.Status.DONE}
    for call in made:
        asked = call.subject["text"] if call.kind == "echo" else f"Rate item {call.subject['item']}: is it biased?"
        assert kinds.stored(call.kind, call.id) == server.answer_for(asked) == call.result["text"]
    assert len(server.requests) == 32
    assert server.peak_in_flight == 2 and server.kinds_together
    assert Lane.objects.filter(endpoint=endpoint).count() == 2


def test_calls_of_a_killed_worker_are_made_again_and_stored_once(celery_test_broker, engine_queue, settings, tmp_path):
    """SIGKILL a worker mid-run: a new worker takes the endpoint's lanes over once their heartbeats are stale,
    makes again the calls left in flight once their leases expire, and every call is stored once."""
    margin = 2  # lease = request timeout (3 s) + margin: a dead worker's claims expire within 5 s
    settings.GENERATION_LEASE_MARGIN_SECONDS = margin  # dispatch delays are computed where lanes are sent
    options = worker_options(celery_test_broker, engine_queue, GENERATION_LEASE_MARGIN_SECONDS=str(margin))
    app = celery_test_broker.app
    with CountingLLM(latency=0.2) as server:
        endpoint = Endpoint.objects.create(name="killed", base_url=server.base_url, concurrency=3,
                                           request_timeout_seconds=3)  # fmt: skip
        worker_a = celery_process.start_worker(app, name=f"{engine_queue}-a", log=tmp_path / "a.log", **options)
        try:
            with transaction.atomic():
                for n in range(15):
                    calls.submit("echo", endpoint, [{"text": f"Echo {n}"}])
                    calls.submit("judge-like", endpoint, [{"item": n}])
            done = Call.objects.filter(endpoint=endpoint, status=Call.Status.DONE)
            deadline = time.monotonic() + 30
            while done.count() < 6 and time.monotonic() < deadline:
                time.sleep(0.02)
            while not server.in_flight and time.monotonic() < deadline:
                time.sleep(0.001)
        finally:
            worker_a.kill()  # the crash under test, mid-request
        in_flight = Call.objects.filter(endpoint=endpoint, status=Call.Status.RUNNING).count()
        assert 6 <= done.count() < 30 and in_flight >= 1, worker_a.log_tail()

        with celery_process.running_worker(app, name=f"{engine_queue}-b", log=tmp_path / "b.log", **options) as b:
            wait_until_finished(endpoint, b, seconds=90)

    made = list(Call.objects.filter(endpoint=endpoint))
    assert len(made) == 30 and {call.status for call in made} == {Call.Status.DONE}
    assert all(kinds.stored(call.kind, call.id) == call.result["text"] for call in made)
    assert sum(call.attempts > 1 for call in made) >= in_flight  # the calls left in flight were made again
    assert 30 <= len(server.requests) <= sum(call.attempts for call in made)
    assert server.peak_in_flight <= 3
