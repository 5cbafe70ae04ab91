"""The docs/ Markdown pages, rendered read-only at /help/<page>/ for signed-in users (the site's Help menu)."""

import re
from functools import cache
from pathlib import Path

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.templatetags.static import static
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_GET
from markdown_it import MarkdownIt

DOCS = Path(settings.BASE_DIR) / "docs"

# The pages by role, in the menu's order: (slug = docs/<slug>.md, title).
PAGES = (
    ("coordinator", "For coordinators"),
    ("rater", "For raters"),
    ("analyst", "For analysts"),
    ("api", "The REST API"),
    ("deployment", "Deployment"),
    ("reproducing", "Reproducing the seed studies"),
    ("demo", "The demo"),
    ("about", "Credits, licences and layout"),
)
TITLES = dict(PAGES)

# A link between docs pages (`analyst.md#x`) becomes the help page's address (`../analyst/#x`).
DOC_LINK = re.compile(r"^(?P<slug>[a-z]+)\.md(?P<fragment>#.*)?$")


def _doc_links(renderer, tokens, idx, options, env):  # type: ignore[no-untyped-def]
    href = tokens[idx].attrGet("href") or ""
    if (match := DOC_LINK.match(href)) and match["slug"] in TITLES:
        tokens[idx].attrSet("href", f"../{match['slug']}/{match['fragment'] or ''}")
    return renderer.renderToken(tokens, idx, options, env)


def _markdown() -> MarkdownIt:
    # CommonMark with tables; "html": False turns raw HTML in a page into text, so a page cannot inject markup.
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    md.add_render_rule("link_open", _doc_links)
    return md


@cache
def render_page(slug: str) -> SafeString:
    """A docs page as HTML (cached per process: the files change only with a deploy)."""
    text = (DOCS / f"{slug}.md").read_text(encoding="utf-8")
    return mark_safe(_markdown().render(text))  # the renderer escapes raw HTML


@require_GET
@login_required
def help_index(request):
    return redirect("help", page=PAGES[0][0])


@require_GET
@login_required
def help_page(request, page: str):
    if page not in TITLES:
        raise Http404("No such help page")
    context = {"pages": PAGES, "page": page, "title": TITLES[page], "body": render_page(page)}
    return render(request, "help/page.html", context)


@require_GET
def favicon(request):
    """Browsers ask /favicon.ico whatever the page says; send them to the SVG icon instead of a 404."""
    return redirect(static("favicon.svg"), permanent=True)
