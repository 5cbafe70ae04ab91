"""The study-design pages in Chromium, at desktop and phone widths: a coordinator makes BiasMedQA variants,
previews a recipe's exact request, runs a job under the recipe against a local stand-in model, and sees the
accuracy table and plot of an analysis run."""

import json

import pytest

from datasets.models import Answer, GenerationJob, VariantRun
from datasets.variants import biasmedqa
from datasets.variants.biasmedqa_recipes import EDUCATION, ensure_biasmedqa_recipes
from tests.browser.conftest import log_in, screenshot
from tests.factories import PASSWORD, AnswerSourceFactory, CoordinatorFactory, DatasetFactory, QuestionFactory
from tests.llm_server import FakeLLM

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

OPTIONS = {"A": "Aspirin", "B": "Heparin", "C": "Warfarin", "D": "Nothing", "E": "Surgery"}


def medqa():
    dataset = DatasetFactory(name="MedQA (USMLE test)")
    for n in range(8):
        QuestionFactory(dataset=dataset, external_id=str(n), text=f"A patient has chest pain. Question {n}: which?",
                        metadata={"options": OPTIONS, "answer_idx": "B", "answer": "Heparin", "qid": n})  # fmt: skip
    return dataset


@pytest.mark.parametrize("width", ["desktop", "phone"])
def test_variants_preview_and_a_job_under_a_recipe(request, width):
    page = request.getfixturevalue("page" if width == "desktop" else "phone_page")
    page.set_default_timeout(30_000)  # the variant run and the job run inline (eager Celery) in the request
    coordinator = CoordinatorFactory()
    base = medqa()
    ensure_biasmedqa_recipes()
    with FakeLLM() as server:
        source = AnswerSourceFactory(name="Stand-in", base_url=server.base_url, model_name="stand-in", concurrency=1)
        log_in(page, coordinator.username, PASSWORD)

        page.goto("/datasets/variants/new/")
        page.select_option("#id_base_dataset", str(base.pk))
        page.check("input[value=none]")
        page.check("input[value=recency]")
        page.check("input[value=cultural]")
        page.fill("#id_limit", "3")
        with page.expect_navigation():
            page.get_by_role("button", name="Make the variants").click()
        run = VariantRun.objects.get()
        page.locator("[data-field=status]", has_text="Finished").wait_for()
        assert page.locator("[data-field=summary]").text_content() == "9 of 9 variants (100 %)"
        screenshot(page, f"variant-run-{width}")
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")

        page.click("header >> text=Recipes")
        page.click(f"text={EDUCATION}")
        page.select_option("#id_dataset", str(run.dataset_id))
        page.fill("#id_external_id", "1-recency")
        page.select_option("#id_source", str(source.pk))
        with page.expect_navigation():
            page.get_by_role("button", name="Preview").click()
        prompt = page.locator("[data-field=prompt]").text_content()
        assert prompt.startswith(f"{biasmedqa.INSTRUCTION} {biasmedqa.EDUCATION['recency']}\n\n### Question: ")
        body = json.loads(page.locator("[data-field=body]").text_content())
        assert body["model"] == "stand-in" and body["messages"][-1]["content"] == prompt
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        page.locator("[data-preview]").scroll_into_view_if_needed()
        screenshot(page, f"recipe-preview-{width}")
        page.evaluate("window.scrollTo(0, 0)")  # after a full-page screenshot, before the next click

        page.select_option("#id_job-source", str(source.pk))
        page.select_option("#id_job-dataset", str(run.dataset_id))
        with page.expect_navigation():
            page.get_by_role("button", name="Start generating").click()
        page.locator("[data-field=status]", has_text="Finished").wait_for()
        screenshot(page, f"recipe-job-{width}")

        page.goto("/analysis/")
        with page.expect_navigation():
            page.get_by_role("button", name="Run analysis").click()
        page.locator("text=Finished").first.wait_for()
        section = page.locator("details.result-section", has_text="accuracy by bias")
        section.locator("summary").click()  # sections are collapsed under the run's summary (issue 22)
        assert "Stand-in" in section.inner_text()  # a column with one value is named once above its table
        for level in ("none", "recency", "cultural"):
            assert section.locator("table tbody tr").filter(has_text=level).count() == 1
        plot = section.locator("figure.plot img").first
        plot.scroll_into_view_if_needed()
        page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=plot.element_handle())
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        screenshot(page, f"accuracy-{width}")

    job = GenerationJob.objects.get()
    assert job.levels == {} and job.recipe.name == EDUCATION
    assert Answer.objects.filter(source=source).count() == 9
    prompts = [body["messages"][-1]["content"] for body in server.requests]
    assert sum(biasmedqa.EDUCATION["recency"] in prompt for prompt in prompts) == 3
    assert sum(prompt.startswith(f"{biasmedqa.INSTRUCTION}\n\n") for prompt in prompts) == 3  # unbiased: no sentence
