"""The answer-generation pages and the question page: success, wrong method, permission denied.

Jobs run against a local chat-completions server (tests/llm_server.FakeLLM). Celery is eager here, so the
lanes a job dispatches at commit run inline once the captured on-commit callbacks execute.
"""

import socket
import time
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from datasets.generation import answer_kind, jobs
from datasets.models import Answer, GenerationJob
from engine.models import Call
from tests.celery_process import using_broker
from tests.datasets.test_generation_engine import drain
from tests.factories import (
    AnalystFactory,
    AnswerFactory,
    AnswerSourceFactory,
    CounterfactualPairFactory,
    DatasetFactory,
    QuestionFactory,
)
from tests.llm_server import FakeLLM

pytestmark = pytest.mark.django_db


@pytest.fixture
def analyst(db):
    return AnalystFactory()


@pytest.fixture
def dataset():
    dataset = DatasetFactory(name="Sample")
    for n in range(3):
        QuestionFactory(dataset=dataset, external_id=f"q{n}", text=f"Question {n}: is this dose right?")
    return dataset


@pytest.fixture
def server():
    with FakeLLM() as server:
        yield server


def model_source(base_url, **fields):
    defaults = {"name": "Fake GPT", "base_url": base_url, "model_name": "fake-model", "concurrency": 1,
                "request_timeout_seconds": 5, "system_prompt": "Be brief.",
                "prompt_template": "Q: {question}"}  # fmt: skip
    return AnswerSourceFactory(**{**defaults, **fields})


def unreachable_source(**fields):
    return model_source("http://127.0.0.1:9/v1", **fields)


# --- Access ------------------------------------------------------------------------------------------


def page_urls(job, question):
    return [
        reverse("datasets:generate"),
        reverse("datasets:generation_job", args=[job.pk]),
        reverse("datasets:generation_progress", args=[job.pk]),
        reverse("datasets:question", args=[question.dataset_id, question.pk]),
    ]


def action_urls(job):
    return [reverse(f"datasets:generation_{action}", args=[job.pk]) for action in ("retry", "cancel", "resume")]


def test_anonymous_users_are_sent_to_login(client, dataset):
    job = jobs.start_job(dataset=dataset, source=unreachable_source())
    for url in page_urls(job, dataset.questions.first()):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith(reverse("login")), url
    for url in action_urls(job):
        assert client.post(url)["Location"].startswith(reverse("login")), url


def test_raters_get_403_everywhere(client, physician, dataset):
    job = jobs.start_job(dataset=dataset, source=unreachable_source())
    client.force_login(physician)
    for url in page_urls(job, dataset.questions.first()):
        assert client.get(url).status_code == 403, url
    for url in action_urls(job):
        assert client.post(url).status_code == 403, url
    job.refresh_from_db()
    assert job.status == GenerationJob.Status.QUEUED


def test_analysts_see_jobs_and_questions_but_cannot_act(client, analyst, dataset):
    job = jobs.start_job(dataset=dataset, source=unreachable_source())
    client.force_login(analyst)
    generate, job_page, progress, question = page_urls(job, dataset.questions.first())

    assert client.get(generate).status_code == 403
    page = client.get(job_page)
    assert page.status_code == 200
    assert b"Cancel the job</button>" not in page.content and b"Resume</button>" not in page.content
    assert client.get(progress).status_code == 200
    assert client.get(question).status_code == 200
    for url in action_urls(job):
        assert client.post(url).status_code == 403, url
    job.refresh_from_db()
    assert job.status == GenerationJob.Status.QUEUED


def test_wrong_methods_are_refused(client, coordinator, dataset):
    job = jobs.start_job(dataset=dataset, source=unreachable_source())
    client.force_login(coordinator)
    generate, job_page, progress, question = page_urls(job, dataset.questions.first())
    assert client.put(generate).status_code == 405
    for url in (job_page, progress, question):
        assert client.post(url).status_code == 405, url
    for url in action_urls(job):
        assert client.get(url).status_code == 405, url


# --- Starting a job ----------------------------------------------------------------------------------


def test_the_form_offers_only_model_sources_with_an_endpoint_and_preselects_the_dataset(client, coordinator, dataset):
    usable = unreachable_source(name="Usable")
    AnswerSourceFactory(name="No endpoint", base_url="")
    AnswerSourceFactory(name="Physicians", kind="physician", base_url="http://127.0.0.1:9/v1")
    client.force_login(coordinator)

    response = client.get(reverse("datasets:generate"), {"dataset": dataset.pk})

    assert response.status_code == 200
    assert list(response.context["form"].fields["source"].queryset) == [usable]
    assert f'<option value="{dataset.pk}" selected>'.encode() in response.content
    assert b"127.0.0.1:9/v1" in response.content  # the source's settings are summarised


def test_with_no_model_source_the_page_says_so_and_links_to_the_new_source_page(client, coordinator, dataset):
    AnswerSourceFactory(name="Imported", kind="imported")
    client.force_login(coordinator)

    response = client.get(reverse("datasets:generate"))

    assert b"No model source has an endpoint yet" in response.content
    assert reverse("datasets:source_create").encode() in response.content
    assert b"Start generating" not in response.content


def test_starting_a_job_generates_answers_shown_with_their_provenance(
    client, coordinator, dataset, server, django_capture_on_commit_callbacks
):
    refused = QuestionFactory(dataset=dataset, external_id="r", text="REFUSE this one")
    source = model_source(server.base_url, temperature=0.3, max_tokens=200)
    client.force_login(coordinator)

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("datasets:generate"), {"dataset": dataset.pk, "source": source.pk})

    job = GenerationJob.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("datasets:generation_job", args=[job.pk])
    assert job.status == GenerationJob.Status.DONE and job.created_by == coordinator
    assert Answer.objects.filter(source=source).count() == 4 and len(server.requests) == 4

    page = client.get(response["Location"])
    assert b"Job %d started." % job.pk in page.content
    assert page.context["progress"].done == 4 and page.context["progress"].refusals == 1
    assert b'http-equiv="refresh"' not in page.content and b"generation.js" not in page.content

    question = dataset.questions.get(external_id="q0")
    shown = client.get(reverse("datasets:question", args=[dataset.pk, question.pk]))
    content = shown.content.decode()
    assert shown.status_code == 200
    assert "Generated answer to: Q: Question 0: is this dose right?" in content
    for provenance in ("fake-model", "0.3", "200", "Be brief.", "Q: {question}", "stop", "prompt_tokens",
                       f"Job {job.pk}", "Refusal</dt><dd>no"):  # fmt: skip
        assert provenance in content, provenance
    assert "Refused / empty" not in content

    refused_page = client.get(reverse("datasets:question", args=[dataset.pk, refused.pk])).content.decode()
    assert "Refused / empty" in refused_page and "content_filter" in refused_page


def test_a_second_job_for_the_same_answers_is_refused_with_a_link_to_the_running_one(client, coordinator, dataset):
    source = unreachable_source()
    running = jobs.start_job(dataset=dataset, source=source)
    client.force_login(coordinator)

    response = client.post(reverse("datasets:generate"), {"dataset": dataset.pk, "source": source.pk})

    assert response.status_code == 400
    assert f"Job {running.pk} is already generating these answers." in response.content.decode()
    assert reverse("datasets:generation_job", args=[running.pk]).encode() in response.content
    assert GenerationJob.objects.count() == 1


def test_an_invalid_choice_is_a_form_error_and_starts_nothing(client, coordinator, dataset):
    physicians = AnswerSourceFactory(kind="physician", base_url="http://127.0.0.1:9/v1")
    client.force_login(coordinator)

    response = client.post(reverse("datasets:generate"), {"dataset": dataset.pk, "source": physicians.pk})

    assert response.status_code == 400 and "source" in response.context["form"].errors
    assert not GenerationJob.objects.exists()


# --- The job page ------------------------------------------------------------------------------------


def test_an_unfinished_job_page_refreshes_itself_and_offers_resume_and_cancel(client, coordinator, dataset):
    job = jobs.start_job(dataset=dataset, source=unreachable_source())
    client.force_login(coordinator)

    response = client.get(reverse("datasets:generation_job", args=[job.pk]))

    content = response.content.decode()
    assert '<noscript><meta http-equiv="refresh" content="3"></noscript>' in content
    assert "js/generation.js" in content
    assert reverse("datasets:generation_progress", args=[job.pk]) in content
    assert 'max="3" value="0"' in content
    assert "Resume</button>" in content and "Cancel the job</button>" in content and "Retry failed" not in content
    assert "Be brief." in content and "Q: {question}" in content  # the frozen settings
    assert "No Celery worker" in content  # rendered for the script, but hidden: Celery is eager here
    assert 'data-notice="no-worker" hidden' in content


def test_failures_are_listed_with_the_servers_message_and_retried_from_the_page(
    client, coordinator, dataset, django_capture_on_commit_callbacks
):
    with FakeLLM(failures=100, failure_status=401) as server:
        source = model_source(server.base_url)
        job = jobs.start_job(dataset=dataset, source=source)
        drain(source)
        client.force_login(coordinator)

        page = client.get(reverse("datasets:generation_job", args=[job.pk]))
        content = page.content.decode()
        assert page.context["progress"].failed == 3
        assert "Failures (3)" in content and "HTTP 401: simulated failure (401)" in content
        question = dataset.questions.get(external_id="q0")
        assert reverse("datasets:question", args=[dataset.pk, question.pk]) in content
        assert "<details><summary>1 failed attempt</summary>" in content
        assert "Retry failed (3)</button>" in content and "Cancel</button>" not in content

        server.failures = 0  # the cause is fixed
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(reverse("datasets:generation_retry", args=[job.pk]), follow=True)

    assert b"3 failed questions queued again." in response.content
    job.refresh_from_db()
    assert job.status == GenerationJob.Status.DONE
    assert Answer.objects.filter(source=source).count() == 3
    assert not jobs.failed_calls(job).exists()
    again = client.post(reverse("datasets:generation_retry", args=[job.pk]), follow=True)
    assert b"No failed questions to retry." in again.content


def test_the_failures_table_stops_at_200_rows(client, analyst):
    dataset = DatasetFactory()
    source = unreachable_source()
    job = GenerationJob.objects.create(dataset=dataset, source=source, parameters=source.generation_settings(),
                                       settings_hash="x", status=GenerationJob.Status.DONE)  # fmt: skip
    questions = [QuestionFactory(dataset=dataset) for _ in range(203)]
    Call.objects.bulk_create(
        Call(kind=answer_kind.KIND, endpoint=source.endpoint, batch=answer_kind.batch_of(job.id),
             subject=answer_kind.subject_for(job.id, question.id), status="failed", attempts=1, error="HTTP 400: no")
        for question in questions
    )  # fmt: skip
    client.force_login(analyst)

    response = client.get(reverse("datasets:generation_job", args=[job.pk]))

    assert len(response.context["failures"]) == 200
    assert "… and 3 more." in response.content.decode()


def test_cancelling_from_the_page_stops_the_job(client, coordinator, dataset):
    job = jobs.start_job(dataset=dataset, source=unreachable_source())
    client.force_login(coordinator)

    response = client.post(reverse("datasets:generation_cancel", args=[job.pk]), follow=True)

    job.refresh_from_db()
    assert job.status == GenerationJob.Status.CANCELLED and job.cancelled_at
    assert b"Job cancelled" in response.content
    assert b"Resume</button>" not in response.content and b"http-equiv" not in response.content
    again = client.post(reverse("datasets:generation_cancel", args=[job.pk]), follow=True)
    assert b"This job had already finished." in again.content
    retried = client.post(reverse("datasets:generation_retry", args=[job.pk]), follow=True)
    assert b"This job was cancelled; start a new one instead." in retried.content


def test_resuming_from_the_page_sends_the_lanes_again(
    client, coordinator, dataset, server, django_capture_on_commit_callbacks
):
    source = model_source(server.base_url)
    job = jobs.start_job(dataset=dataset, source=source)  # its lanes are never run: as if the broker lost them
    client.force_login(coordinator)

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = client.post(reverse("datasets:generation_resume", args=[job.pk]), follow=True)

    assert len(callbacks) == 1
    assert b"sent to the workers again" in response.content
    job.refresh_from_db()
    assert job.status == GenerationJob.Status.DONE and Answer.objects.filter(source=source).count() == 3
    finished = client.post(reverse("datasets:generation_resume", args=[job.pk]), follow=True)
    assert b"nothing to resume" in finished.content


# --- Progress and the worker notice ------------------------------------------------------------------


def test_the_progress_endpoint_reports_status_counts_and_no_warning_when_eager(client, analyst, dataset, server):
    source = model_source(server.base_url)
    job = jobs.start_job(dataset=dataset, source=source)
    client.force_login(analyst)
    url = reverse("datasets:generation_progress", args=[job.pk])

    before = client.get(url).json()
    drain(source)
    after = client.get(url).json()

    assert before["status"] == "queued" and not before["finished"]
    assert before["progress"]["total"] == 3 and before["progress"]["pending"] == 3 and before["progress"]["done"] == 0
    assert before["worker_warning"] is None and before["worker_notice"] is None
    assert after["status"] == "done" and after["finished"] and after["status_display"] == "Finished"
    assert (after["progress"]["done"], after["progress"]["percent"], after["progress"]["pending"]) == (3, 100, 0)
    assert client.get(reverse("datasets:generation_progress", args=[job.pk + 1])).status_code == 404


def test_worker_status_reports_eager_mode_with_the_apps_settings(settings):
    assert settings.CELERY_TASK_ALWAYS_EAGER  # the tests' (and the demo's) default: no broker
    assert jobs.worker_status() == {"mode": "eager", "workers": []}


def test_with_no_worker_answering_the_page_and_the_endpoint_warn(client, analyst, dataset, monkeypatch):
    monkeypatch.setattr(jobs, "worker_status", lambda: {"mode": "broker", "workers": []})
    job = jobs.start_job(dataset=dataset, source=unreachable_source())
    client.force_login(analyst)

    page = client.get(reverse("datasets:generation_job", args=[job.pk])).content.decode()
    data = client.get(reverse("datasets:generation_progress", args=[job.pk])).json()

    assert '<div class="notice notice-alert" role="alert" data-notice="no-worker">' in page  # not hidden
    assert "Start one with <code>celery -A config worker</code>" in page
    assert data["worker_notice"] == "no-worker"
    assert data["worker_warning"].startswith("No Celery worker is answering, so this job is waiting.")


def test_a_broker_that_cannot_be_reached_is_named_in_the_warning(client, analyst, dataset, monkeypatch):
    status = {"mode": "broker", "workers": [], "error": "cannot reach the broker: Connection refused"}
    monkeypatch.setattr(jobs, "worker_status", lambda: status)
    job = jobs.start_job(dataset=dataset, source=unreachable_source())
    client.force_login(analyst)

    page = client.get(reverse("datasets:generation_job", args=[job.pk])).content.decode()

    assert "cannot reach the broker: Connection refused" in page


@pytest.fixture
def closed_port():
    """A local port bound but never listening: connecting to it is refused at once, and nothing else takes it."""
    with socket.socket() as reserved:
        reserved.bind(("127.0.0.1", 0))
        yield reserved.getsockname()[1]


def test_a_broker_that_is_down_is_detected_and_named_on_the_page_at_once(
    client, analyst, dataset, settings, closed_port
):
    from config.celery import app

    job = jobs.start_job(dataset=dataset, source=unreachable_source())
    client.force_login(analyst)
    url = reverse("datasets:generation_job", args=[job.pk])
    assert "cannot reach the broker" not in client.get(url).content.decode()  # eager; and the page is warmed up
    with using_broker(app, broker_url=f"redis://127.0.0.1:{closed_port}/0", queue="equityrate-test-no-broker"):
        # Inside: using_broker saves the app's eager setting (read through Django's) and restores it after, so
        # setting it first would leave every later test's tasks waiting for a broker.
        settings.CELERY_TASK_ALWAYS_EAGER = False  # as when CELERY_BROKER_URL is set
        started = time.monotonic()
        page = client.get(url).content.decode()
        elapsed = time.monotonic() - started

    assert '<div class="notice notice-alert" role="alert" data-notice="no-worker">' in page
    assert "cannot reach the broker: " in page and "Connection refused" in page
    assert elapsed < 2, elapsed  # the page does not wait out the broker client's reconnection attempts


def test_a_reachable_broker_is_not_reported_as_unreachable(client, analyst, dataset, settings, celery_broker):
    """Whether a worker answers is not asserted: other test runs sharing the Redis may have one listening."""
    job = jobs.start_job(dataset=dataset, source=unreachable_source())
    client.force_login(analyst)
    settings.CELERY_TASK_ALWAYS_EAGER = False

    page = client.get(reverse("datasets:generation_job", args=[job.pk])).content.decode()

    assert "cannot reach the broker" not in page
    assert '<p class="hint" data-notice-detail></p>' in page
    status = jobs.worker_status()
    assert status["mode"] == "broker" and "error" not in status


def test_workers_that_answer_but_run_no_lane_for_the_job_are_pointed_to_resume(
    client, coordinator, dataset, monkeypatch
):
    monkeypatch.setattr(jobs, "worker_status", lambda: {"mode": "broker", "workers": ["celery@host"]})
    job = jobs.start_job(dataset=dataset, source=unreachable_source())
    client.force_login(coordinator)
    url = reverse("datasets:generation_job", args=[job.pk])
    assert 'data-notice="idle" hidden' in client.get(url).content.decode()  # a lane may be about to start

    GenerationJob.objects.filter(pk=job.pk).update(created_at=timezone.now() - timedelta(seconds=30))
    page = client.get(url).content.decode()

    assert 'data-notice="idle">' in page and "none is working on this job" in page
    assert 'data-notice="no-worker" hidden' in page
    assert "Resume</button>" in page


def test_a_finished_job_shows_no_worker_notice(client, analyst, dataset, server, monkeypatch):
    monkeypatch.setattr(jobs, "worker_status", lambda: {"mode": "broker", "workers": []})
    source = model_source(server.base_url)
    job = jobs.start_job(dataset=dataset, source=source)
    drain(source)
    client.force_login(analyst)

    page = client.get(reverse("datasets:generation_job", args=[job.pk])).content.decode()

    assert "No Celery worker" not in page
    assert client.get(reverse("datasets:generation_progress", args=[job.pk])).json()["worker_warning"] is None


# --- Lists, navigation and the question page ---------------------------------------------------------


def test_recent_jobs_are_listed_with_their_progress(client, coordinator, dataset, server):
    source = model_source(server.base_url)
    job = jobs.start_job(dataset=dataset, source=source)
    drain(source)
    client.force_login(coordinator)

    response = client.get(reverse("datasets:generate"))

    content = response.content.decode()
    assert reverse("datasets:generation_job", args=[job.pk]) in content
    assert "3 / 3 answered" in content and "Sample" in content and "Fake GPT" in content


def test_coordinators_find_the_generate_page_from_the_nav_home_and_dataset_pages(client, coordinator, dataset):
    client.force_login(coordinator)
    generate = reverse("datasets:generate")
    for url in (reverse("home"), reverse("datasets:list")):
        assert f'href="{generate}"'.encode() in client.get(url).content, url
    detail = client.get(reverse("datasets:detail", args=[dataset.pk])).content.decode()
    assert f'href="{generate}?dataset={dataset.pk}"' in detail


def test_analysts_get_no_generate_links(client, analyst, dataset):
    client.force_login(analyst)
    for url in (reverse("home"), reverse("datasets:list"), reverse("datasets:detail", args=[dataset.pk])):
        assert reverse("datasets:generate").encode() not in client.get(url).content, url


def test_dataset_rows_link_to_the_question_page(client, analyst, dataset):
    question = dataset.questions.get(external_id="q1")
    client.force_login(analyst)

    response = client.get(reverse("datasets:detail", args=[dataset.pk]))

    assert reverse("datasets:question", args=[dataset.pk, question.pk]).encode() in response.content


def test_the_question_page_shows_metadata_pairs_and_escaped_answers(client, analyst):
    pair = CounterfactualPairFactory(
        question_1__text="Dose for a Black man?",
        question_2__text="Dose for a White man?",
        question_1__metadata={"axis": "race", "options": ["A", "B"]},
        difference="Black → White",
    )
    AnswerFactory(question=pair.question_1, text="<script>alert(1)</script>\nSecond line.", refusal=False,
                  source__name="Imported release", source__kind="imported",
                  provenance_note="From the paper.")  # fmt: skip
    AnswerFactory(question=pair.question_1, text="", refusal=True, source__name="Model Z")
    client.force_login(analyst)

    response = client.get(reverse("datasets:question", args=[pair.dataset_id, pair.question_1_id]))

    content = response.content.decode()
    assert response.status_code == 200
    assert "&lt;script&gt;alert(1)&lt;/script&gt;<br>Second line." in content and "<script>alert" not in content
    assert "From the paper." in content and "Imported release" in content
    assert content.count("Refused / empty") == 1 and "No text was returned." in content
    assert "race" in content and "[&quot;A&quot;, &quot;B&quot;]" in content
    assert "Black → White" in content
    assert reverse("datasets:question", args=[pair.dataset_id, pair.question_2_id]) in content


def test_a_question_of_another_dataset_is_404(client, analyst, dataset):
    other = QuestionFactory()
    client.force_login(analyst)
    assert client.get(reverse("datasets:question", args=[dataset.pk, other.pk])).status_code == 404
    assert client.get(reverse("datasets:question", args=[other.dataset_id, other.pk])).status_code == 200


# --- Admin -------------------------------------------------------------------------------------------


def test_the_admin_shows_generation_rows_read_only_and_filters_refusals(client, coordinator, dataset, server):
    source = model_source(server.base_url)
    QuestionFactory(dataset=dataset, external_id="r", text="REFUSE this one")
    job = jobs.start_job(dataset=dataset, source=source)
    drain(source)
    client.force_login(coordinator)

    changelist = client.get(reverse("admin:datasets_generationjob_changelist"))
    assert changelist.status_code == 200
    assert client.get(reverse("admin:datasets_generationjob_add")).status_code == 403
    job_page = client.get(reverse("admin:datasets_generationjob_change", args=[job.pk]))
    assert job_page.status_code == 200 and b'name="_save"' not in job_page.content  # view only
    # The job's questions are its engine calls, listed from the job's row in the engine's admin.
    calls_url = f"{reverse('admin:engine_call_changelist')}?kind=answer&amp;batch=generation-job%3A{job.pk}"
    assert calls_url in changelist.content.decode()
    job_calls = client.get(
        reverse("admin:engine_call_changelist"), {"kind": "answer", "batch": f"generation-job:{job.pk}"}
    )
    assert job_calls.status_code == 200 and job_calls.context["cl"].result_count == 4
    call = jobs.batch_calls(job).first()
    assert client.get(reverse("admin:engine_call_change", args=[call.pk])).status_code == 200

    refusals = client.get(reverse("admin:datasets_answer_changelist"), {"refusal__exact": "1"})
    assert refusals.status_code == 200 and refusals.context["cl"].result_count == 1


def test_after_the_broker_tests_tasks_run_eagerly_again():
    """The tests above point the app at a broker; the ones after rely on eager Celery running tasks in-process."""
    from config.celery import app

    assert app.conf.task_always_eager
