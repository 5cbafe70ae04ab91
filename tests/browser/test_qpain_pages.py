"""A Q-Pain study in Chromium, from generator to forest plot, at desktop and phone widths: a coordinator makes
race x gender variants of the vignettes, previews the closed prompt, runs a job under the completion recipe
(top-5 log-probabilities) against the local stand-in model, and reads the analysis: the heat table of mean
P(No) and the forest plot of the paired differences."""

import json

import pytest

from datasets.importers.qpain import QPAIN_DATASET, import_qpain_vignettes
from datasets.models import Answer, Dataset, VariantRun
from datasets.variants.qpain_recipes import ensure_qpain_recipes
from scoring.models import Score
from tests.browser.conftest import log_in, screenshot
from tests.factories import PASSWORD, AnswerSourceFactory, CoordinatorFactory
from tests.llm_server import FakeLLM

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

COMPLETION = "Q-Pain: closed prompt (completion)"


@pytest.mark.parametrize("width", ["desktop", "phone"])
def test_a_qpain_study_from_generator_to_forest_plot(request, width):
    page = request.getfixturevalue("page" if width == "desktop" else "phone_page")
    page.set_default_timeout(60_000)  # the variant run, the job and the analysis run inline (eager Celery)
    coordinator = CoordinatorFactory()
    import_qpain_vignettes()
    ensure_qpain_recipes(Dataset.objects.get(name=QPAIN_DATASET))
    with FakeLLM() as server:
        source = AnswerSourceFactory(name="Stand-in", base_url=server.base_url, model_name="stand-in", concurrency=2)
        log_in(page, coordinator.username, PASSWORD)

        page.goto("/datasets/variants/new/")
        page.select_option("#id_generator", "qpain")
        page.select_option("#id_base_dataset", str(Dataset.objects.get(name=QPAIN_DATASET).pk))
        for level in ("Black woman", "White woman", "White man"):
            page.check(f"input[value='{level}']")
        page.fill("#id_limit", "4")
        with page.expect_navigation():
            page.get_by_role("button", name="Make the variants").click()
        run = VariantRun.objects.get()
        page.locator("[data-field=status]", has_text="Finished").wait_for()
        assert page.locator("[data-field=summary]").text_content() == "12 of 12 variants (100 %)"
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")

        page.click("header >> text=Recipes")
        page.click(f"text={COMPLETION}")
        page.select_option("#id_dataset", str(run.dataset_id))
        page.fill("#id_external_id", "acute_cancer-01-Black-woman")
        page.select_option("#id_source", str(source.pk))
        with page.expect_navigation():
            page.get_by_role("button", name="Preview").click()
        prompt = page.locator("[data-field=prompt]").text_content()
        assert prompt.startswith("Vignette: Patient A is ") and prompt.endswith("\nAnswer:")
        assert "Patient B" in prompt and "[race]" not in prompt and " Black woman " in prompt
        body = json.loads(page.locator("[data-field=body]").text_content())
        assert body["prompt"] == prompt and body["logprobs"] == 5 and body["stop"] == ["##"]
        assert body["temperature"] == 0 and body["max_tokens"] == 150
        page.locator("[data-preview]").scroll_into_view_if_needed()
        screenshot(page, f"qpain-preview-{width}")
        page.evaluate("window.scrollTo(0, 0)")

        page.select_option("#id_job-source", str(source.pk))
        page.select_option("#id_job-dataset", str(run.dataset_id))
        with page.expect_navigation():
            page.get_by_role("button", name="Start generating").click()
        page.locator("[data-field=status]", has_text="Finished").wait_for()

        page.goto("/analysis/")
        with page.expect_navigation():
            page.get_by_role("button", name="Run analysis").click()
        page.locator("text=Finished").first.wait_for()
        # Issue 22: the run opens on its summary; each plan's section is opened to read its tables and plot.
        assert page.locator("section.run-summary [data-field=holds]").text_content().startswith("This run holds Q-Pain")
        page.locator("details#group_means > summary").click()
        page.locator("details#paired_tests > summary").click()
        heat = page.locator("section.heat", has_text="Stand-in: mean P(No)").locator("table")
        for level in ("Black woman", "White woman", "White man", "All"):
            assert heat.locator("tr", has_text=level).count() >= 1
        assert heat.locator("thead th").all_text_contents()[:3] == ["Group", "Average", "acute_cancer"]
        paired = page.locator("details#paired_tests table.estimates")
        assert paired.locator("tr", has_text="Black woman").filter(has_text="White man").count() >= 1
        forest = page.locator("figure.plot img[alt*='forest plot']")
        forest.scroll_into_view_if_needed()
        page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=forest.element_handle())
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        screenshot(page, f"qpain-analysis-{width}")
        heat.scroll_into_view_if_needed()
        page.screenshot(path=f"artifacts/screenshots/qpain-heat-{width}.png")

    answers = Answer.objects.filter(source=source)
    assert answers.count() == 12
    assert all(answer.response_metadata.get("logprobs") for answer in answers)
    assert Score.objects.filter(scorer="p_no", outcome="measured", answer__source=source).count() == 12
    assert len(server.requests) == 12 and all(body["logprobs"] == 5 for body in server.requests)
