"""MEDIC's chain in Chromium at 1,280 and 390 px: the demo's small MEDIC study (studies/demo_medic.py) run on the
stand-in from 2 desires to restyled questions, answers and judgements; a coordinator follows it on the pages:
the generation steps, a step's page showing each input beside what was made from it, a made question's page
linking back to its input, then the study's MEDIC results. No page scrolls sideways."""

import pytest

from datasets.demo import STAND_IN, STAND_IN_DETAILS, STAND_IN_PORT
from datasets.models import AnswerSource
from studies.demo_medic import JUDGE_ERRORS, run_medic, seed_medic
from tests.browser.conftest import log_in, screenshot
from tests.browser.test_judge_pages import NO_SIDEWAYS_SCROLL, sized_page  # noqa: F401 (a fixture)
from tests.factories import PASSWORD, CoordinatorFactory
from tests.llm_server import FakeLLM, JudgeErrors

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_chain_from_desires_to_judgements_on_the_pages(sized_page):  # noqa: F811 (the fixture)
    width, page = sized_page
    AnswerSource.objects.create(name=STAND_IN, **STAND_IN_DETAILS)
    study = seed_medic(run=False).study
    models = {model: JudgeErrors(rate, {}) for model, rate in JUDGE_ERRORS.items()}
    with FakeLLM(port=STAND_IN_PORT, judge_models=models):
        run_medic(study)
    log_in(page, CoordinatorFactory().username, PASSWORD)

    page.goto("/datasets/steps/")
    rows = page.locator("[data-steps] tbody tr")
    assert rows.count() == 2
    assert "Demo: MEDIC on the stand-in: restyle" in rows.nth(1).text_content()
    assert page.evaluate(NO_SIDEWAYS_SCROLL)
    screenshot(page, f"medic-steps-{width}")

    with page.expect_navigation():
        rows.nth(1).get_by_role("link").click()
    assert page.locator("[data-count=made]").text_content() == "12"
    inputs = page.locator("[data-input]")
    assert inputs.count() == 2 and inputs.first.locator("[data-made]").count() == 6  # 3 styles x 2 samples
    assert page.evaluate(NO_SIDEWAYS_SCROLL)
    screenshot(page, f"medic-step-{width}")

    made = inputs.first.locator("[data-made] a").first
    with page.expect_navigation():
        made.click()
    chain = page.locator("[data-chain]")
    assert "Made from" in chain.text_content() and "by the step" in chain.text_content()
    with page.expect_navigation():
        chain.locator("a").first.click()  # the question it was made from
    assert "Made from this (6)" in page.locator("[data-chain]").text_content()
    assert page.evaluate(NO_SIDEWAYS_SCROLL)

    page.goto(f"/analysis/studies/{study.pk}/medic/")
    assert page.locator("[data-generalisation] tbody tr").count() > 0
    assert page.locator("[data-agreement] tbody tr").count() == 4  # three categories and their mean
    assert page.evaluate(NO_SIDEWAYS_SCROLL)
    screenshot(page, f"medic-chain-results-{width}")
