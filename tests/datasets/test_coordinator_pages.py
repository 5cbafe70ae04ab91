"""Issue 22 on the datasets pages a coordinator meets: a job's settings read as words, a finished job links to its
answers, Resume only beside the notice it helps with, home tells the truth about command imports, and an import
that needs a dataset name says so when the form is sent."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from datasets.generation import jobs
from datasets.generation_pages import parameter_rows, readable
from datasets.models import ImportJob, PromptRecipe
from tests.factories import AnswerSourceFactory, DatasetFactory, QuestionFactory
from tests.llm_server import FakeLLM

pytestmark = pytest.mark.django_db


def test_settings_read_as_words_booleans_as_yes_or_no_and_mappings_as_key_value():
    assert readable(True) == "yes" and readable(False) == "no" and readable(None) == ""
    assert readable({"mitigation": "education"}) == "mitigation: education"
    assert readable(["a", {"k": False}]) == "a, k: no"
    rows = dict(parameter_rows({"logprobs": False, "condition": {"mitigation": "education"}, "temperature": 0.0}))
    assert rows == {"Temperature": "0.0", "Log-probabilities requested": "no", "condition": "mitigation: education"}


def test_a_finished_job_links_to_its_answers_and_offers_no_resume(
    client, coordinator, django_capture_on_commit_callbacks
):
    dataset = DatasetFactory(name="Sample")
    QuestionFactory(dataset=dataset, external_id="q0", text="Is this dose right?")
    with FakeLLM() as server:
        source = AnswerSourceFactory(base_url=server.base_url, model_name="m", concurrency=1)
        with django_capture_on_commit_callbacks(execute=True):
            job = jobs.start_job(dataset=dataset, source=source)
    client.force_login(coordinator)

    page = client.get(reverse("datasets:generation_job", args=[job.pk])).content.decode()

    assert "data-job-answers" in page and reverse("datasets:detail", args=[dataset.pk]) in page
    assert f"source__id__exact={source.pk}" in page and f"settings_hash={job.settings_hash}" in page
    assert "Resume</button>" not in page and "Cancel the job" not in page
    start = page.index(reverse("admin:datasets_answer_changelist"))
    listed = client.get(page[start : page.index('"', start)].replace("&amp;", "&"))
    assert listed.status_code == 200 and listed.context["cl"].result_count == 1  # the job's one answer


def test_resume_sits_in_the_idle_notice_and_cancel_is_a_different_action(client, coordinator):
    dataset = DatasetFactory()
    QuestionFactory(dataset=dataset)
    job = jobs.start_job(dataset=dataset, source=AnswerSourceFactory(base_url="http://127.0.0.1:9/v1", model_name="m"))
    client.force_login(coordinator)

    page = client.get(reverse("datasets:generation_job", args=[job.pk])).content.decode()

    idle = page[page.index('data-notice="idle"') :]
    assert idle.index("Resume</button>") < idle.index("</div>")  # shown and hidden with the notice
    assert 'class="secondary">Resume' in page and 'class="danger">Cancel the job' in page


def test_home_says_command_imports_are_not_listed_and_points_to_the_datasets(client, coordinator):
    DatasetFactory.create_batch(2)
    client.force_login(coordinator)

    page = client.get(reverse("home")).content.decode()

    assert "No imports yet" not in page
    assert "Imports made by commands" in page and "the 2 datasets" in page
    assert reverse("datasets:list") in page and reverse("datasets:sources") in page


def test_an_import_that_needs_a_dataset_name_is_refused_when_sent(client, coordinator):
    client.force_login(coordinator)
    upload = SimpleUploadedFile("my-questions.csv", b"question\nIs this pain normal?\n")

    response = client.post(reverse("datasets:import_questions"),
                           {"file": upload, "format": "auto", "question_column": "question"})  # fmt: skip

    assert "Name the dataset" in response.context["form"].errors["dataset"][0]
    assert "--dataset" not in response.content.decode() and not ImportJob.objects.exists()


@pytest.mark.parametrize(
    ("filename", "content", "fields"),
    [
        ("my-questions.csv", b"question\nIs this pain normal?\n", {"dataset": "Mine"}),
        ("my-questions.csv", b"question,set\nIs this pain normal?,Mine\n", {"dataset_column": "set"}),
        ("equitymedqa_omaq.csv", b"Is this pain normal for women?\n", {}),
        ("medqa.jsonl", b'{"question": "Q?", "options": {"A": "x"}, "answer_idx": "A"}\n', {}),
    ],
)
def test_an_import_whose_dataset_is_known_is_queued(client, coordinator, filename, content, fields):
    client.force_login(coordinator)
    data = {"file": SimpleUploadedFile(filename, content), "format": "auto", "question_column": "question", **fields}

    response = client.post(reverse("datasets:import_questions"), data)

    assert response.status_code == 302 and ImportJob.objects.count() == 1


def test_the_variant_form_groups_levels_by_generator_in_fieldsets(client, coordinator):
    client.force_login(coordinator)

    page = client.get(reverse("datasets:variant_run_create")).content.decode()

    for generator, level in (("biasmedqa", "recency"), ("qpain", "Black woman"), ("contextsrh", "location")):
        group = page[page.index(f'data-generator-levels="{generator}"') :]
        assert f"<legend>Levels of {generator}</legend>" in group
        assert group.index(f'value="{level}"') < group.index("</fieldset>")
    assert "js/variant-run.js" in page


def test_a_level_of_another_generator_is_still_refused_and_the_choice_kept(client, coordinator):
    client.force_login(coordinator)
    base = DatasetFactory()

    data = {"generator": "qpain", "base_dataset": base.pk, "seed": 0, "biases": ["recency"]}
    response = client.post(reverse("datasets:variant_run_create"), data)

    assert "biases" in response.context["form"].errors
    assert 'value="recency" id="id_biases_biasmedqa_1" checked' in response.content.decode()


def test_a_recipe_with_examples_and_no_pool_says_to_name_the_pool_with_a_link(client, coordinator):
    dataset = DatasetFactory()
    QuestionFactory(dataset=dataset, external_id="0", text="Which drug?", metadata={"options": {"A": "x", "B": "y"}})
    recipe = PromptRecipe.objects.create(
        name="With examples", instruction="Answer.", examples=[{"answer": "wrong"}], max_tokens=8,
        item_template="Q: {question}\nOptions: {options}\nA: ",
    )  # fmt: skip
    client.force_login(coordinator)
    edit = reverse("datasets:recipe_edit", args=[recipe.pk])

    listing = client.get(reverse("datasets:recipes")).content.decode()
    preview = client.get(reverse("datasets:recipe", args=[recipe.pk]), {"dataset": dataset.pk, "external_id": "0"})

    assert (
        "no pool" not in listing.replace("no pool to draw them from", "") and f'href="{edit}" data-name-pool' in listing
    )
    content = preview.content.decode()
    assert "names no pool" in content and "Examples pool" in content and f'href="{edit}"' in content
