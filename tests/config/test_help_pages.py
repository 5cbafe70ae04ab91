"""The Help menu's pages (docs/*.md rendered at /help/<page>/ for signed-in users), the styled messages of
base.html, and the favicon."""

import pytest
from django.contrib import messages
from django.contrib.auth.models import AnonymousUser
from django.contrib.messages.storage.cookie import CookieStorage
from django.template.loader import render_to_string
from django.test import RequestFactory

from config import help as help_pages
from tests.conftest import REPO
from tests.factories import PASSWORD, AnalystFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def signed_in(client):
    user = AnalystFactory()
    assert client.login(username=user.username, password=PASSWORD)
    return client


@pytest.fixture
def fresh_render_cache():
    help_pages.render_page.cache_clear()
    yield
    help_pages.render_page.cache_clear()


def test_every_docs_page_is_a_help_page_and_the_readme_links_each():
    on_disk = {path.stem for path in (REPO / "docs").glob("*.md")}
    assert on_disk == set(help_pages.TITLES)
    readme = (REPO / "README.md").read_text()
    for slug in on_disk:
        assert f"(docs/{slug}.md)" in readme


@pytest.mark.parametrize("slug", [slug for slug, _ in help_pages.PAGES])
def test_each_help_page_is_rendered_for_a_signed_in_user(signed_in, slug):
    response = signed_in.get(f"/help/{slug}/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "<h1>" in html and "<p>" in html  # Markdown rendered, not shown as text
    assert f'<a href="/help/{slug}/" aria-current="page">' in html


def test_a_help_page_renders_tables_code_and_links_to_other_pages_as_help_addresses(signed_in):
    html = signed_in.get("/help/analyst/").content.decode()
    assert "<th>column</th>" in html and "<td><code>source</code></td>" in html  # accuracy.csv's columns table
    assert "<pre><code>python manage.py analyze --out DIR" in html
    assert '<a href="../coordinator/">For coordinators</a>' in html  # coordinator.md, as its help page


def test_help_pages_are_for_signed_in_users_only(client):
    response = client.get("/help/coordinator/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/?next=/help/coordinator/")
    assert client.get("/help/").status_code == 302


def test_an_unknown_help_page_is_404(signed_in):
    assert signed_in.get("/help/nothing/").status_code == 404
    assert signed_in.get("/help/..%2Fsettings/").status_code == 404


def test_help_pages_refuse_post(signed_in):
    assert signed_in.post("/help/rater/").status_code == 405


def test_help_index_opens_the_first_page(signed_in):
    response = signed_in.get("/help/")
    assert response.status_code == 302 and response["Location"] == "/help/coordinator/"


def test_raw_html_in_a_docs_page_is_escaped(signed_in, tmp_path, monkeypatch, fresh_render_cache):
    (tmp_path / "demo.md").write_text("# Demo\n\n<script>alert(1)</script>\n\nText <b onclick=x()>bold</b>.\n")
    monkeypatch.setattr(help_pages, "DOCS", tmp_path)
    html = signed_in.get("/help/demo/").content.decode()
    assert "<script>alert(1)" not in html and "<b onclick" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;b onclick=x()&gt;bold&lt;/b&gt;" in html


def test_the_help_menu_links_every_page_and_the_api(signed_in):
    html = signed_in.get("/help/demo/").content.decode()
    menu = html[html.index('<details class="help-menu">') : html.index("</details>")]
    for slug, _ in help_pages.PAGES:
        assert f'href="/help/{slug}/"' in menu
    assert 'href="/api/"' in menu and 'href="/api/docs/"' in menu


def test_messages_are_rendered_with_their_level_and_role():
    request = RequestFactory().get("/")
    request.user = AnonymousUser()
    request._messages = CookieStorage(request)
    messages.success(request, "Rating saved.")
    messages.info(request, "Queued.")
    messages.warning(request, "Nearly full.")
    messages.error(request, "Refused.")
    html = render_to_string("base.html", request=request)
    assert '<li class="message message-success success" role="status">Rating saved.</li>' in html
    assert '<li class="message message-info info" role="status">Queued.</li>' in html
    assert '<li class="message message-warning warning" role="alert">Nearly full.</li>' in html
    assert '<li class="message message-error error" role="alert">Refused.</li>' in html


def test_the_favicon_is_linked_and_favicon_ico_redirects_to_it(client):
    assert 'rel="icon" href="/static/favicon.svg"' in client.get("/accounts/login/").content.decode()
    response = client.get("/favicon.ico")
    assert response.status_code == 301 and response["Location"] == "/static/favicon.svg"
    assert (REPO / "static" / "favicon.svg").read_text().startswith("<svg")
