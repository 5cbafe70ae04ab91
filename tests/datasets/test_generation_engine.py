"""Generation jobs on the model-call engine in one process: jobs, retries, refusals, cancellation, idempotency.

The engine's lanes run in the test process here (`run_lane` directly); tests/datasets/test_generation_worker.py
runs them on real Celery workers over Redis, including a worker killed mid-job. The mechanism itself (claims,
leases, lanes, back-off, rate limit) is tested in tests/engine/.
"""

import pytest

from config.key_hosts import parse_key_hosts
from datasets.generation import jobs
from datasets.models import Answer, GenerationJob
from engine import calls, lanes
from engine.models import Call, Endpoint
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
    """Run the lanes of the source's endpoint one after another in this process until nothing is left."""
    endpoint = Endpoint.objects.get(id=source.endpoint_id)
    return [lanes.run_lane(endpoint.id, index) for index in range(endpoint.concurrency)]


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
    assert (
        again.status == GenerationJob.Status.DONE
        and again.already_present == 6
        and not jobs.batch_calls(again).exists()
    )


def test_changed_settings_make_a_new_set_of_answers(dataset):
    with FakeLLM() as server:
        source = model_source(server)
        jobs.start_job(dataset=dataset, source=source)
        drain(source)
        source.temperature = 0.7
        source.save()
        job = jobs.start_job(dataset=dataset, source=source)
        drain(source)
    assert jobs.batch_calls(job).count() == 6 and Answer.objects.filter(source=source).count() == 12
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
    retried = jobs.batch_calls(job).get(attempts=4)
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
        failed = list(jobs.failed_calls(job))
        assert job.status == "done" and len(failed) == 1
        assert failed[0].error == "HTTP 429: simulated failure (429)" and failed[0].attempts == 2

        assert jobs.retry_failed(job) == 1
        job.refresh_from_db()
        assert job.status == "running" and job.finished_at is None
        drain(source)
    job.refresh_from_db()
    assert job.status == "done" and Answer.objects.count() == 6 and not jobs.failed_calls(job).exists()


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
    assert set(jobs.batch_calls(job).values_list("error", flat=True)) == {
        "the environment variable EQUITYRATE_TEST_API_KEY (the source's API key) is not set"
    }


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


def test_existing_answers_with_other_settings_do_not_count(dataset):
    source = AnswerSourceFactory(base_url="http://127.0.0.1:9/v1", model_name="m")
    AnswerFactory(question=dataset.questions.first(), source=source, parameters={"temperature": 1})
    job = jobs.start_job(dataset=dataset, source=source)
    assert job.already_present == 0 and jobs.batch_calls(job).count() == 6


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
    assert "is not accepted as an API-key variable" in jobs.failed_calls(job).first().error


def test_sources_need_at_least_one_lane():
    from django.core.exceptions import ValidationError

    source = AnswerSourceFactory.build(base_url="http://127.0.0.1:9/v1", model_name="m", concurrency=0)
    with pytest.raises(ValidationError, match="concurrency"):
        source.full_clean()


def test_a_retry_after_a_cancel_is_refused(dataset):
    source = AnswerSourceFactory(base_url="http://127.0.0.1:9/v1", model_name="m")
    job = jobs.start_job(dataset=dataset, source=source)
    jobs.batch_calls(job).filter(id=jobs.batch_calls(job).first().id).update(status=Call.Status.FAILED)
    stale_copy = GenerationJob.objects.get(pk=job.pk)
    jobs.cancel_job(job)
    with pytest.raises(jobs.GenerationRefused, match="cancelled"):
        jobs.retry_failed(stale_copy)  # its cancelled_at is from before the cancel
    assert GenerationJob.objects.get(pk=job.pk).status == "cancelled"


def test_a_cancel_keeps_the_answers_in_flight_and_never_asks_a_question_again(dataset, settings):
    from engine.llm_client import Completion, LLMError

    settings.GENERATION_BACKOFF_SECONDS = 0
    with FakeLLM() as server:
        source = model_source(server, concurrency=1)
        job = jobs.start_job(dataset=dataset, source=source)
        endpoint = Endpoint.objects.get(id=source.endpoint_id)
        kept, backing_off = calls.claim_next(endpoint, "A"), calls.claim_next(endpoint, "B")
        assert jobs.cancel_job(job) == 1
        # Its request was sent before the cancel; the reply comes after, and is kept.
        calls.store(kept, Completion("Kept.", "stop", "fake-model", 10))
        # The other one, in flight too, meets a passing error and goes back to the queue...
        assert calls.record_failure(backing_off, LLMError("HTTP 503", status=503, retryable=True)) == "pending"
        drain(source)
    # ...where the answer kind refuses it: the job was cancelled.
    assert list(Answer.objects.values_list("text", flat=True)) == ["Kept."] and not server.requests
    backing_off.refresh_from_db()
    assert backing_off.status == Call.Status.FAILED and backing_off.error == f"generation job {job.id} was cancelled"
    progress = jobs.job_progress(job)
    assert (progress.done, progress.failed, progress.pending, progress.running) == (1, 1, 4, 0)
    job.refresh_from_db()
    assert job.status == GenerationJob.Status.CANCELLED


def test_a_job_whose_calls_have_all_ended_is_finished_when_its_progress_is_read(dataset):
    source = AnswerSourceFactory(base_url="http://127.0.0.1:9/v1", model_name="m")
    job = jobs.start_job(dataset=dataset, source=source)
    # As if its last two calls ended at once and each left the job's end to the other.
    jobs.batch_calls(job).update(status=Call.Status.FAILED)
    assert GenerationJob.objects.get(pk=job.pk).status == GenerationJob.Status.QUEUED

    assert jobs.job_progress(job).failed == 6
    assert job.status == GenerationJob.Status.DONE and GenerationJob.objects.get(pk=job.pk).finished_at
