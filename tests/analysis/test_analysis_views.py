"""The analyst pages: who may open them, a run from the button to its tables (eager Celery), downloads, and the
run service's claim, progress and failure handling."""

import io
from datetime import timedelta
from types import SimpleNamespace

import pandas as pd
import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from analysis import services
from analysis.models import TABLE_FIELDS, AnalysisRun
from datasets.demo import seed_demo
from raters.models import RaterBackground
from studies.demo import seed_demo_studies
from studies.demo_ratings import seed_simulated_ratings
from studies.models import Study
from tests.factories import (
    AnalystFactory,
    IndependentItemFactory,
    OnboardedRaterFactory,
    RaterBackgroundFactory,
    RaterFactory,
    StudyFactory,
)
from tests.studies.test_exports import build_release, independent, rate

pytestmark = pytest.mark.django_db


@pytest.fixture
def analyst():
    return AnalystFactory()


@pytest.fixture
def done_run(analyst, django_capture_on_commit_callbacks):
    build_release()
    with django_capture_on_commit_callbacks(execute=True):
        run = services.start_analysis(study=None, user=analyst)
    run.refresh_from_db()
    assert run.status == AnalysisRun.Status.DONE, run.error
    return run


def page_urls(run) -> list[str]:
    return [
        reverse("analysis:index"),
        reverse("analysis:run", args=[run.pk]),
        reverse("analysis:progress", args=[run.pk]),
        reverse("analysis:table_csv", args=[run.pk, "rates"]),
        reverse("analysis:plot", args=[run.pk, "independent", "bias_presence", "pooled", "svg"]),
    ]


# --- Access ---------------------------------------------------------------------------------------------


def test_anonymous_visitors_are_sent_to_the_login_page(client):
    run = AnalysisRun.objects.create()
    for url in page_urls(run):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith(reverse("login")), url


def test_raters_are_refused_every_analysis_page(client):
    run = AnalysisRun.objects.create()
    client.force_login(RaterFactory(pool="physician"))
    for url in page_urls(run):
        assert client.get(url).status_code == 403, url
    assert client.post(reverse("analysis:index"), {"study": ""}).status_code == 403
    assert not AnalysisRun.objects.exclude(pk=run.pk).exists()


def test_analysts_and_coordinators_see_the_runs_and_the_form(client, analyst, coordinator):
    AnalysisRun.objects.create(status=AnalysisRun.Status.RUNNING, progress=40)
    for user in (analyst, coordinator):
        client.force_login(user)
        response = client.get(reverse("analysis:index"))
        assert response.status_code == 200
        assert b"Run analysis" in response.content and b"all studies" in response.content
        assert b"(40 %)" in response.content


def test_pages_refuse_the_wrong_method(client, analyst):
    run = AnalysisRun.objects.create()
    client.force_login(analyst)
    assert client.put(reverse("analysis:index")).status_code == 405
    for url in page_urls(run)[1:]:
        assert client.post(url).status_code == 405, url


def test_the_navigation_and_the_study_dashboard_link_to_the_analysis(client, analyst):
    build_release()
    study = Study.objects.get(name="Pairwise study")
    client.force_login(analyst)

    home = client.get(reverse("home"))
    dashboard = client.get(reverse("coordination:dashboard", args=[study.pk]))

    assert reverse("analysis:index").encode() in home.content
    assert f"{reverse('analysis:index')}?study={study.pk}".encode() in dashboard.content
    form = client.get(reverse("analysis:index"), {"study": study.pk})
    assert f'<option value="{study.pk}" selected>'.encode() in form.content


# --- The form ------------------------------------------------------------------------------------------


def test_the_form_offers_the_consumer_levels_present_most_frequent_first(client, analyst):
    raters = build_release()
    RaterBackground.objects.filter(profile=raters.consumer).update(race_ethnicity=["White", "Asian"])
    client.force_login(analyst)

    response = client.get(reverse("analysis:index"))

    form = response.context["form"]
    assert form.fields["rater_age_group"].choices == [("", "Most frequent level"), ("25-34", "25-34 (1 rating)")]
    assert form.fields["rater_age_group"].initial == "25-34"
    # Named as the regression names them: one level per category chosen (an indicator each), not "White; Asian".
    assert [c for c, _ in form.fields["rater_race_ethnicity"].choices] == ["", "Asian", "White"]
    assert b'<option value="Woman" selected>' in response.content


def consumer_study(name: str, background: dict) -> Study:
    """An independent study with one item rated by a consumer of the given demographics."""
    consumer = OnboardedRaterFactory(pool="consumer").rater_profile
    RaterBackgroundFactory(profile=consumer, **background)
    study = StudyFactory(kind="independent", name=name)
    rate(IndependentItemFactory(study=study), consumer, independent("minor_bias", ["other_bias"]))
    return study


def test_the_reference_levels_offered_are_those_of_the_chosen_study(client, analyst):
    young = consumer_study("Young", {"age_group": "18-24", "gender": "Woman", "race_ethnicity": ["Asian", "White"]})
    old = consumer_study("Old", {"age_group": "65 or older", "gender": "Man", "race_ethnicity": ["Prefer not to say"]})
    client.force_login(analyst)

    def offered(study) -> dict[str, list[str]]:
        form = client.get(reverse("analysis:index"), {"study": study.pk} if study else {}).context["form"]
        return {p: [c for c, _ in form.fields[p].choices][1:] for p in ("rater_age_group", "rater_race_ethnicity")}

    assert offered(young) == {"rater_age_group": ["18-24"], "rater_race_ethnicity": ["Asian", "White"]}
    assert offered(old) == {"rater_age_group": ["65 or older"], "rater_race_ethnicity": ["Prefer not to say"]}
    assert offered(None) == {"rater_age_group": ["18-24", "65 or older"],
                             "rater_race_ethnicity": ["Asian", "Prefer not to say", "White"]}  # fmt: skip
    # "Prefer not to say" is offered but never the default reference.
    assert (
        client.get(reverse("analysis:index"), {"study": old.pk}).context["form"]["rater_race_ethnicity"].initial == ""
    )

    # A level of another study's consumers is refused with the chosen study's levels shown, and nothing is queued.
    refused = client.post(reverse("analysis:index"), {"study": young.pk, "rater_age_group": "65 or older"})
    assert refused.status_code == 400 and not AnalysisRun.objects.exists()
    assert b"not a level of the chosen study" in refused.content
    assert [c for c, _ in refused.context["form"].fields["rater_age_group"].choices] == ["", "18-24"]
    accepted = client.post(reverse("analysis:index"), {"study": old.pk, "rater_age_group": "65 or older"})
    assert accepted.status_code == 302
    assert AnalysisRun.objects.get().reference_levels == {"rater_age_group": "65 or older"}


def test_levels_outside_the_panels_categories_are_labelled_and_never_merged(client, analyst):
    """Issue 22: consumers recorded with other age groups (an imported file's 18-29) beside the panel's (18-24):
    the two sets overlap, so neither is mapped onto the other; the foreign level is labelled, per study."""
    consumer_study("Panel", {"age_group": "18-24", "gender": "Woman", "race_ethnicity": ["Asian"]})
    imported = consumer_study("Imported", {"age_group": "18-29", "gender": "Woman", "race_ethnicity": ["Asian"]})
    client.force_login(analyst)

    def labels(study) -> dict[str, str]:
        form = client.get(reverse("analysis:index"), {"study": study.pk} if study else {}).context["form"]
        return dict(form.fields["rater_age_group"].choices[1:])

    assert labels(None) == {"18-24": "18-24 (1 rating)", "18-29": "18-29 (1 rating; not a panel category)"}
    assert labels(imported) == {"18-29": "18-29 (1 rating; not a panel category)"}
    page = client.get(reverse("analysis:index")).content.decode()
    assert "never merged with the panel's 18-24 or 25-34 it overlaps" in page


def test_an_unknown_study_or_level_is_refused_with_400_and_nothing_is_queued(client, analyst):
    client.force_login(analyst)

    bad_study = client.post(reverse("analysis:index"), {"study": "999"})
    bad_level = client.post(reverse("analysis:index"), {"study": "", "rater_gender": "Nobody"})

    assert bad_study.status_code == bad_level.status_code == 400
    assert not AnalysisRun.objects.exists()


# --- A run from the button to its tables ----------------------------------------------------------------


def test_run_analysis_queues_a_run_that_the_worker_finishes(client, analyst, django_capture_on_commit_callbacks):
    build_release()
    study = Study.objects.get(name="Independent study")
    client.force_login(analyst)

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = client.post(reverse("analysis:index"), {"study": study.pk, "rater_age_group": "25-34"})

    run = AnalysisRun.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("analysis:run", args=[run.pk])
    assert len(callbacks) == 1  # enqueued once the run row was committed
    assert (run.status, run.progress, run.step, run.error) == (AnalysisRun.Status.DONE, 100, "Finished", "")
    assert (run.study, run.created_by, run.seed) == (study, analyst, 0)
    assert run.reference_levels == {"rater_age_group": "25-34"}
    assert run.ratings == {"independent": 5, "pairwise": 0, "counterfactual": 0}
    assert run.started_at <= run.finished_at
    rates = pd.read_csv(io.StringIO(run.rates_csv))
    assert set(rates["rubric"]) == {"independent"}
    page = client.get(response["Location"])
    assert page.status_code == 200
    assert b"Age group: 25-34" in page.content
    assert b"independent 5, pairwise 0, counterfactual 0" in page.content
    assert b'http-equiv="refresh"' not in page.content


def values_of(table, label: str) -> set[str]:
    """A displayed table's values in one column, also when the page folds a column of one value above it."""
    common = dict(table.common or [])
    if label in common:
        return {common[label]}
    index = table.columns.index(label)
    return {row[index] for row in table.rows}


def test_the_run_page_shows_every_table_with_three_decimals_notes_and_downloads(client, analyst, done_run):
    client.force_login(analyst)

    response = client.get(reverse("analysis:run", args=[done_run.pk]))

    content = response.content.decode()
    for name in TABLE_FIELDS:
        assert reverse("analysis:table_csv", args=[done_run.pk, name]) in content
    rates = response.context["rates_table"]
    # rubric and aggregation hold one value once filtered: the page says them once, above the table
    assert rates.common[:2] == [("rubric", "independent"), ("aggregation", "pooled")]
    assert rates.columns[:4] == ["dataset", "rater type", "outcome", "source"]
    assert "95% CI" in rates.columns and "ci low" not in rates.columns
    estimate = rates.columns.index("estimate")
    assert all(len(row[estimate].split(".")[1]) == 3 for row in rates.rows)
    assert "not estimable" in content
    assert values_of(rates, "rubric") == {"independent"}  # the first rubric by default...
    assert values_of(rates, "aggregation") == {"pooled"}  # ...pooled
    titles = [table.title for table in response.context["other_tables"]]
    assert titles == ["Inter-rater reliability", "Counterfactual cross-tab", "Consumer regression"]
    plots = response.context["plots"]
    assert [plot["name"] for plot in plots][:2] == ["independent-bias_presence-pooled",
                                                    "independent-inaccuracy_for_some_axes-pooled"]  # fmt: skip
    assert f'<img src="{plots[0]["svg"]}"' in content and plots[0]["png"] in content


def test_the_rates_table_is_filtered_by_rubric_dataset_and_aggregation(client, analyst, done_run):
    client.force_login(analyst)
    dataset = "Counterfactual Context - Manual (CC-Manual)"

    response = client.get(
        reverse("analysis:run", args=[done_run.pk]),
        {"rubric": "counterfactual", "dataset": dataset, "aggregation": "majority"},
    )

    table = response.context["rates_table"]
    assert table.rows and values_of(table, "rubric") == {"counterfactual"}
    assert values_of(table, "dataset") == {dataset} and values_of(table, "aggregation") == {"majority"}
    assert {"bias_presence", "omits_systemic_explanation"} <= values_of(table, "outcome")
    assert {plot["name"].split("-")[0] for plot in response.context["plots"]} == {"counterfactual"}
    everything = client.get(reverse("analysis:run", args=[done_run.pk]), {"rubric": "", "aggregation": "nonsense"})
    shown = everything.context["rates_table"]
    assert values_of(shown, "rubric") == {"independent", "pairwise", "counterfactual"}
    assert values_of(shown, "aggregation") == {"pooled"}  # nonsense: the default


def test_each_table_downloads_as_the_csv_the_command_writes(client, analyst, done_run, tmp_path):
    from django.core.management import call_command

    call_command("analyze", "--out", str(tmp_path))
    client.force_login(analyst)

    for name in TABLE_FIELDS:
        response = client.get(reverse("analysis:table_csv", args=[done_run.pk, name]))
        assert response.status_code == 200
        assert response["Content-Type"] == "text/csv; charset=utf-8"
        assert response["Content-Disposition"] == f'attachment; filename="analysis-{done_run.pk}-{name}.csv"'
        assert response.content == (tmp_path / f"{name}.csv").read_bytes()
    assert client.get(reverse("analysis:table_csv", args=[done_run.pk, "secrets"])).status_code == 404


def test_plots_download_as_svg_and_png(client, analyst, done_run):
    client.force_login(analyst)

    svg = client.get(reverse("analysis:plot", args=[done_run.pk, "independent", "bias_presence", "pooled", "svg"]))
    png = client.get(reverse("analysis:plot", args=[done_run.pk, "pairwise", "bias_presence", "majority", "png"]))
    missing = client.get(reverse("analysis:plot", args=[done_run.pk, "independent", "nothing", "pooled", "svg"]))

    assert svg.status_code == 200 and svg["Content-Type"] == "image/svg+xml"
    assert b"<svg" in svg.content
    assert png.status_code == 200 and png["Content-Type"] == "image/png"
    assert png.content.startswith(b"\x89PNG\r\n\x1a\n")
    assert missing.status_code == 404


def test_a_run_without_ratings_finishes_and_its_page_shows_no_empty_section(
    client, analyst, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        run = services.start_analysis(study=None, user=analyst)
    client.force_login(analyst)

    run.refresh_from_db()
    page = client.get(reverse("analysis:run", args=[run.pk]))

    assert run.status == AnalysisRun.Status.DONE
    assert run.ratings == {"independent": 0, "pairwise": 0, "counterfactual": 0}
    # Issue 22: sections with no data are left out, and one line says what the run holds.
    content = page.content.decode().split('<main id="main">', 1)[1]  # the page, not the header's help menu
    assert page.status_code == 200 and "No rows" not in content and "<details" not in content
    assert "There were no ratings, so the rating tables" in content and page.context["headlines"] == []
    assert "plots" not in page.context
    for name in TABLE_FIELDS:  # the (empty) files are still served
        assert client.get(reverse("analysis:table_csv", args=[run.pk, name])).status_code == 200


def test_a_run_still_running_refreshes_itself_and_serves_no_tables_yet(client, analyst):
    run = AnalysisRun.objects.create(status=AnalysisRun.Status.RUNNING, progress=35, step="Computing the tables")
    client.force_login(analyst)

    page = client.get(reverse("analysis:run", args=[run.pk]))
    progress = client.get(reverse("analysis:progress", args=[run.pk]))

    assert b'<noscript><meta http-equiv="refresh"' in page.content
    assert b'value="35"' in page.content and b"35 %: Computing the tables" in page.content
    assert b"js/analysis.js" in page.content
    assert progress.json() == {"id": run.pk, "status": "running", "status_display": "Running", "finished": False,
                               "progress": 35, "step": "Computing the tables"}  # fmt: skip
    assert client.get(reverse("analysis:table_csv", args=[run.pk, "rates"])).status_code == 404
    plot = reverse("analysis:plot", args=[run.pk, "independent", "bias_presence", "pooled", "png"])
    assert client.get(plot).status_code == 404


def test_a_failed_run_shows_its_error(client, analyst):
    run = AnalysisRun.objects.create(
        status=AnalysisRun.Status.FAILED, step="Loading the ratings", error="ExportError: clash"
    )
    client.force_login(analyst)

    page = client.get(reverse("analysis:run", args=[run.pk]))

    assert b"The analysis failed while loading the ratings" in page.content
    assert b"ExportError: clash" in page.content
    assert b"refresh" not in page.content


# --- The run service ------------------------------------------------------------------------------------


def test_a_run_is_claimed_once(done_run):
    assert services.run_analysis(run_id=done_run.pk) is None  # done: nothing to claim
    running = AnalysisRun.objects.create(status=AnalysisRun.Status.RUNNING, started_at=timezone.now())
    assert services.run_analysis(run_id=running.pk) is None  # another worker has it


def test_a_run_left_running_past_the_time_limit_is_taken_over(settings):
    long_ago = timezone.now() - timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT + 60)
    run = AnalysisRun.objects.create(status=AnalysisRun.Status.RUNNING, started_at=long_ago, progress=60)

    finished = services.run_analysis(run_id=run.pk)

    assert finished.status == AnalysisRun.Status.DONE
    assert finished.started_at > long_ago


def test_a_failing_analysis_stores_its_message(monkeypatch):
    run = AnalysisRun.objects.create()

    def broken(*args, **kwargs):
        raise ValueError("pairwise rating in row 3 must fill exactly two columns")

    monkeypatch.setattr(services.tables, "build_report", broken)
    failed = services.run_analysis(run_id=run.pk)

    failed.refresh_from_db()
    assert failed.status == AnalysisRun.Status.FAILED
    assert failed.error == "ValueError: pairwise rating in row 3 must fill exactly two columns"
    assert (failed.progress, failed.step) == (10, "Computing the tables")  # where it failed
    assert failed.finished_at is not None and failed.rates_csv == ""


def test_progress_is_written_at_most_every_half_second(monkeypatch):
    run = AnalysisRun.objects.create(status=AnalysisRun.Status.RUNNING)
    clock = iter([100.0, 100.1, 100.7, 100.8])
    # Only the service's clock: patching time.monotonic itself would also stop the Redis client's clock.
    monkeypatch.setattr(services, "time", SimpleNamespace(monotonic=lambda: next(clock)))
    writer = services._ProgressWriter(run.pk)

    seen = []
    for percent, step, force in [(10, "Loading", False), (20, "Rates", False), (50, "Reliability", False),
                                 (95, "Saving", True)]:  # fmt: skip
        writer(percent, step, force=force)
        run.refresh_from_db()
        seen.append((run.progress, run.step))

    assert seen == [(10, "Loading"), (10, "Loading"), (50, "Reliability"), (95, "Saving")]


def test_the_tables_beside_the_four_are_stored_shown_and_downloaded_as_analyze_writes_them(
    client, analyst, tmp_path, django_capture_on_commit_callbacks, settings
):
    """Issue 22: counterfactual pairs per dimension (and filtered sets, when a multiply rated set lacks a rating)
    as new files, from the demo's ratings (its counterfactual pairs' answers are also rated independently)."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    seed_demo()
    seed_demo_studies()
    seed_simulated_ratings()
    with django_capture_on_commit_callbacks(execute=True):
        done_run = services.start_analysis(study=None, user=analyst)
    done_run.refresh_from_db()
    assert "counterfactual_dimensions.csv" in done_run.extra_tables
    call_command("analyze", "--out", str(tmp_path), stdout=io.StringIO())
    for name, text in done_run.extra_tables.items():
        assert (tmp_path / name).read_text(encoding="utf-8") == text
    client.force_login(analyst)
    page = client.get(reverse("analysis:run", args=[done_run.pk])).content.decode()
    assert "Counterfactual pairs per dimension of bias (from the answers&#x27; independent ratings)" in page
    download = client.get(reverse("analysis:table_csv", args=[done_run.pk, "counterfactual_dimensions"]))
    assert (
        download.status_code == 200
        and download.content.decode() == done_run.extra_tables["counterfactual_dimensions.csv"]
    )
    table = pd.read_csv(io.StringIO(done_run.extra_tables["counterfactual_dimensions.csv"]))
    assert {"one_answer_biased", "at_least_one_answer_biased", "both_answers_biased"} == set(table["outcome"])
    assert client.get(reverse("analysis:table_csv", args=[done_run.pk, "nonsense"])).status_code == 404
