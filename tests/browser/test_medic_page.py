"""The MEDIC page in Chromium at 1,280 and 390 px: a coordinator goes from the study's dashboard to its MEDIC
results, reads the generalisation table first (the effect significant in one of four pairs), sees its plot drawn
(the stacked layout on a phone), opens a second pair's means and reads the judge-pair agreement. The page body
never scrolls sideways."""

import pytest

from tests.analysis.test_medic_report import make_medic_study
from tests.browser.conftest import log_in, screenshot
from tests.browser.test_judge_pages import NO_SIDEWAYS_SCROLL, sized_page  # noqa: F401 (a fixture)
from tests.factories import PASSWORD, CoordinatorFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_medic_page(sized_page):  # noqa: F811 (the fixture)
    width, page = sized_page
    study = make_medic_study()
    log_in(page, CoordinatorFactory().username, PASSWORD)

    page.goto(f"/studies/{study.pk}/")
    with page.expect_navigation():
        page.get_by_role("link", name="MEDIC results").click()
    first = page.locator("[data-generalisation] tbody tr").first
    assert "significant in 1 of 4 pairs (8th grade higher)" in first.text_content()
    image = page.locator("figure.plot img")
    image.scroll_into_view_if_needed()
    page.wait_for_function("() => document.querySelector('figure.plot img').naturalWidth > 0")
    source = page.evaluate("() => document.querySelector('figure.plot img').currentSrc")
    assert source.endswith("?layout=narrow") == (width == "phone")
    assert page.evaluate(NO_SIDEWAYS_SCROLL)
    screenshot(page, f"medic-page-{width}")

    second = page.locator("[data-means]").nth(1)
    second.locator("summary").click()
    assert second.locator("tbody tr").first.is_visible()
    agreement = page.locator("[data-agreement] tbody tr")
    assert agreement.count() == 4 and "Llama judge vs Qwen judge" in agreement.first.text_content()
    agreement.last.scroll_into_view_if_needed()
    assert page.evaluate(NO_SIDEWAYS_SCROLL)
    screenshot(page, f"medic-page-open-{width}")
