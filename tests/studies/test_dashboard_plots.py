"""The dashboard's plots (studies/dashboard_plots.py): ratings per day per pool, progress toward the target and
time per item, as SVG with text alternatives; only the plots with data are shown."""

from datetime import date

import pytest
from django.urls import reverse

from studies import dashboard_plots
from studies.assignment import assign_study
from studies.models import Assignment
from tests.factories import AnalystFactory
from tests.studies.test_dashboard import pool, raters, study_with_items, submit

pytestmark = pytest.mark.django_db


@pytest.fixture
def rated_study():
    """Four items, one physician rating each; two of them rated (2 and 4 active minutes)."""
    study = study_with_items(n_items=4, replication=1)
    raters("physician", 1)
    assign_study(study=study, pool_id=pool("physician").id)
    first, second = Assignment.objects.filter(item__study=study).order_by("pk")[:2]
    submit(first, active=120)
    submit(second, active=240)
    return study


def test_the_dashboard_shows_each_plot_with_its_numbers_in_words(client, coordinator, rated_study):
    client.force_login(coordinator)

    response = client.get(reverse("coordination:dashboard", args=[rated_study.pk]))

    page = response.content.decode()
    assert [plot.name for plot in response.context["plots"]] == ["progress", "per-day", "time"]
    for name in ("progress", "per-day", "time"):
        assert reverse("coordination:dashboard_plot", args=[rated_study.pk, name]) in page
    assert "Physician: 2 of 4 ratings." in page
    assert "2 rated items; median 3.0 min, from 2.0 to 4.0 min." in page
    assert "Physician: 2 ratings over 1 day(s)" in page


def test_each_plot_is_an_svg_for_the_study_team_only(client, coordinator, physician, rated_study):
    for user, status in ((coordinator, 200), (AnalystFactory(), 200), (physician, 403)):
        client.force_login(user)
        for name in ("progress", "per-day", "time"):
            response = client.get(reverse("coordination:dashboard_plot", args=[rated_study.pk, name]))
            assert response.status_code == status
            if status == 200:
                assert response["Content-Type"] == "image/svg+xml" and b"<svg" in response.content
    client.force_login(coordinator)
    assert client.post(reverse("coordination:dashboard_plot", args=[rated_study.pk, "time"])).status_code == 405
    assert client.get(reverse("coordination:dashboard_plot", args=[rated_study.pk, "other"])).status_code == 404


def test_a_study_without_ratings_shows_only_its_progress(client, coordinator):
    study = study_with_items(n_items=2, replication=2)
    client.force_login(coordinator)

    response = client.get(reverse("coordination:dashboard", args=[study.pk]))

    assert [plot.name for plot in response.context["plots"]] == ["progress"]
    assert client.get(reverse("coordination:dashboard_plot", args=[study.pk, "time"])).status_code == 404


def test_the_figures_draw_from_plain_data():
    per_pool = {"Physician": {date(2026, 1, 1): 3, date(2026, 1, 3): 1}, "Consumer": {date(2026, 1, 2): 2}}
    assert dashboard_plots.per_day_figure(per_pool).lstrip().startswith(b"<?xml")
    assert dashboard_plots.per_day_alt(per_pool) == (
        "Physician: 4 ratings over 2 day(s), most on 01 Jan 2026 (3); Consumer: 2 ratings over 1 day(s), most on "
        "02 Jan 2026 (2)."
    )
    assert b"<svg" in dashboard_plots.progress_figure([("Physician", 3, 4), ("Consumer", 0, 0)])
    assert b"<svg" in dashboard_plots.time_figure([1.0, 2.5, 9.0])
