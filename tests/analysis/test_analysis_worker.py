"""Run analysis → Celery task on a real worker over Redis → the run page with its tables, against PostgreSQL."""

import time

import pytest
from django.urls import reverse

from analysis.models import AnalysisRun
from tests.factories import AnalystFactory
from tests.studies.test_exports import build_release

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def _wait_until_finished(run_id: int, seconds: float = 60) -> AnalysisRun:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        run = AnalysisRun.objects.get(pk=run_id)
        if run.is_finished:
            return run
        time.sleep(0.2)
    pytest.fail(f"analysis run {run_id} did not finish in {seconds} s (status {run.status}, {run.progress} %)")


def test_the_worker_runs_an_analysis_to_done(celery_worker, reference_data, client):
    build_release()
    client.force_login(AnalystFactory())

    response = client.post(reverse("analysis:index"), {"study": ""})

    run = AnalysisRun.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("analysis:run", args=[run.pk])
    run = _wait_until_finished(run.pk)
    assert run.status == AnalysisRun.Status.DONE, run.error
    assert (run.progress, run.step) == (100, "Finished")
    assert run.ratings == {"independent": 5, "pairwise": 4, "counterfactual": 2}
    assert run.rates_csv.startswith("rubric,dataset,rater_type,aggregation,outcome,source,n,estimate")
    page = client.get(reverse("analysis:run", args=[run.pk]))
    assert page.status_code == 200 and b"Rates with 95% CIs" in page.content
    download = client.get(reverse("analysis:table_csv", args=[run.pk, "reliability"]))
    assert download.content.decode() == run.reliability_csv
