"""A finished run's page as an analyst meets it (issue 22): the summary first, each section collapsed, numbers
for reading, Q-Pain's heat table under its heading with a key, intervals kept within 0-1, the Bonferroni level
computed, and no empty section of a design the run has no data for."""

import re

import pytest
from django.urls import reverse

from analysis.models import AnalysisRun
from analysis.plans import QPAIN_GROUP_MEANS, QPAIN_PAIRED_TESTS
from tests.analysis.test_run_summary import qpain_values
from tests.factories import AnalystFactory

pytestmark = pytest.mark.django_db


def qpain_run(vignettes: int = 2, spread: float = 0.15) -> AnalysisRun:
    """A run of all studies that found Q-Pain answers only (no ratings): the browser test's situation."""
    values = qpain_values(vignettes, spread)
    tables = {
        "group_means.csv": QPAIN_GROUP_MEANS.compute(values).to_csv(index=False),
        "paired_tests.csv": QPAIN_PAIRED_TESTS.compute(values).to_csv(index=False),
    }
    header = "rubric,dataset,rater_type,aggregation,outcome,source,n,estimate,ci_low,ci_high,note\n"
    return AnalysisRun.objects.create(
        status=AnalysisRun.Status.DONE, progress=100, rates_csv=header, plan_tables=tables
    )


def response_of(client, run):
    client.force_login(AnalystFactory())
    response = client.get(reverse("analysis:run", args=[run.pk]))
    assert response.status_code == 200
    return response


def page_of(client, run) -> str:
    """The page's main part (the header holds the help menu, another <details>)."""
    return response_of(client, run).content.decode().split('<main id="main">', 1)[1]


def test_the_summary_comes_first_and_every_section_is_collapsed(client):
    page = page_of(client, qpain_run())
    assert page.index('id="summary-heading"') < page.index('id="progress-heading"') < page.index("<details")
    assert "<details open" not in page and page.count('<details class="result-section"') == 2
    holds = re.search(r'<p data-field="holds">(.*?)</p>', page, re.S).group(1)
    assert holds.startswith("This run holds Q-Pain: mean P(No) by race x gender and pain context; Q-Pain: paired")
    assert (
        "There were no ratings, so the rating tables (rates, reliability, cross-tab, regression) are left out" in holds
    )
    # the EquityMedQA sections are not shown empty
    for absent in ("Rates with 95% CIs", "Inter-rater reliability", "Consumer regression", "No rows"):
        assert absent not in page
    assert "<caption>Pairs that differ in p_no (Stand-in)</caption>" in page


def test_the_heat_table_follows_its_heading_and_has_a_key(client):
    page = page_of(client, qpain_run())
    heading = page.index("<h2>Q-Pain: mean P(No) by race x gender and pain context</h2>")
    heat = page.index('class="estimates heat-table"')
    key = page.index('data-field="heat-key"')
    assert heading < page.index("<h3", heading) < key < heat
    assert re.search(r"Shading: \d+\.\d%</span>", page) and "linear-gradient(to right" in page


def test_group_mean_intervals_stay_within_0_and_1_and_say_they_were_clipped(client):
    run = qpain_run(vignettes=2)
    response = response_of(client, run)
    page = response.content.decode()
    # The CSV keeps the t-interval of two answers, which runs below 0 ...
    assert ",-0." in run.plan_tables["group_means.csv"]
    # ... the page writes it within 0-1, marked
    (means,) = [s["table"] for s in response.context["plan_sections"] if s["table"].name == "group_means"]
    cells = [re.fullmatch(r"(\d\.\d{3}) – (\d\.\d{3})( †)?", row[means.columns.index("95% CI")]) for row in means.rows]
    assert all(cells) and all(0 <= float(c.group(1)) <= float(c.group(2)) <= 1 for c in cells)
    assert any(cell.group(3) for cell in cells) and means.clipped
    assert "† The t-interval runs past 0–1 (few answers, n in the table): shown clipped to" in page


def test_the_page_says_at_what_level_the_bonferroni_intervals_were_computed(client):
    page = page_of(client, qpain_run(vignettes=3, spread=0.03))
    assert "Bonferroni intervals computed at 98.33% (1 − 0.05/3, 3 pairs)" in page
    assert "0.05/28" not in page and "1 - 0.05/m, m the pairs of the groups present" in page


def test_counts_are_whole_and_columns_of_one_value_are_said_once(client):
    response = response_of(client, qpain_run())
    page = response.content.decode()
    assert "In every row: study <strong>Q-Pain</strong> · outcome <strong>p_no</strong>" in page
    for section in response.context["plan_sections"]:
        table = section["table"]
        for label in ("n", "n blocks", "n dropped"):
            if label in table.columns:  # counts written whole ("2", never "2.000")
                assert all(row[table.columns.index(label)].isdigit() for row in table.rows), label
    assert "-0.000" not in page
