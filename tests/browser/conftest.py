"""Rater pages in a real browser: Playwright driving Debian's Chromium against the live test server."""

import os
import shutil
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
SCREENSHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"
# Chromium on this kind of machine must not try to reach the network on its own.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-sync",
                 "--disable-background-networking", "--disable-component-update"]  # fmt: skip


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    # Playwright's sync API runs an event loop in this thread; the ORM calls the tests make stay synchronous.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    if not shutil.which(CHROMIUM) and not Path(CHROMIUM).exists():
        pytest.fail(f"Chromium not found at {CHROMIUM}: install Debian's chromium package (scripts/test.sh does)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()
    del os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"]


@pytest.fixture(autouse=True)
def _reference_data(transactional_db, reference_data):
    """Browser tests run on a flushed database: restore the migrations' reference rows."""


def _open_page(browser, live_server, **context_options):
    context = browser.new_context(base_url=live_server.url, **context_options)
    page = context.new_page()
    page.set_default_timeout(10_000)
    return context, page


@pytest.fixture
def page(browser, live_server):
    context, page = _open_page(browser, live_server, viewport={"width": 1100, "height": 900})
    yield page
    context.close()


@pytest.fixture
def page_without_js(browser, live_server):
    context, page = _open_page(browser, live_server, java_script_enabled=False)
    yield page
    context.close()


@pytest.fixture
def phone_page(browser, live_server):
    context, page = _open_page(
        browser, live_server, viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True
    )
    yield page
    context.close()


def log_in(page, username: str, password: str) -> None:
    page.goto("/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert "/accounts/login/" not in page.url, "login failed"


def screenshot(page, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
