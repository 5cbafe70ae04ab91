"""Answers belong to studies: generation jobs and imports run for a study link every answer they create or find
(StudyAnswer, in the answer's transaction, once), and every item's answers belong to its study."""

import importlib
import io
from datetime import timedelta

import factory
import pandas as pd
import pytest
from django.apps import apps
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse
from django.utils import timezone

from datasets.generation import jobs
from datasets.importers import ImportRejected
from datasets.importers.answers import AnswerOptions
from datasets.importers.questions import QuestionOptions
from datasets.llm_client import Completion
from datasets.models import Answer, GenerationJob, ImportJob
from datasets.services import import_answers, import_questions
from engine import calls
from engine.models import Call
from scoring.qpain_import import import_qpain_outputs
from scoring.release_import import import_biasmedqa_responses
from studies.models import StudyAnswer, StudyItem
from tests.datasets.test_generation_engine import drain, model_source
from tests.factories import (
    AnswerFactory,
    AnswerSourceFactory,
    DatasetFactory,
    IndependentItemFactory,
    PairwiseItemFactory,
    QuestionFactory,
    StudyFactory,
)
from tests.llm_server import FakeLLM

pytestmark = pytest.mark.django_db

GENERATED, IMPORTED, ITEM = StudyAnswer.Via.GENERATED, StudyAnswer.Via.IMPORTED, StudyAnswer.Via.ITEM


def scorers_only_study(name="Automatic study"):
    return StudyFactory(name=name, rubric_version=None)


def links(study) -> dict[int, str]:
    """answer id -> via, of the study's answers."""
    return dict(StudyAnswer.objects.filter(study=study).values_list("answer_id", "via"))


@pytest.fixture
def dataset():
    dataset = DatasetFactory(name="Sample")
    QuestionFactory.create_batch(6, dataset=dataset, external_id=factory.Iterator([f"q{n}" for n in range(6)]))
    return dataset


# --- Generation ------------------------------------------------------------------------------------


def test_a_job_for_a_study_links_the_answers_it_finds_at_once_and_each_it_makes_when_stored(dataset):
    study, other = scorers_only_study(), scorers_only_study("Other")
    with FakeLLM() as server:
        source = model_source(server)
        jobs.start_job(dataset=dataset, source=source)
        drain(source)
        assert links(study) == {}  # a job for no study links nothing
        found = set(Answer.objects.values_list("id", flat=True))
        QuestionFactory(dataset=dataset, external_id="new", text="A question added since")

        job = jobs.start_job(dataset=dataset, source=source, study_id=study.pk)
        assert job.for_study == study.pk and job.already_present == 6
        assert links(study) == dict.fromkeys(found, GENERATED)  # linked with the job, before any question is asked
        drain(source)

    new = Answer.objects.get(question__external_id="new")
    assert links(study) == dict.fromkeys({*found, new.id}, GENERATED) and links(other) == {}
    assert len(server.requests) == 7


def test_a_late_duplicate_answer_for_a_study_is_linked_once(dataset):
    """Two workers answering one question (a lease that expired): one answer, one link."""
    study = scorers_only_study()
    source = AnswerSourceFactory(base_url="http://127.0.0.1:9/v1", model_name="m")
    jobs.start_job(dataset=dataset, source=source, study_id=study.pk)
    endpoint = source.endpoint
    call = calls.claim_next(endpoint, "A")
    Call.objects.filter(id=call.id).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    retaken = calls.claim_next(endpoint, "B")
    assert retaken.id == call.id

    calls.store(retaken, Completion("from B", "stop", "m", 10))
    calls.store(call, Completion("from A", "stop", "m", 10))

    answer = Answer.objects.get()
    assert answer.text == "from B" and links(study) == {answer.id: GENERATED}
    assert Call.objects.get(id=call.id).result == {"answer": answer.id}


def test_a_job_for_an_unknown_study_is_refused_before_anything_is_created(dataset):
    source = AnswerSourceFactory(base_url="http://127.0.0.1:9/v1", model_name="m")
    with pytest.raises(jobs.GenerationRefused, match="There is no study with id 999999"):
        jobs.start_job(dataset=dataset, source=source, study_id=999999)
    assert not GenerationJob.objects.exists()


def test_another_studys_running_job_is_named_with_what_to_do(dataset):
    study = scorers_only_study()
    source = AnswerSourceFactory(base_url="http://127.0.0.1:9/v1", model_name="m")
    running = jobs.start_job(dataset=dataset, source=source)
    with pytest.raises(jobs.GenerationRefused, match="start this job again: it then finds them") as refused:
        jobs.start_job(dataset=dataset, source=source, study_id=study.pk)
    assert refused.value.job == running


@pytest.mark.django_db(transaction=True)
def test_generate_answers_study_runs_the_job_for_the_study(dataset):
    from config.celery import app

    study = scorers_only_study()
    saved, app.conf.task_always_eager = app.conf.task_always_eager, True
    try:
        with FakeLLM() as server:
            model_source(server, name="Fake GPT")
            out = io.StringIO()
            call_command("generate_answers", "--dataset", "Sample", "--source", "Fake GPT", "--study", str(study.pk),
                         stdout=out)  # fmt: skip
            with pytest.raises(CommandError, match="There is no study with id 999999"):
                call_command("generate_answers", "--dataset", "Sample", "--source", "Fake GPT", "--study", "999999")
    finally:
        app.conf.task_always_eager = saved
    job = GenerationJob.objects.get()
    assert f"Job {job.pk} for study {study.pk}: 6 questions to answer" in out.getvalue()
    assert set(links(study)) == set(Answer.objects.values_list("id", flat=True)) and len(links(study)) == 6


def test_the_generation_page_and_api_offer_and_keep_the_study(client, coordinator, dataset):
    study = scorers_only_study("Scored by letters")
    source = AnswerSourceFactory(name="Unreachable", base_url="http://127.0.0.1:9/v1", model_name="m")
    client.force_login(coordinator)

    page = client.get(reverse("datasets:generate"))
    assert f'<option value="{study.pk}">Scored by letters</option>' in page.content.decode()
    response = client.post(reverse("datasets:generate"), {"dataset": dataset.pk, "source": source.pk,
                                                          "study": study.pk})  # fmt: skip
    job = GenerationJob.objects.get()
    assert response.status_code == 302 and job.for_study == study.pk
    shown = client.get(reverse("datasets:generation_job", args=[job.pk])).content.decode()
    assert reverse("coordination:dashboard", args=[study.pk]) in shown
    jobs.cancel_job(job)

    api = client.post("/api/generation-jobs/", {"dataset": dataset.pk, "source": source.pk, "study": study.pk},
                      content_type="application/json")  # fmt: skip
    assert api.status_code == 201 and api.json()["for_study"] == study.pk
    listed = client.get("/api/generation-jobs/", {"study": study.pk}).json()
    assert {job["id"] for job in listed["results"]} == {job.pk, api.json()["id"]}
    assert client.get("/api/generation-jobs/", {"study": study.pk + 1}).json()["results"] == []
    unknown = client.post("/api/generation-jobs/", {"dataset": dataset.pk, "source": source.pk, "study": 999999},
                          content_type="application/json")  # fmt: skip
    assert unknown.status_code == 400 and unknown.json()["study"] == ["There is no study with id 999999."]
    refused = client.post(reverse("datasets:generate"), {"dataset": dataset.pk, "source": source.pk,
                                                         "study": 999999})  # fmt: skip
    assert refused.status_code == 400 and GenerationJob.objects.count() == 2


def test_a_recipe_job_for_a_study_keeps_it(client, coordinator, dataset):
    from datasets.models import PromptRecipe

    study = scorers_only_study()
    recipe = PromptRecipe.objects.create(name="Plain", item_template="{question}")
    source = AnswerSourceFactory(base_url="http://127.0.0.1:9/v1", model_name="m")
    client.force_login(coordinator)
    page = client.get(reverse("datasets:recipe", args=[recipe.pk])).content.decode()
    assert 'name="job-study"' in page
    posted = client.post(reverse("datasets:recipe_generate", args=[recipe.pk]),
                         {"job-dataset": dataset.pk, "job-source": source.pk, "job-study": study.pk})  # fmt: skip
    assert posted.status_code == 302 and GenerationJob.objects.get().for_study == study.pk
    jobs.cancel_job(GenerationJob.objects.get())

    response = client.post(f"/api/recipes/{recipe.pk}/generate/", {"dataset": dataset.pk, "source": source.pk,
                                                                   "study": study.pk},
                           content_type="application/json")  # fmt: skip
    assert response.status_code == 201, response.content
    assert response.json()["for_study"] == study.pk


# --- Imports ---------------------------------------------------------------------------------------

ANSWERS_CSV = "question_id,answer\nq0,Rest.\nq1,Fluids.\nq2,Ice.\n"


def test_imported_answers_are_linked_and_a_reimport_adds_no_link(dataset):
    study, other = scorers_only_study(), scorers_only_study("Other")
    options = AnswerOptions(source="Med-PaLM 2", dataset="Sample", study=study.pk)
    report = import_answers(data=ANSWERS_CSV.encode(), filename="answers.csv", options=options)
    answer_ids = set(Answer.objects.values_list("id", flat=True))
    assert report.answers_created == 3 and links(study) == dict.fromkeys(answer_ids, IMPORTED)

    longer = ANSWERS_CSV + "q3,Sleep.\n"
    again = import_answers(data=longer.encode(), filename="answers.csv", options=options)
    assert (again.answers_created, again.answers_existing) == (1, 3)
    assert StudyAnswer.objects.filter(study=study).count() == 4

    # The same answers serve another study too: found, not created, and linked to it.
    import_answers(data=ANSWERS_CSV.encode(), filename="answers.csv",
                   options=AnswerOptions(source="Med-PaLM 2", dataset="Sample", study=other.pk))  # fmt: skip
    assert set(links(other)) == answer_ids and Answer.objects.count() == 4


def test_an_import_into_an_unknown_study_is_rejected_and_writes_nothing(dataset, tmp_path):
    options = AnswerOptions(source="Med-PaLM 2", dataset="Sample", study=999999)
    with pytest.raises(ImportRejected, match="There is no study with id 999999"):
        import_answers(data=ANSWERS_CSV.encode(), filename="answers.csv", options=options)
    path = tmp_path / "answers.csv"
    path.write_text(ANSWERS_CSV)
    with pytest.raises(CommandError, match="There is no study with id 999999"):
        call_command("import_answers", str(path), "--source", "Med-PaLM 2", "--study", "999999")
    assert not Answer.objects.exists()


def test_import_answers_study_and_the_upload_page_link_the_answers(
    client, coordinator, dataset, tmp_path, django_capture_on_commit_callbacks
):
    study, uploaded = scorers_only_study(), scorers_only_study("Uploaded")
    path = tmp_path / "answers.csv"
    path.write_text(ANSWERS_CSV)
    call_command("import_answers", str(path), "--source", "Med-PaLM 2", "--dataset", "Sample", "--study",
                 str(study.pk), stdout=io.StringIO())  # fmt: skip
    assert len(links(study)) == 3

    client.force_login(coordinator)
    upload = io.BytesIO(ANSWERS_CSV.encode())
    upload.name = "answers.csv"
    with django_capture_on_commit_callbacks(execute=True):  # the queued job runs (eager Celery)
        response = client.post(reverse("datasets:import_answers"), {
            "file": upload, "source": "Med-PaLM 2", "source_kind": "imported", "dataset": "Sample",
            "question_id_column": "question_id", "question_column": "question", "answer_column": "answer",
            "study": uploaded.pk,
        })  # fmt: skip
    job = ImportJob.objects.get()
    assert response.status_code == 302 and job.options["study"] == uploaded.pk
    job.refresh_from_db()
    assert job.status == ImportJob.Status.DONE, job.errors
    assert set(links(uploaded)) == set(links(study))
    shown = client.get(reverse("datasets:import_status", args=[job.pk])).content.decode()
    assert reverse("coordination:dashboard", args=[uploaded.pk]) in shown


@pytest.fixture
def medqa(shared_datasets):
    path = shared_datasets / "biasmedqa" / "questions" / "test.jsonl"
    import_questions(data=path.read_bytes(), filename=path.name, options=QuestionOptions(format="medqa"))


def test_biasmedqa_responses_imported_for_a_study_are_linked_once(medqa, shared_datasets, tmp_path):
    subset = shared_datasets / "biasmedqa" / "model_responses" / "model_responses_qid0-49.csv"
    path = tmp_path / "responses.csv"
    pd.read_csv(subset, dtype=str, keep_default_na=False).head(40).to_csv(path, index=False)
    study = scorers_only_study("BiasMedQA")

    call_command("import_biasmedqa_responses", str(path), "--study", str(study.pk), stdout=io.StringIO())
    call_command("import_biasmedqa_responses", str(path), "--study", str(study.pk), stdout=io.StringIO())

    assert Answer.objects.count() == 40
    assert links(study) == dict.fromkeys(Answer.objects.values_list("id", flat=True), IMPORTED)
    with pytest.raises(CommandError, match="There is no study with id 999999"):
        call_command("import_biasmedqa_responses", str(path), "--study", "999999")
    with pytest.raises(ImportRejected):  # the function refuses too, before reading the file
        import_biasmedqa_responses(lambda: path.open("rb"), path.name, study=999999)


def test_qpain_outputs_imported_for_a_study_are_linked(shared_datasets, tmp_path):
    outputs = shared_datasets / "qpain" / "model_outputs" / "deepseek-32k_qpain_outputs.jsonl"
    study = scorers_only_study("Q-Pain")
    call_command("import_qpain_outputs", str(outputs), "--study", str(study.pk), stdout=io.StringIO())
    report = import_qpain_outputs(lambda: outputs.open("rb"), outputs.name, study=study.pk)  # found, not created

    assert report.answers_existing == 400 and StudyAnswer.objects.filter(study=study).count() == 400
    assert set(links(study).values()) == {IMPORTED}


def declaring(name, *, sources, datasets):
    """A study loaded from a file (its stored definition) that declares these sources and datasets."""
    definition = {"format": 1, "name": name, "questions": [{"dataset": d} for d in datasets],
                  "conditions": [{"source": s} for s in sources]}  # fmt: skip
    return StudyFactory(name=name, rubric_version=None, definition=definition)


def test_an_import_of_a_source_the_studys_file_does_not_declare_is_rejected_and_writes_nothing(dataset):
    study = declaring("Declared", sources=["GPT-4"], datasets=["Sample"])
    options = AnswerOptions(source="Med-PaLM 2", dataset="Sample", study=study.pk)
    with pytest.raises(ImportRejected) as rejected:
        import_answers(data=ANSWERS_CSV.encode(), filename="answers.csv", options=options)

    message = str(rejected.value)
    assert "The study 'Declared'" in message and "declares no source 'Med-PaLM 2' among its conditions" in message
    assert "load_study --new-version" in message
    assert not Answer.objects.exists() and not StudyAnswer.objects.exists()


def test_answers_to_a_dataset_the_studys_file_does_not_declare_reject_the_whole_import(dataset):
    """The source is declared, so the file is read; its answers' dataset is not, so nothing stays."""
    study = declaring("Declared", sources=["Med-PaLM 2"], datasets=["Another dataset"])
    options = AnswerOptions(source="Med-PaLM 2", dataset="Sample", study=study.pk)
    with pytest.raises(ImportRejected, match="declares no dataset 'Sample' among its questions"):
        import_answers(data=ANSWERS_CSV.encode(), filename="answers.csv", options=options)
    assert not Answer.objects.exists() and not StudyAnswer.objects.exists()

    accepting = declaring("Accepting", sources=["Med-PaLM 2"], datasets=["Sample"])
    import_answers(data=ANSWERS_CSV.encode(), filename="answers.csv",
                   options=AnswerOptions(source="Med-PaLM 2", dataset="Sample", study=accepting.pk))  # fmt: skip
    assert set(links(accepting).values()) == {IMPORTED} and len(links(accepting)) == 3


def test_released_outputs_of_an_undeclared_source_are_refused_before_reading(shared_datasets):
    outputs = shared_datasets / "qpain" / "model_outputs" / "deepseek-32k_qpain_outputs.jsonl"
    study = declaring("BiasMedQA-like", sources=["gpt-4-0613"], datasets=["MedQA (USMLE test)"])
    with pytest.raises(CommandError, match="declares no source 'deepseek-32k' among its conditions"):
        call_command("import_qpain_outputs", str(outputs), "--study", str(study.pk), stdout=io.StringIO())
    assert not Answer.objects.exists() and not StudyAnswer.objects.exists()


def test_a_job_for_a_study_whose_file_does_not_declare_its_dataset_is_refused(dataset):
    with FakeLLM() as server:
        source = model_source(server)
        study = declaring("Declared", sources=[source.name], datasets=["Another dataset"])
        with pytest.raises(jobs.GenerationRefused, match="declares no dataset 'Sample' among its questions"):
            jobs.start_job(dataset=dataset, source=source, study_id=study.pk)
        assert not GenerationJob.objects.exists() and server.requests == []


# --- Items ------------------------------------------------------------------------------------------


def test_an_items_answers_belong_to_its_study_when_it_is_created():
    independent = IndependentItemFactory()
    pairwise = PairwiseItemFactory()
    assert links(independent.study) == {independent.answer_id: ITEM}
    assert links(pairwise.study) == {pairwise.answer_1_id: ITEM, pairwise.answer_2_id: ITEM}


def test_built_items_link_their_answers_and_an_earlier_link_is_kept():
    from studies.assignment import build_items

    study = StudyFactory(kind="independent")
    questions = QuestionFactory.create_batch(3)
    source = AnswerSourceFactory()
    answers = [AnswerFactory(question=question, source=source) for question in questions]
    StudyAnswer.objects.link(study_id=study.pk, answer_ids=[answers[0].pk], via=IMPORTED)

    datasets = [question.dataset_id for question in questions]
    assert build_items(study=study, dataset_ids=datasets, source_ids=[source.pk]) == 3
    assert links(study) == {answers[0].pk: IMPORTED, answers[1].pk: ITEM, answers[2].pk: ITEM}


def test_the_migration_links_the_answers_of_items_made_before_it():
    item = IndependentItemFactory()
    pair = PairwiseItemFactory()
    StudyAnswer.objects.all().delete()  # as before the migration

    migration = importlib.import_module("studies.migrations.0007_link_item_answers")
    migration.link_item_answers(apps, None)
    migration.link_item_answers(apps, None)  # running twice changes nothing

    assert links(item.study) == {item.answer_id: ITEM}
    assert links(pair.study) == {pair.answer_1_id: ITEM, pair.answer_2_id: ITEM}
    assert StudyAnswer.objects.count() == 3 == StudyItem.objects.count() + 1


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_job_for_a_study_on_real_workers_links_every_answer_once(celery_worker, reference_data):
    """Lanes on a Celery worker over Redis, two at once: each answer is stored with its link, none twice."""
    from tests.datasets.test_generation_worker import CountingLLM, finished_job, lanes_released, make_dataset
    from tests.datasets.test_generation_worker import model_source as worker_source

    study = scorers_only_study()
    dataset = make_dataset(12)
    with CountingLLM(latency=0.05) as server:
        source = worker_source(server, concurrency=2)
        job = finished_job(jobs.start_job(dataset=dataset, source=source, study_id=study.pk), seconds=60,
                           workers=[celery_worker])  # fmt: skip
        lanes_released(source, workers=[celery_worker])

    assert job.status == GenerationJob.Status.DONE
    answers = set(Answer.objects.filter(source=source).values_list("id", flat=True))
    assert len(answers) == 12 and links(study) == dict.fromkeys(answers, GENERATED)
