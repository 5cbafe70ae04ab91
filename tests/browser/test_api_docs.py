"""The API documentation page (/api/docs/) in Chromium at 1,280 and 390 px, signed in: Swagger UI renders the
schema's operations from the site's own static files, every request stays on the live server, the page does not
scroll sideways (an operation opened included), and "Try it out" answers as the signed-in user (issue 22)."""

from urllib.parse import urlsplit

import pytest

from tests.browser.conftest import _open_page, log_in, screenshot
from tests.factories import PASSWORD, CoordinatorFactory, StudyFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

NO_SIDEWAYS_SCROLL = "document.documentElement.scrollWidth <= window.innerWidth"
VIEWPORTS = {
    "desktop": {"viewport": {"width": 1280, "height": 900}},
    "phone": {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True},
}


@pytest.mark.parametrize("width", VIEWPORTS)
def test_the_docs_page_renders_the_operations_from_this_server_only(browser, live_server, width):
    context, page = _open_page(browser, live_server, **VIEWPORTS[width])
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    coordinator = CoordinatorFactory()
    study = StudyFactory(name="Docs study")
    try:
        log_in(page, coordinator.username, PASSWORD)
        page.goto("/api/")
        page.get_by_role("link", name="Read the API documentation").click()
        page.locator(".opblock").first.wait_for()

        assert page.url == f"{live_server.url}/api/docs/"
        assert page.locator(".opblock").count() > 30
        assert page.locator(".opblock-summary-path", has_text="/api/studies/{study_id}/items/").count() == 1
        assert page.locator(".info .title", has_text="EquityRate API").is_visible()
        assert page.evaluate(NO_SIDEWAYS_SCROLL)
        screenshot(page, f"api-docs-{width}")

        studies = page.locator("#operations-studies-studies_list")
        studies.locator(".opblock-summary-control").click()
        studies.get_by_role("button", name="Try it out").click()
        studies.get_by_role("button", name="Execute").click()
        answer = studies.locator(".live-responses-table tbody .response-col_status").first
        answer.wait_for()
        assert answer.text_content().strip() == "200"
        assert "Docs study" in studies.locator(".live-responses-table .microlight").first.text_content()
        assert page.evaluate(NO_SIDEWAYS_SCROLL)
        screenshot(page, f"api-docs-try-it-{width}")
        assert study.pk
    finally:
        context.close()

    live = urlsplit(live_server.url).netloc
    elsewhere = [url for url in requested if urlsplit(url).netloc != live]
    assert requested and not elsewhere, elsewhere
    assert any(urlsplit(url).path == "/api/schema/" for url in requested)
