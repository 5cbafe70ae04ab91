"""The variant-run pages: start a run (generator, base dataset, seed, biases, limit), its status page with
progress and the dataset it wrote, and the list of runs; success, wrong method, permission denied."""

import pytest
from django.urls import reverse

from datasets.models import Dataset, VariantRun
from datasets.variants import runs
from tests.factories import AnalystFactory, DatasetFactory, QuestionFactory

pytestmark = pytest.mark.django_db

OPTIONS = {"A": "Aspirin", "B": "Heparin", "C": "Warfarin", "D": "Nothing"}


@pytest.fixture
def medqa():
    dataset = DatasetFactory(name="MedQA sample")
    for n in range(6):
        QuestionFactory(dataset=dataset, external_id=str(n), text=f"A patient. Question {n}: which drug?",
                        metadata={"options": OPTIONS, "answer_idx": "B", "answer": "Heparin", "qid": n})  # fmt: skip
    return dataset


@pytest.fixture
def run(medqa):
    return runs.start_variant_run(generator="biasmedqa", base_dataset=medqa, options={"limit": 1}, queue=False)


def test_anonymous_users_go_to_login_and_raters_and_analysts_get_403(client, physician, medqa, run):
    urls = [reverse("datasets:variant_runs"), reverse("datasets:variant_run_create"),
            reverse("datasets:variant_run", args=[run.pk])]  # fmt: skip
    for url in urls:
        assert client.get(url)["Location"].startswith(reverse("login")), url
    for user in (physician, AnalystFactory()):
        client.force_login(user)
        for url in urls:
            assert client.get(url).status_code == 403, url
        response = client.post(urls[1], {"generator": "biasmedqa", "base_dataset": medqa.pk, "seed": 0})
        assert response.status_code == 403
    assert VariantRun.objects.count() == 1


def test_wrong_methods_are_refused(client, coordinator, run):
    client.force_login(coordinator)
    assert client.post(reverse("datasets:variant_runs")).status_code == 405
    assert client.put(reverse("datasets:variant_run_create")).status_code == 405
    assert client.post(reverse("datasets:variant_run", args=[run.pk])).status_code == 405


def test_a_coordinator_makes_variants_and_the_status_page_links_to_them(
    client, coordinator, medqa, django_capture_on_commit_callbacks
):
    client.force_login(coordinator)
    form = client.get(reverse("datasets:variant_run_create"), {"base_dataset": medqa.pk})
    assert form.status_code == 200
    assert f'<option value="{medqa.pk}" selected>'.encode() in form.content
    assert b'value="recency"' in form.content and b'value="confirmation_v2"' in form.content

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("datasets:variant_run_create"),
            {"generator": "biasmedqa", "base_dataset": medqa.pk, "seed": "7", "biases": ["recency", "cultural"],
             "limit": "5"},
        )  # fmt: skip

    run = VariantRun.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("datasets:variant_run", args=[run.pk])
    assert (run.seed, run.options["biases"], run.options["limit"], run.created_by) == (7, ["recency", "cultural"], 5,
                                                                                       coordinator)  # fmt: skip
    page = client.get(response["Location"])
    run.refresh_from_db()
    assert page.status_code == 200 and run.status == VariantRun.Status.DONE
    assert b"10 of 10 variants (100 %)" in page.content
    assert reverse("datasets:detail", args=[run.dataset_id]).encode() in page.content
    assert b'http-equiv="refresh"' not in page.content  # finished: no more refreshing
    assert sorted(run.dataset.questions.values_list("external_id", flat=True))[:2] == ["0-cultural", "0-recency"]

    listing = client.get(reverse("datasets:variant_runs"))
    assert listing.status_code == 200 and f"Run {run.pk}".encode() in listing.content
    assert run.dataset.name.encode() in listing.content


def test_an_unfinished_run_page_refreshes_itself_and_shows_its_progress(client, coordinator, run):
    VariantRun.objects.filter(pk=run.pk).update(status=VariantRun.Status.RUNNING, done=3)
    client.force_login(coordinator)
    page = client.get(reverse("datasets:variant_run", args=[run.pk]))
    assert page.status_code == 200
    assert b'<meta http-equiv="refresh" content="2">' in page.content
    assert b"3 of 7 variants (43 %)" in page.content
    assert b"<code>limit</code>: 1" in page.content


def test_a_wrong_level_a_second_run_at_once_or_an_empty_base_is_a_form_error(client, coordinator, medqa, run):
    client.force_login(coordinator)
    create = reverse("datasets:variant_run_create")

    wrong = client.post(create, {"generator": "biasmedqa", "base_dataset": medqa.pk, "seed": "0", "biases": ["x"]})
    assert wrong.status_code == 400 and "biases" in wrong.context["form"].errors
    again = client.post(create, {"generator": "biasmedqa", "base_dataset": medqa.pk, "seed": "0"})
    assert again.status_code == 400
    assert f"Variant run {run.pk} is already making variants".encode() in again.content
    assert reverse("datasets:variant_run", args=[run.pk]).encode() in again.content
    empty = Dataset.objects.create(name="Empty")
    nothing = client.post(create, {"generator": "biasmedqa", "base_dataset": empty.pk, "seed": "0"})
    assert nothing.status_code == 400 and b"has no questions" in nothing.content
    assert VariantRun.objects.count() == 1
