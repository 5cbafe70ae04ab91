"""The generation engine in one process: jobs, claims, retries, refusals, idempotency.

Lanes run in the test process here (`run_lane` directly); tests/datasets/test_generation_worker.py runs
them on real Celery workers over Redis, including a worker killed mid-job.
"""

from datetime import timedelta

import pytest
from django.utils import timezone

from config.key_hosts import parse_key_hosts
from datasets.generation import jobs, lanes, work
from datasets.models import Answer, GenerationJob, GenerationLane, GenerationTask
from tests.factories import AnswerFactory, AnswerSourceFactory, DatasetFactory, QuestionFactory
from tests.llm_server import FakeLLM

pytestmark = pytest.mark.django_db


@pytest.fixture
def dataset():
    dataset = DatasetFactory(name="Sample")
    for n in range(6):
        QuestionFactory(dataset=dataset, external_id=f"q{n}", text=f"Question {n}: is this treatment right?")
    return dataset


def model_source(server, **fields):
    defaults = {"base_url": server.base_url, "model_name": "fake-model", "concurrency": 2,
                "request_timeout_seconds": 5, "system_prompt": "Be brief.",
                "prompt_template": "Q: {question}"}  # fmt: skip
    return AnswerSourceFactory(**{**defaults, **fields})


def drain(source):
    """Run the source's lanes one after another in this process until nothing is left."""
    return [lanes.run_lane(source.id, index) for index in range(source.concurrency)]


def test_a_job_answers_every_question_once_with_full_provenance(dataset, django_capture_on_commit_callbacks):
    with FakeLLM() as server:
        source = model_source(server, logprobs=True, top_logprobs=2)
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            job = jobs.start_job(dataset=dataset, source=source)
        assert len(callbacks) == 1  # lanes are dispatched only once the job is committed
        assert drain(source)[0] == "no work left"

    job.refresh_from_db()
    assert job.status == GenerationJob.Status.DONE and job.started_at and job.finished_at
    answers = Answer.objects.filter(source=source).order_by("question__external_id")
    assert answers.count() == 6 and len(server.requests) == 6
    answer = answers[0]
    assert answer.text == "Generated answer to: Q: Question 0: is this treatment right?"
    assert answer.prompt == "Q: Question 0: is this treatment right?"
    assert answer.parameters == source.generation_settings() == job.parameters
    assert answer.settings_hash == job.settings_hash
    assert answer.model_name == "fake-model" and answer.latency_ms is not None and answer.generated_at
    metadata = answer.response_metadata
    assert metadata["finish_reason"] == "stop" and metadata["usage"]["completion_tokens"] == 6
    assert metadata["messages"][0] == {"role": "system", "content": "Be brief."}
    assert metadata["logprobs"][0]["token"] == "Yes" and metadata["generation_job"] == job.id
    assert server.requests[0]["temperature"] == 0.0 and server.requests[0]["top_logprobs"] == 2
    progress = jobs.job_progress(job)
    assert (progress.total, progress.done, progress.failed, progress.pending, progress.percent) == (6, 6, 0, 0, 100)


def test_a_rerun_asks_nothing_and_counts_what_is_there(dataset):
    with FakeLLM() as server:
        source = model_source(server)
        jobs.start_job(dataset=dataset, source=source)
        drain(source)
        again = jobs.start_job(dataset=dataset, source=source)
        drain(source)
    assert len(server.requests) == 6 and Answer.objects.count() == 6
    assert again.status == GenerationJob.Status.DONE and again.already_present == 6 and not again.tasks.exists()


def test_changed_settings_make_a_new_set_of_answers(dataset):
    with FakeLLM() as server:
        source = model_source(server)
        jobs.start_job(dataset=dataset, source=source)
        drain(source)
        source.temperature = 0.7
        source.save()
        job = jobs.start_job(dataset=dataset, source=source)
        drain(source)
    assert job.tasks.count() == 6 and Answer.objects.filter(source=source).count() == 12
    assert set(Answer.objects.values_list("parameters__temperature", flat=True)) == {0.0, 0.7}


def test_a_second_job_for_the_same_answers_is_refused_while_one_runs(dataset):
    source = AnswerSourceFactory(base_url="http://127.0.0.1:9/v1", model_name="m")
    first = jobs.start_job(dataset=dataset, source=source)
    with pytest.raises(jobs.GenerationRefused, match=f"Job {first.id} is already generating") as refused:
        jobs.start_job(dataset=dataset, source=source)
    assert refused.value.job == first


@pytest.mark.parametrize(
    "fields, message",
    [({"kind": "physician"}, "is not a model source"), ({"base_url": ""}, "has no endpoint")],
)
def test_sources_that_cannot_generate_are_refused(dataset, fields, message):
    source = AnswerSourceFactory(**{"base_url": "http://127.0.0.1:9/v1", **fields})
    with pytest.raises(jobs.GenerationRefused, match=message):
        jobs.start_job(dataset=dataset, source=source)
    assert not GenerationJob.objects.exists()


def test_refusals_and_empty_answers_are_kept_and_flagged(dataset):
    QuestionFactory(dataset=dataset, external_id="r", text="REFUSE to answer this")
    with FakeLLM() as server:
        source = model_source(server)
        job = jobs.start_job(dataset=dataset, source=source)
        drain(source)
    refused = Answer.objects.get(question__external_id="r")
    assert refused.refusal and refused.text == "" and refused.response_metadata["finish_reason"] == "content_filter"
    assert Answer.objects.filter(refusal=False).count() == 6
    assert jobs.job_progress(job).refusals == 1


def test_passing_errors_are_retried_with_backoff_then_answered(dataset, settings):
    settings.GENERATION_BACKOFF_SECONDS = 0  # no waiting in tests; backoff_seconds is checked below
    with FakeLLM(failures=3, failure_status=503) as server:
        source = model_source(server, concurrency=1)
        job = jobs.start_job(dataset=dataset, source=source)
        drain(source)
    assert len(server.requests) == 9 and Answer.objects.count() == 6
    retried = GenerationTask.objects.get(job=job, attempts=4)
    assert retried.status == "done" and [entry["attempt"] for entry in retried.history] == [1, 2, 3]
    assert retried.history[0]["error"] == "HTTP 503: simulated failure (503)"


def test_errors_beyond_the_attempt_budget_fail_with_the_servers_message_and_can_be_retried(dataset, settings):
    settings.GENERATION_BACKOFF_SECONDS = 0
    settings.GENERATION_MAX_ATTEMPTS = 2
    with FakeLLM(failures=2, failure_status=429) as server:
        source = model_source(server, concurrency=1)
        job = jobs.start_job(dataset=dataset, source=source)
        drain(source)
        job.refresh_from_db()
        failed = list(jobs.failed_tasks(job))
        assert job.status == "done" and len(failed) == 1
        assert failed[0].error == "HTTP 429: simulated failure (429)" and failed[0].attempts == 2

        assert jobs.retry_failed(job) == 1
        job.refresh_from_db()
        assert job.status == "running" and job.finished_at is None
        drain(source)
    job.refresh_from_db()
    assert job.status == "done" and Answer.objects.count() == 6 and not jobs.failed_tasks(job).exists()


def test_errors_that_retrying_cannot_fix_fail_at_once(dataset):
    with FakeLLM(failures=100, failure_status=401) as server:
        source = model_source(server, concurrency=1)
        job = jobs.start_job(dataset=dataset, source=source)
        drain(source)
    assert len(server.requests) == 6 and jobs.job_progress(job).failed == 6
    assert not Answer.objects.exists()


def test_a_missing_api_key_fails_without_sending_anything(dataset, monkeypatch, settings):
    settings.MODEL_KEY_HOSTS = parse_key_hosts("EQUITYRATE_TEST_API_KEY=127.0.0.1")
    monkeypatch.delenv("EQUITYRATE_TEST_API_KEY", raising=False)
    with FakeLLM() as server:
        source = model_source(server, api_key_env="EQUITYRATE_TEST_API_KEY", concurrency=1)
        job = jobs.start_job(dataset=dataset, source=source)
        drain(source)
    assert not server.requests
    assert set(job.tasks.values_list("error", flat=True)) == {
        "the environment variable EQUITYRATE_TEST_API_KEY (the source's API key) is not set"
    }


def test_backoff_doubles_within_bounds_and_honours_retry_after(settings):
    from datasets.llm_client import LLMError

    settings.GENERATION_BACKOFF_SECONDS, settings.GENERATION_BACKOFF_MAX_SECONDS = 2, 60
    for attempts, ceiling in [(1, 2), (2, 4), (3, 8), (6, 60), (12, 60)]:
        delays = [work.backoff_seconds(attempts) for _ in range(50)]
        assert all(ceiling / 2 <= delay <= ceiling for delay in delays)
    asked = LLMError("HTTP 429", status=429, retryable=True, retry_after=30)
    assert work.backoff_seconds(1, asked) == 30


def test_a_question_whose_worker_died_is_claimed_again_after_its_lease(dataset):
    source = AnswerSourceFactory(base_url="http://127.0.0.1:9/v1", model_name="m", request_timeout_seconds=5)
    jobs.start_job(dataset=dataset, source=source)
    first = work.claim_next_task(source, "worker A")
    assert first.status == "running" and first.attempts == 1
    others = [work.claim_next_task(source, "worker B") for _ in range(5)]
    assert first.id not in {task.id for task in others}
    assert work.claim_next_task(source, "worker B") is None
    assert 0 < work.seconds_until_due(source) <= 5 + 15

    GenerationTask.objects.filter(id=first.id).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    again = work.claim_next_task(source, "worker B")
    assert again.id == first.id and again.attempts == 2 and again.claimed_by == "worker B"


def test_a_late_duplicate_answer_is_not_stored_twice(dataset):
    """A presumed-dead worker answering after its question was reclaimed leaves one answer."""
    from datasets.llm_client import Completion

    source = AnswerSourceFactory(base_url="http://127.0.0.1:9/v1", model_name="m")
    jobs.start_job(dataset=dataset, source=source)
    task = work.claim_next_task(source, "A")
    GenerationTask.objects.filter(id=task.id).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    retaken = work.claim_next_task(source, "B")
    messages = [{"role": "user", "content": task.question.text}]
    first = work.store_answer(retaken, source, Completion("from B", "stop", "m", 10), messages)
    second = work.store_answer(task, source, Completion("from A", "stop", "m", 10), messages)
    assert first == second and Answer.objects.filter(question=task.question).count() == 1
    assert Answer.objects.get(question=task.question).text == "from B"


def test_cancelling_stops_pending_questions(dataset):
    with FakeLLM() as server:
        source = model_source(server)
        job = jobs.start_job(dataset=dataset, source=source)
        assert jobs.cancel_job(job) == 1
        assert drain(source)[0] == "no work left"
    job.refresh_from_db()
    assert job.status == "cancelled" and not server.requests and jobs.job_progress(job).pending == 6
    with pytest.raises(jobs.GenerationRefused, match="cancelled"):
        jobs.retry_failed(job)


def test_a_lane_held_by_a_live_task_is_left_alone_and_a_stale_one_is_taken_over(dataset):
    source = AnswerSourceFactory(base_url="http://127.0.0.1:9/v1", model_name="m", concurrency=1)
    GenerationLane.objects.create(source=source, index=0, token="x", heartbeat_at=timezone.now())
    assert lanes.run_lane(source.id, 0) == "lane held by a live task"
    GenerationLane.objects.filter(source=source).update(heartbeat_at=timezone.now() - timedelta(minutes=5))
    assert lanes.run_lane(source.id, 0) == "no work left"
    assert GenerationLane.objects.get(source=source).token == ""  # released on the way out


def test_lanes_above_the_concurrency_retire(dataset):
    source = AnswerSourceFactory(base_url="http://127.0.0.1:9/v1", model_name="m", concurrency=1)
    jobs.start_job(dataset=dataset, source=source)
    assert lanes.run_lane(source.id, 3) == "lane retired (concurrency lowered)"


def test_a_lane_hands_over_when_its_budget_runs_out(dataset):
    with FakeLLM() as server:
        source = model_source(server, concurrency=1)
        jobs.start_job(dataset=dataset, source=source)
        assert lanes.run_lane(source.id, 0, budget_seconds=0) == "handed over"
        assert lanes.run_lane(source.id, 0) == "no work left"
    assert Answer.objects.count() == 6


def test_the_rate_limit_spaces_requests(dataset):
    with FakeLLM() as server:
        source = model_source(server, concurrency=1, rate_limit_per_minute=600)  # one every 0.1 s
        jobs.start_job(dataset=dataset, source=source)
        started = timezone.now()
        drain(source)
        elapsed = (timezone.now() - started).total_seconds()
    assert len(server.requests) == 6 and elapsed >= 0.5


def test_existing_answers_with_other_settings_do_not_count(dataset):
    source = AnswerSourceFactory(base_url="http://127.0.0.1:9/v1", model_name="m")
    AnswerFactory(question=dataset.questions.first(), source=source, parameters={"temperature": 1})
    job = jobs.start_job(dataset=dataset, source=source)
    assert job.already_present == 0 and job.tasks.count() == 6


def test_a_connection_broken_mid_answer_is_retried_not_a_crash(dataset, settings):
    """A server that closes the connection without answering: recorded and retried, the lane goes on."""
    import socket
    import threading

    settings.GENERATION_BACKOFF_SECONDS = 0
    settings.GENERATION_MAX_ATTEMPTS = 2
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def hang_up():
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            connection.recv(65536)
            connection.close()

    threading.Thread(target=hang_up, daemon=True).start()
    source = AnswerSourceFactory(base_url=f"http://127.0.0.1:{port}/v1", model_name="m", concurrency=1)
    job = jobs.start_job(dataset=dataset, source=source)
    try:
        assert lanes.run_lane(source.id, 0) == "no work left"
    finally:
        listener.close()
    failed = list(jobs.failed_tasks(job))
    assert len(failed) == 6 and all(task.attempts == 2 for task in failed)
    assert "the connection to" in failed[0].error and "broke" in failed[0].error


def test_only_api_key_variables_can_be_read(dataset, monkeypatch):
    from django.core.exceptions import ValidationError

    monkeypatch.setenv("SECRET_KEY", "server secret")
    with FakeLLM() as server:
        source = model_source(server, api_key_env="SECRET_KEY", concurrency=1)
        with pytest.raises(ValidationError, match="must end in _API_KEY or _API_TOKEN"):
            source.full_clean()
        job = jobs.start_job(dataset=dataset, source=source)  # saved without validation, e.g. by a script
        drain(source)
    assert not server.requests  # the secret was never sent
    assert "is not accepted as an API-key variable" in jobs.failed_tasks(job).first().error


def test_sources_need_at_least_one_lane():
    from django.core.exceptions import ValidationError

    source = AnswerSourceFactory.build(base_url="http://127.0.0.1:9/v1", model_name="m", concurrency=0)
    with pytest.raises(ValidationError, match="concurrency"):
        source.full_clean()


def test_a_retry_after_a_cancel_is_refused(dataset):
    source = AnswerSourceFactory(base_url="http://127.0.0.1:9/v1", model_name="m")
    job = jobs.start_job(dataset=dataset, source=source)
    job.tasks.filter(id=job.tasks.first().id).update(status=GenerationTask.Status.FAILED)
    stale_copy = GenerationJob.objects.get(pk=job.pk)
    jobs.cancel_job(job)
    with pytest.raises(jobs.GenerationRefused, match="cancelled"):
        jobs.retry_failed(stale_copy)  # its cancelled_at is from before the cancel
    assert GenerationJob.objects.get(pk=job.pk).status == "cancelled"
