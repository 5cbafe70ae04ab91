"""Every page a role reaches from home, on the demo's data, at 390 and 1,280 px: no 5xx and no sideways scroll.

A walk of the links as each role meets them (the coordinator, the analyst, a physician, a consumer), every page
shape at most twice (numbers in an address folded: /rate/12/ and /rate/13/ are one shape), the admin, downloads
and plots left out. What a newcomer following the README would click through, checked on every submission."""

import io
import re
from collections import Counter, deque
from urllib.parse import urljoin, urlparse

import pytest
from django.core.management import call_command

from tests.browser.conftest import _open_page, log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ROLES = ("coordinator", "analyst", "physician", "consumer")
SKIP = re.compile(r"/admin/|/logout|\.(csv|xlsx|png|svg|yaml|json|txt)$|/export|/static/|/plot|/api/schema")
PER_SHAPE = 2
MOST_PAGES = 250
NO_SIDEWAYS_SCROLL = "document.documentElement.scrollWidth - window.innerWidth"


def walk(page, origin: str) -> tuple[list[tuple[str, int, int]], int]:
    """(path, status, pixels scrolled sideways) of every page with a problem, and how many pages were seen."""
    seen: set[str] = set()
    shapes: Counter[str] = Counter()
    queue, problems = deque(["/"]), []
    while queue and len(seen) < MOST_PAGES:
        path = queue.popleft()
        shape = re.sub(r"\d+", "N", path.split("?")[0])
        if path in seen or shapes[shape] >= PER_SHAPE:
            continue
        seen.add(path)
        shapes[shape] += 1
        response = page.goto(path)
        status = response.status if response else 0
        sideways = page.evaluate(NO_SIDEWAYS_SCROLL)
        if status >= 500 or sideways > 0:
            problems.append((path, status, sideways))
        for href in page.eval_on_selector_all("a[href]", "links => links.map(a => a.getAttribute('href'))"):
            url = urlparse(urljoin(origin + path, href))
            if url.netloc == urlparse(origin).netloc and not SKIP.search(url.path):
                queue.append(url.path + (f"?{url.query}" if url.query else ""))
    return problems, len(seen)


@pytest.mark.parametrize("width", [390, 1280])
def test_every_page_of_every_role_answers_and_fits_the_screen(browser, live_server, width):
    out = io.StringIO()
    call_command("seed_demo", stdout=out)
    logins = {}
    for line in out.getvalue().splitlines():
        if line.startswith("login "):
            _, role, username, password = line.split(" ", 3)
            logins.setdefault(role, (username, password))

    walked = {}
    for role in ROLES:
        phone = {"is_mobile": True, "has_touch": True} if width == 390 else {}
        context, page = _open_page(browser, live_server, viewport={"width": width, "height": 900}, **phone)
        try:
            log_in(page, *logins[role])
            problems, walked[role] = walk(page, live_server.url)
        finally:
            context.close()
        assert problems == [], (role, width, problems)
    assert walked["coordinator"] > 40 and walked["consumer"] > 10, walked
