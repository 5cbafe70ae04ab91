"""The model-source pages in Chromium at 1,280 and 390 px: a coordinator creates a source, tests its connection
against a local stand-in model and reads the reply, the latency and whether log-probabilities and structured
output came back; nothing scrolls sideways. Also the variant-run form showing only the chosen generator's levels."""

import pytest

from datasets.models import AnswerSource
from tests.browser.conftest import log_in, screenshot
from tests.factories import PASSWORD, CoordinatorFactory
from tests.llm_server import FakeLLM

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTHS = {"desktop": 1280, "phone": 390}


def no_sideways_scroll(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


@pytest.mark.parametrize("width", ["desktop", "phone"])
def test_a_coordinator_creates_a_source_and_tests_its_connection(request, width):
    page = request.getfixturevalue("page" if width == "desktop" else "phone_page")
    if width == "desktop":
        page.set_viewport_size({"width": WIDTHS["desktop"], "height": 900})
    coordinator = CoordinatorFactory()
    with FakeLLM() as server:
        log_in(page, coordinator.username, PASSWORD)
        page.goto("/datasets/sources/")
        page.get_by_role("link", name="New source").click()
        page.fill("#id_name", "Stand-in model")
        page.fill("#id_base_url", server.base_url)
        page.fill("#id_model_name", "stand-in")
        page.check("#id_logprobs")
        page.fill("#id_top_logprobs", "2")
        page.select_option("#id_structured_output", "json_schema")
        assert page.locator("[name=parameters]").count() == 0  # one place per setting: no free-form JSON
        assert no_sideways_scroll(page)
        screenshot(page, f"source-new-{width}")
        with page.expect_navigation():
            page.get_by_role("button", name="Create the source").click()

        source = AnswerSource.objects.get(name="Stand-in model")
        assert source.endpoint is not None and source.structured_output == "json_schema"
        assert page.get_by_role("heading", name="Stand-in model").is_visible()
        with page.expect_navigation():
            page.get_by_role("button", name="Test the connection").click()

        result = page.locator("[data-connection-result]")
        assert result.get_attribute("data-connection-result") == "ok"
        assert result.locator("[data-field=reply]").text_content().startswith("{")
        assert result.locator("[data-field=latency]").text_content().endswith(" ms")
        assert result.locator("[data-field=logprobs]").text_content() == "yes, returned"
        assert result.locator("[data-field=structured]").text_content() == "yes, the reply is the JSON asked for"
        assert server.requests[-1]["response_format"]["type"] == "json_schema"
        assert no_sideways_scroll(page)
        screenshot(page, f"source-tested-{width}")

    page.goto("/datasets/sources/")
    assert page.get_by_role("link", name="Stand-in model").is_visible() and no_sideways_scroll(page)


@pytest.mark.parametrize("width", ["desktop", "phone"])
def test_the_variant_form_shows_only_the_chosen_generators_levels(request, width):
    page = request.getfixturevalue("page" if width == "desktop" else "phone_page")
    if width == "desktop":
        page.set_viewport_size({"width": WIDTHS["desktop"], "height": 900})
    coordinator = CoordinatorFactory()
    log_in(page, coordinator.username, PASSWORD)
    page.goto("/datasets/variants/new/")

    page.select_option("#id_generator", "qpain")

    assert page.locator("input[value='Black woman']").is_visible()
    assert not page.locator("input[value=recency]").is_visible()
    assert page.locator("input[value=recency]").is_disabled()  # a hidden level is not sent
    assert no_sideways_scroll(page)
    screenshot(page, f"variant-levels-{width}")


@pytest.mark.parametrize("width", ["desktop", "phone"])
def test_the_dashboard_plots_and_bulk_actions_fit_the_screen(request, width):
    from studies.assignment import assign_study
    from studies.models import Assignment
    from tests.studies.test_dashboard import pool, raters, study_with_items, submit

    page = request.getfixturevalue("page" if width == "desktop" else "phone_page")
    if width == "desktop":
        page.set_viewport_size({"width": WIDTHS["desktop"], "height": 900})
    study = study_with_items(n_items=4, replication=1)
    [rater] = raters("physician", 1)
    assign_study(study=study, pool_id=pool("physician").id)
    submit(Assignment.objects.filter(rater=rater).first(), active=90)
    raters("physician", 1)  # someone to move the rest to
    coordinator = CoordinatorFactory()
    log_in(page, coordinator.username, PASSWORD)

    page.goto(f"/studies/{study.pk}/")
    images = page.locator(".dashboard-plots img")
    assert images.count() == 3
    for index in range(3):
        images.nth(index).scroll_into_view_if_needed()
        # decode() waits for the lazy image and rejects (raising here) when it cannot be drawn
        assert images.nth(index).evaluate("img => img.decode().then(() => img.naturalWidth)") > 0
    assert page.get_by_text(rater.user.username).first.is_visible()  # coordinators see usernames
    assert no_sideways_scroll(page)
    screenshot(page, f"dashboard-plots-{width}")

    page.goto(f"/studies/{study.pk}/raters/{rater.pk}/")
    page.select_option("#bulk-to-rater", index=1)
    with page.expect_navigation():
        page.get_by_role("button", name="Reassign all").click()
    assert page.get_by_text("3 unrated item(s) moved").is_visible()
    assert Assignment.objects.filter(rater=rater, status="withdrawn").count() == 3
    assert no_sideways_scroll(page)
    screenshot(page, f"rater-bulk-{width}")
