"""The header's Help menu (a <details>, so it opens without JavaScript) at a desktop's and a phone's width:
it opens, lists the docs pages by role and the API, leads to a rendered help page, and nothing scrolls sideways."""

import pytest

from config.help import PAGES
from tests.browser.conftest import _open_page, log_in, screenshot
from tests.factories import PASSWORD, CoordinatorFactory

NO_SIDEWAYS_SCROLL = "document.documentElement.scrollWidth <= window.innerWidth"


@pytest.mark.parametrize(("width", "height", "java_script"), [(1280, 900, True), (390, 844, True), (390, 844, False)])
def test_the_help_menu_opens_and_leads_to_a_help_page(browser, live_server, width, height, java_script):
    coordinator = CoordinatorFactory()  # the widest header: every menu entry
    context, page = _open_page(
        browser, live_server, viewport={"width": width, "height": height}, java_script_enabled=java_script
    )
    try:
        log_in(page, coordinator.username, PASSWORD)
        menu = page.locator("details.help-menu")
        assert not menu.locator("a").first.is_visible()
        menu.locator("summary").click()
        links = menu.locator("a")
        assert links.count() == len(PAGES) + 2  # the docs pages, the browsable API and its reference
        assert all(links.nth(i).is_visible() for i in range(links.count()))
        assert page.evaluate(NO_SIDEWAYS_SCROLL)
        suffix = f"{width}{'' if java_script else '-nojs'}"
        screenshot(page, f"help-menu-open-{suffix}")

        with page.expect_navigation():
            menu.get_by_role("link", name="Reproducing the seed studies").click()
        assert page.url.endswith("/help/reproducing/")
        assert page.locator("h1").first.text_content() == "Reproducing the seed studies"
        assert page.locator(".help-doc pre").count() > 5  # the commands, as code blocks
        assert page.evaluate(NO_SIDEWAYS_SCROLL)  # long commands and tables scroll inside their box
        screenshot(page, f"help-page-reproducing-{suffix}")

        with page.expect_navigation():
            page.locator(".help-doc").get_by_role("link", name="For analysts").first.click()
        assert page.url.endswith("/help/analyst/")
        assert page.evaluate(NO_SIDEWAYS_SCROLL)
    finally:
        context.close()
