"""The analyst's pages at 1,280 and 390 px (issue 22): the run form fits a phone, and a run's page opens on its
summary (the headline estimates with their CIs), every table collapsed in its section, numbers written for
reading; nothing scrolls sideways, with a section open or closed."""

import re

import pytest

from analysis import services
from analysis.models import AnalysisRun
from tests.analysis.test_run_page import qpain_run
from tests.browser.conftest import _open_page, log_in, screenshot
from tests.factories import PASSWORD, AnalystFactory
from tests.studies.test_exports import build_release

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTHS = {"desktop": 1280, "phone": 390}
NO_SIDEWAYS_SCROLL = "document.documentElement.scrollWidth <= window.innerWidth"
WIDE = """() => [...document.querySelectorAll('main *')]
    .filter(e => e.getBoundingClientRect().right > window.innerWidth).slice(0, 5)
    .map(e => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right))"""


@pytest.fixture(params=list(WIDTHS))
def sized_page(request, browser, live_server):
    width = WIDTHS[request.param]
    context, page = _open_page(browser, live_server, viewport={"width": width, "height": 900})
    page.width_name = request.param
    yield page
    context.close()


def ratings_run(user) -> AnalysisRun:
    build_release()
    run = services.start_analysis(study=None, user=user)  # eager Celery: done on return
    run.refresh_from_db()
    assert run.status == AnalysisRun.Status.DONE, run.error
    return run


def test_the_run_form_and_a_ratings_run_open_on_their_summary_without_sideways_scroll(sized_page):
    page, width = sized_page, sized_page.width_name
    analyst = AnalystFactory()
    run = ratings_run(analyst)
    log_in(page, analyst.username, PASSWORD)

    page.goto("/analysis/")
    assert page.evaluate(NO_SIDEWAYS_SCROLL), page.evaluate("document.documentElement.scrollWidth")
    screenshot(page, f"analysis-form-{width}")

    page.goto(f"/analysis/runs/{run.pk}/")
    summary = page.locator("section.run-summary")
    first_section = page.locator("details.result-section").first
    assert summary.bounding_box()["y"] < first_section.bounding_box()["y"]
    assert page.locator("details.result-section[open]").count() == 0
    assert page.locator("details.result-section").count() == 4  # rates, reliability, cross-tab, regression
    independent = summary.locator("table.headline", has_text="Independent rubric")
    assert independent.is_visible()
    first_row = independent.locator("tbody tr").first.locator("td").all_text_contents()
    assert re.fullmatch(r"\d+\.\d%", first_row[0]) and re.fullmatch(r"\d+\.\d–\d+\.\d%|–", first_row[1])
    assert first_row[2].isdigit()  # ratings counted whole
    assert not page.locator("table.estimates").first.is_visible()  # collapsed
    assert page.evaluate(NO_SIDEWAYS_SCROLL)
    screenshot(page, f"analysis-run-summary-{width}")

    page.locator("details#rates > summary").click()
    rates = page.locator("details#rates table.estimates")
    assert rates.is_visible() and page.evaluate(NO_SIDEWAYS_SCROLL), page.evaluate(WIDE)
    estimates = rates.locator("tbody tr").first.locator("td").all_text_contents()
    assert not any(re.fullmatch(r"-0\.0+", cell) for cell in estimates)
    screenshot(page, f"analysis-run-rates-open-{width}")


def test_a_qpain_run_shows_its_pairs_first_and_its_heat_table_under_its_heading(sized_page):
    page, width = sized_page, sized_page.width_name
    analyst = AnalystFactory()
    run = qpain_run(vignettes=3, spread=0.03)
    log_in(page, analyst.username, PASSWORD)

    page.goto(f"/analysis/runs/{run.pk}/")
    summary = page.locator("section.run-summary")
    assert "This run holds Q-Pain" in summary.locator("[data-field=holds]").text_content()
    pairs = summary.locator("table.headline", has_text="Pairs that differ in p_no")
    assert pairs.locator("tbody tr").count() == 2 and pairs.is_visible()
    assert page.locator("text=Rates with 95% CIs").count() == 0  # no empty EquityMedQA section
    assert page.evaluate(NO_SIDEWAYS_SCROLL)
    screenshot(page, f"analysis-qpain-summary-{width}")

    means = page.locator("details#group_means")
    means.locator("summary").click()
    heading, key, heat = (means.locator(selector) for selector in ("h3", "[data-field=heat-key]", "table.heat-table"))
    assert heading.bounding_box()["y"] < key.bounding_box()["y"] < heat.bounding_box()["y"]
    assert "Shading:" in key.text_content()
    page.locator("details#paired_tests summary").click()
    assert "98.33% (1 − 0.05/3, 3 pairs)" in page.locator("[data-field=bonferroni]").text_content()
    assert page.evaluate(NO_SIDEWAYS_SCROLL)
    screenshot(page, f"analysis-qpain-open-{width}")
