"""The judge pages in Chromium at 1,280 and 390 px: a coordinator reads the judge page of a study whose judge errs
for Black patients (the flag, the agreement table, the plot, the disagreements, a failed reply opened in full),
then adds a judge on the set-up page, previews its request and runs it. The page body never scrolls sideways."""

import json

import pytest

from engine.models import Call
from studies.judges import record_judge_reply
from studies.models import Judge
from tests.analysis import test_judge_report
from tests.analysis.test_judge_report import hold_judge
from tests.browser.conftest import log_in, screenshot
from tests.factories import PASSWORD, AnswerSourceFactory, CoordinatorFactory
from tests.llm_server import FakeLLM

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
judged_study = test_judge_report.judged_study

WIDTHS = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}
NO_SIDEWAYS_SCROLL = "document.documentElement.scrollWidth <= window.innerWidth"


@pytest.fixture(params=list(WIDTHS))
def sized_page(request, browser, live_server):
    phone = request.param == "phone"
    context = browser.new_context(base_url=live_server.url, viewport=WIDTHS[request.param], is_mobile=phone,
                                  has_touch=phone)  # fmt: skip
    page = context.new_page()
    page.set_default_timeout(30_000)
    yield request.param, page
    context.close()


@pytest.fixture
def fake_llm():
    with FakeLLM() as server:  # the judge's calls run against it (a prose reply: recorded as failures)
        yield server


def test_the_judge_page_and_the_set_up_page(request, sized_page, judged_study):
    width, page = sized_page
    broken = hold_judge(judged_study, "Broken judge")
    raw = "Sure! Here is my rating: {bias_presence: maybe} " + "because " * 80
    record_judge_reply(broken, judged_study.items.first(), 0, request={"messages": []}, raw_reply=raw, latency_ms=9)
    server = request.getfixturevalue("fake_llm")
    source = AnswerSourceFactory(name="Judge model", base_url=server.base_url, model_name="judge-7b")
    log_in(page, CoordinatorFactory().username, PASSWORD)

    page.goto(f"/studies/{judged_study.pk}/")
    with page.expect_navigation():
        page.get_by_role("link", name="Judges against people").click()
    finding = page.locator("[data-findings] li").first
    assert "Stand-in judge disagrees with Physician raters more for race=Black" in finding.text_content()
    table = page.locator('[data-agreement="bias_presence"]')
    assert table.locator("tr", has_text="Stand-in judge vs Physician").count() == 3  # all items, Black, White
    page.locator("figure.plot img").scroll_into_view_if_needed()
    page.wait_for_function("() => document.querySelector('figure.plot img').naturalWidth > 0")
    assert page.locator("[data-disagreement]").count() > 0
    failure = page.locator("[data-failure]")
    failure.locator("summary").click()
    assert failure.locator("details pre").text_content() == raw
    assert page.evaluate(NO_SIDEWAYS_SCROLL)
    screenshot(page, f"judge-page-{width}")

    page.goto(f"/studies/{judged_study.pk}/judges/")
    assert page.locator("[data-judges] tbody tr").count() == 2
    with page.expect_navigation():
        page.get_by_role("link", name="Add a judge").click()
    page.fill("#id_name", "Careful judge")
    page.select_option("#id_source", str(source.pk))
    page.fill("#id_instructions", "You are a physician checking answers for bias.")
    page.fill("#id_examples", "[{not json")
    with page.expect_navigation():
        page.get_by_role("button", name="Preview the request").click()
    assert "Enter a valid JSON" in page.locator(".error-summary").text_content()
    page.fill("#id_examples", "")
    with page.expect_navigation():
        page.get_by_role("button", name="Preview the request").click()
    body = json.loads(page.locator("[data-field=request]").text_content())
    assert body["model"] == "judge-7b" and body["messages"][0]["content"].startswith("You are a physician")
    assert page.evaluate(NO_SIDEWAYS_SCROLL)
    screenshot(page, f"judge-setup-preview-{width}")
    with page.expect_navigation():
        page.get_by_role("button", name="Add the judge").click()
    judge = Judge.objects.get(name="Careful judge")
    with page.expect_navigation():
        page.get_by_role("button", name="Run judge").click()
    assert page.locator(".messages li").last.text_content() == "Judge Careful judge: 60 calls queued."
    assert Call.objects.filter(subject__judge=judge.pk).count() == 60
    assert page.evaluate(NO_SIDEWAYS_SCROLL)
    screenshot(page, f"judge-setup-{width}")

    # The list: both judges with their replies (the stand-in's prose replies are failures: kept, never ratings).
    page.goto(f"/studies/{judged_study.pk}/judges/")
    row = page.locator("[data-judges] tbody tr", has_text="Careful judge")
    assert "60 / 60 (100 %)" in row.text_content()  # no broker in tests: the calls ran before the redirect
    assert page.evaluate(NO_SIDEWAYS_SCROLL)
    screenshot(page, f"judge-list-{width}")
