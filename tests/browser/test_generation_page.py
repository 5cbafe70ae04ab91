"""The generation job page follows a running job in Chromium: in place with JavaScript, by refreshing without."""

import pytest

from datasets.generation import answer_kind
from datasets.models import AnswerSource, GenerationJob
from engine import calls, lanes
from engine.models import Call, Endpoint
from tests.browser.conftest import log_in, screenshot
from tests.factories import PASSWORD, AnswerSourceFactory, CoordinatorFactory, DatasetFactory, QuestionFactory
from tests.llm_server import FakeLLM

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def waiting_job(base_url: str) -> GenerationJob:
    """A job whose calls no lane has run yet (with eager Celery they would run at once when it is started)."""
    dataset = DatasetFactory(name="Sample")
    source = AnswerSourceFactory(name="Fake GPT", base_url=base_url, model_name="fake-model", concurrency=1)
    job = GenerationJob.objects.create(dataset=dataset, source=source, parameters=source.generation_settings(),
                                       settings_hash="waiting")  # fmt: skip
    for n in range(3):
        question = QuestionFactory(dataset=dataset, external_id=f"q{n}", text=f"Question {n}?")
        Call.objects.create(kind=answer_kind.KIND, endpoint=source.endpoint, batch=answer_kind.batch_of(job.id),
                            subject=answer_kind.subject_for(job.id, question.id))  # fmt: skip
    return job


def answer_one(source: AnswerSource) -> None:
    endpoint = Endpoint.objects.get(id=source.endpoint_id)
    calls.execute(calls.claim_next(endpoint, "test"), endpoint)


def test_with_javascript_the_counts_update_in_place_and_the_page_reloads_when_done(page):
    coordinator = CoordinatorFactory()
    with FakeLLM() as server:
        job = waiting_job(server.base_url)
        log_in(page, coordinator.username, PASSWORD)
        page.goto(f"/datasets/generation/{job.pk}/")
        assert page.locator("[data-field=summary]").text_content() == "0 of 3 questions finished (0 %)"
        page.evaluate("window.notReloaded = true")

        answer_one(job.source)
        page.locator("[data-count=done]", has_text="1").wait_for()
        assert page.locator("[data-field=summary]").text_content() == "1 of 3 questions finished (33 %)"
        assert page.evaluate("document.getElementById('job-progress').value") == 1
        assert page.evaluate("window.notReloaded") is True  # updated in place
        screenshot(page, "generation-job-running")

        lanes.run_lane(job.source.endpoint_id, 0)
        page.locator("[data-field=status]", has_text="Finished").wait_for()
    assert page.evaluate("window.notReloaded") is None  # reloaded once the job finished
    assert page.locator("[data-progress-url]").count() == 0
    assert page.locator("[data-count=done]").text_content() == "3"


def test_without_javascript_the_page_refreshes_itself_until_the_job_is_done(page_without_js):
    page = page_without_js
    coordinator = CoordinatorFactory()
    with FakeLLM() as server:
        job = waiting_job(server.base_url)
        log_in(page, coordinator.username, PASSWORD)
        page.goto(f"/datasets/generation/{job.pk}/")
        assert page.locator("[data-field=status]").text_content() == "Waiting for a worker"

        lanes.run_lane(job.source.endpoint_id, 0)
        page.locator("[data-field=status]", has_text="Finished").wait_for()
    assert page.locator("[data-count=done]").text_content() == "3"
