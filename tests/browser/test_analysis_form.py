"""The Run analysis form lists the reference levels of the study chosen: at once with JavaScript, by a button
without."""

import pytest

from analysis.models import AnalysisRun
from tests.analysis.test_analysis_views import consumer_study
from tests.browser.conftest import log_in
from tests.factories import PASSWORD, AnalystFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def age_levels(page) -> list[str]:
    return page.locator("#id_rater_age_group option").evaluate_all("options => options.map(o => o.value)")[1:]


def studies():
    young = consumer_study("Young", {"age_group": "18-24", "gender": "Woman", "race_ethnicity": ["Asian", "White"]})
    old = consumer_study("Old", {"age_group": "65 or older", "gender": "Man", "race_ethnicity": ["White"]})
    return young, old


def test_with_javascript_choosing_a_study_lists_its_levels(page):
    young, old = studies()
    log_in(page, AnalystFactory().username, PASSWORD)
    page.goto("/analysis/")
    assert age_levels(page) == ["18-24", "65 or older"]

    page.select_option("#choose_study", str(old.pk))
    page.wait_for_url(f"**/analysis/?study={old.pk}")

    assert age_levels(page) == ["65 or older"]
    assert page.locator("input[type=hidden][name=study]").get_attribute("value") == str(old.pk)


def test_without_javascript_a_button_lists_the_chosen_studys_levels(page_without_js):
    page = page_without_js
    young, old = studies()
    log_in(page, AnalystFactory().username, PASSWORD)
    page.goto("/analysis/")

    page.select_option("#choose_study", str(young.pk))
    page.get_by_role("button", name="Show the levels of this choice").click()

    assert age_levels(page) == ["18-24"]
    page.select_option("#id_rater_age_group", "18-24")
    with page.expect_navigation():
        page.get_by_role("button", name="Run analysis").click()
    run = AnalysisRun.objects.get()
    assert (run.study, run.reference_levels["rater_age_group"]) == (young, "18-24")
