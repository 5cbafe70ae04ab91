"""Answer generation through the API: jobs started, followed, retried, cancelled and resumed; writable sources."""

import pytest

from config.key_hosts import parse_key_hosts
from datasets.generation import answer_kind, jobs
from datasets.models import Answer, AnswerSource, GenerationJob
from engine.models import Call
from tests.api.client import client_for
from tests.datasets.test_generation_engine import drain
from tests.factories import (
    AnalystFactory,
    AnswerFactory,
    AnswerSourceFactory,
    DatasetFactory,
    OnboardedRaterFactory,
    QuestionFactory,
)
from tests.llm_server import FakeLLM

pytestmark = pytest.mark.django_db


@pytest.fixture
def dataset():
    dataset = DatasetFactory(name="Sample")
    for n in range(3):
        QuestionFactory(dataset=dataset, external_id=f"q{n}", text=f"Question {n}: is this dose right?")
    return dataset


def model_source(base_url="http://127.0.0.1:9/v1", **fields):
    defaults = {"base_url": base_url, "model_name": "fake-model", "concurrency": 1, "request_timeout_seconds": 5}
    return AnswerSourceFactory(**{**defaults, **fields})


# --- Generation jobs ---------------------------------------------------------------------------------


def test_a_coordinator_starts_a_job_that_generates_the_answers(
    coordinator, dataset, django_capture_on_commit_callbacks
):
    with FakeLLM() as server:
        source = model_source(server.base_url, temperature=0.2)
        with django_capture_on_commit_callbacks(execute=True):
            response = client_for(coordinator).post(
                "/api/generation-jobs/", {"dataset": dataset.id, "source": source.id}, format="json"
            )

    assert response.status_code == 201
    job = GenerationJob.objects.get()
    body = response.json()
    assert (body["id"], body["dataset"], body["source"], body["source_name"]) == (job.id, dataset.id, source.id,
                                                                                   source.name)  # fmt: skip
    assert body["status"] == "queued"  # as it was when started; the eager lanes ran after the response was built
    assert body["parameters"] == source.generation_settings() and body["parameters"]["temperature"] == 0.2
    assert body["already_present"] == 0 and body["progress"]["total"] == 3 and body["failures"] == []
    assert body["url"] == f"http://testserver/api/generation-jobs/{job.id}/"
    assert job.created_by == coordinator

    followed = client_for(coordinator).get(body["url"]).json()
    assert followed["status"] == "done" and followed["finished_at"] and followed["started_at"]
    assert followed["progress"]["done"] == 3 and followed["progress"]["percent"] == 100
    assert Answer.objects.filter(source=source).count() == 3


def test_a_second_job_for_the_same_answers_is_409_naming_the_running_job(coordinator, dataset):
    source = model_source()
    running = jobs.start_job(dataset=dataset, source=source)

    response = client_for(coordinator).post(
        "/api/generation-jobs/", {"dataset": dataset.id, "source": source.id}, format="json"
    )

    assert response.status_code == 409
    assert response.json() == {"detail": f"Job {running.id} is already generating these answers.", "job": running.id}
    assert GenerationJob.objects.count() == 1


def test_a_source_that_cannot_generate_is_409_and_unknown_ids_are_400(coordinator, dataset):
    physicians = AnswerSourceFactory(kind="physician")
    client = client_for(coordinator)

    refused = client.post("/api/generation-jobs/", {"dataset": dataset.id, "source": physicians.id}, format="json")
    unknown = client.post("/api/generation-jobs/", {"dataset": 999999, "source": physicians.id}, format="json")
    missing = client.post("/api/generation-jobs/", {}, format="json")

    assert refused.status_code == 409 and refused.json()["job"] is None
    assert "is not a model source" in refused.json()["detail"]
    assert unknown.status_code == 400 and "dataset" in unknown.json()
    assert missing.status_code == 400 and set(missing.json()) == {"dataset", "source"}
    assert not GenerationJob.objects.exists()


def test_the_study_team_reads_jobs_and_only_coordinators_act(coordinator, dataset):
    job = jobs.start_job(dataset=dataset, source=model_source())
    analyst, rater = AnalystFactory(), OnboardedRaterFactory()

    assert client_for(analyst).get("/api/generation-jobs/").status_code == 200
    assert client_for(analyst).get(f"/api/generation-jobs/{job.id}/").status_code == 200
    body = {"dataset": dataset.id, "source": job.source_id}
    assert client_for(analyst).post("/api/generation-jobs/", body, format="json").status_code == 403
    for action in ("retry-failed", "cancel", "resume"):
        assert client_for(analyst).post(f"/api/generation-jobs/{job.id}/{action}/").status_code == 403, action
        assert client_for(rater).post(f"/api/generation-jobs/{job.id}/{action}/").status_code == 403, action
        assert client_for().post(f"/api/generation-jobs/{job.id}/{action}/").status_code == 401, action
    assert client_for(rater).get("/api/generation-jobs/").status_code == 403
    assert client_for().get("/api/generation-jobs/").status_code == 401
    job.refresh_from_db()
    assert job.status == GenerationJob.Status.QUEUED and GenerationJob.objects.count() == 1


def test_jobs_list_newest_first_and_filter_by_status_dataset_and_source(coordinator, dataset):
    first = jobs.start_job(dataset=dataset, source=model_source())
    second = jobs.start_job(dataset=dataset, source=model_source())
    jobs.cancel_job(first)
    client = client_for(coordinator)

    listed = client.get("/api/generation-jobs/").json()["results"]
    cancelled = client.get("/api/generation-jobs/", {"status": "cancelled"}).json()["results"]
    by_source = client.get("/api/generation-jobs/", {"source": second.source_id, "dataset": dataset.id}).json()

    assert [row["id"] for row in listed] == [second.id, first.id]
    assert "failures" not in listed[0] and listed[0]["progress"]["pending"] == 3
    assert [row["id"] for row in cancelled] == [first.id]
    assert [row["id"] for row in by_source["results"]] == [second.id]
    assert client.get("/api/generation-jobs/", {"status": "lost"}).status_code == 400


def test_failures_are_listed_and_retried(coordinator, dataset, settings, django_capture_on_commit_callbacks):
    with FakeLLM(failures=100, failure_status=400) as server:
        source = model_source(server.base_url)
        job = jobs.start_job(dataset=dataset, source=source)
        drain(source)
        client = client_for(coordinator)

        detail = client.get(f"/api/generation-jobs/{job.id}/").json()
        assert detail["status"] == "done" and detail["progress"]["failed"] == 3
        first = detail["failures"][0]
        question = dataset.questions.get(external_id="q0")
        assert first["question"] == question.id and first["question_external_id"] == "q0"
        assert first["attempts"] == 1 and first["error"] == "HTTP 400: simulated failure (400)"
        assert first["history"][0]["attempt"] == 1

        server.failures = 0
        with django_capture_on_commit_callbacks(execute=True):
            retried = client.post(f"/api/generation-jobs/{job.id}/retry-failed/")

    assert retried.status_code == 200 and retried.json() == {"requeued": 3}
    after = client.get(f"/api/generation-jobs/{job.id}/").json()
    assert after["status"] == "done" and after["failures"] == [] and after["progress"]["done"] == 3
    assert client.post(f"/api/generation-jobs/{job.id}/retry-failed/").json() == {"requeued": 0}


def test_the_detail_lists_at_most_200_failures(coordinator):
    dataset = DatasetFactory()
    source = model_source()
    job = GenerationJob.objects.create(dataset=dataset, source=source, parameters=source.generation_settings(),
                                       settings_hash="x", status=GenerationJob.Status.DONE)  # fmt: skip
    Call.objects.bulk_create(
        Call(kind=answer_kind.KIND, endpoint=source.endpoint, batch=answer_kind.batch_of(job.id), status="failed",
             subject=answer_kind.subject_for(job.id, QuestionFactory(dataset=dataset).id), error="no")
        for _ in range(201)
    )  # fmt: skip

    detail = client_for(coordinator).get(f"/api/generation-jobs/{job.id}/").json()

    assert len(detail["failures"]) == 200 and detail["progress"]["failed"] == 201


def test_cancel_stops_a_job_and_a_finished_job_cannot_be_cancelled_resumed_or_retried(coordinator, dataset):
    job = jobs.start_job(dataset=dataset, source=model_source())
    client = client_for(coordinator)

    cancelled = client.post(f"/api/generation-jobs/{job.id}/cancel/")
    again = client.post(f"/api/generation-jobs/{job.id}/cancel/")
    resumed = client.post(f"/api/generation-jobs/{job.id}/resume/")
    retried = client.post(f"/api/generation-jobs/{job.id}/retry-failed/")

    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    assert cancelled.json()["cancelled_at"] and cancelled.json()["progress"]["pending"] == 3
    assert again.status_code == 409 and again.json() == {"detail": f"Job {job.id} had already finished.", "job": job.id}
    assert resumed.status_code == 409 and "nothing to resume" in resumed.json()["detail"]
    assert retried.status_code == 409 and "cancelled" in retried.json()["detail"]


def test_resume_sends_the_lanes_again(coordinator, dataset, django_capture_on_commit_callbacks):
    with FakeLLM() as server:
        source = model_source(server.base_url)
        job = jobs.start_job(dataset=dataset, source=source)  # lanes never ran: as if the broker lost them
        with django_capture_on_commit_callbacks(execute=True) as callbacks:
            response = client_for(coordinator).post(f"/api/generation-jobs/{job.id}/resume/")

    assert response.status_code == 200 and len(callbacks) == 1
    job.refresh_from_db()
    assert job.status == GenerationJob.Status.DONE and len(server.requests) == 3


def test_unknown_jobs_are_404(coordinator):
    client = client_for(coordinator)
    assert client.get("/api/generation-jobs/999999/").status_code == 404
    assert client.post("/api/generation-jobs/999999/cancel/").status_code == 404


# --- Answer sources and answers ----------------------------------------------------------------------

SOURCE = {
    "name": "GPT-4o",
    "kind": "model",
    "model_name": "gpt-4o",
    "base_url": "https://api.openai.com/v1",
    "api_key_env": "EQUITYRATE_TEST_OPENAI_API_KEY",
    "temperature": 0.0,
    "max_tokens": 512,
    "system_prompt": "You are a careful clinician.",
    "prompt_template": "Question: {question}",
    "request_timeout_seconds": 60,
    "concurrency": 8,
    "rate_limit_per_minute": 500,
    "logprobs": True,
    "top_logprobs": 3,
}


def test_a_coordinator_adds_a_model_source_and_no_key_value_is_ever_shown(coordinator, monkeypatch, settings):
    settings.MODEL_KEY_HOSTS = parse_key_hosts("EQUITYRATE_TEST_OPENAI_API_KEY=api.openai.com")
    monkeypatch.setenv("EQUITYRATE_TEST_OPENAI_API_KEY", "sk-very-secret-value")

    response = client_for(coordinator).post("/api/answer-sources/", SOURCE, format="json")

    assert response.status_code == 201
    source = AnswerSource.objects.get(name="GPT-4o")
    body = response.json()
    assert body["id"] == source.id and {key: body[key] for key in SOURCE} == SOURCE
    assert source.generation_settings() == {
        "model": "gpt-4o", "temperature": 0.0, "max_tokens": 512, "system_prompt": "You are a careful clinician.",
        "prompt_template": "Question: {question}", "logprobs": True, "top_logprobs": 3,
    }  # fmt: skip
    listed = client_for(AnalystFactory()).get(f"/api/answer-sources/{source.id}/")
    for shown in (response, listed):
        assert "sk-very-secret-value" not in shown.content.decode()
    assert listed.json()["api_key_env"] == "EQUITYRATE_TEST_OPENAI_API_KEY"


def test_a_coordinator_changes_a_sources_settings(coordinator):
    source = model_source(prompt_template="{question}")

    response = client_for(coordinator).patch(
        f"/api/answer-sources/{source.id}/", {"temperature": 0.7, "concurrency": 2}, format="json"
    )

    assert response.status_code == 200 and response.json()["temperature"] == 0.7
    source.refresh_from_db()
    assert (source.temperature, source.concurrency, source.base_url) == (0.7, 2, "http://127.0.0.1:9/v1")


@pytest.mark.parametrize(
    "change, field",
    [
        ({"prompt_template": "no placeholder"}, "prompt_template"),
        ({"base_url": "not a url"}, "base_url"),
        ({"concurrency": 0}, "concurrency"),
        ({"kind": "robot"}, "kind"),
        ({"name": "Taken"}, "name"),
    ],
)
def test_invalid_source_settings_are_400_and_nothing_changes(coordinator, change, field):
    AnswerSourceFactory(name="Taken")
    source = model_source(name="Mine")
    client = client_for(coordinator)

    created = client.post("/api/answer-sources/", {**SOURCE, **change}, format="json")
    patched = client.patch(f"/api/answer-sources/{source.id}/", change, format="json")

    assert created.status_code == 400 and field in created.json()
    assert patched.status_code == 400 and field in patched.json()
    assert not AnswerSource.objects.filter(name="GPT-4o").exists()
    source.refresh_from_db()
    assert source.name == "Mine" and source.prompt_template == "{question}" and source.concurrency == 1


def test_only_coordinators_write_answer_sources():
    source = model_source()
    for user in (AnalystFactory(), OnboardedRaterFactory()):
        client = client_for(user)
        assert client.post("/api/answer-sources/", SOURCE, format="json").status_code == 403
        assert client.patch(f"/api/answer-sources/{source.id}/", {"temperature": 1}, format="json").status_code == 403
    assert client_for().post("/api/answer-sources/", SOURCE, format="json").status_code == 401
    assert client_for(AnalystFactory()).get("/api/answer-sources/").status_code == 200
    source.refresh_from_db()
    assert source.temperature == 0.0 and not AnswerSource.objects.filter(name="GPT-4o").exists()


def test_answer_sources_cannot_be_deleted_through_the_api(coordinator):
    source = model_source()
    assert client_for(coordinator).delete(f"/api/answer-sources/{source.id}/").status_code == 405
    assert AnswerSource.objects.filter(id=source.id).exists()


def test_answers_say_whether_they_were_refused(coordinator):
    refused = AnswerFactory(text="", refusal=True)
    AnswerFactory(question=refused.question, text="An answer.")

    rows = client_for(coordinator).get("/api/answers/", {"dataset": refused.question.dataset_id}).json()["results"]

    assert [(row["text"], row["refusal"]) for row in rows] == [("", True), ("An answer.", False)]
