"""The engine's `answer` kind (datasets/generation/answer_kind.py): calls answering a generation job's
questions on the source's endpoint, run by the engine's lanes in this process."""

# ruff: noqa: F811 (the `dataset` fixture is imported, and named as an argument)

import pytest

from datasets import answer_links
from datasets.generation import answer_kind, jobs
from datasets.models import Answer, GenerationJob, settings_fingerprint
from datasets.variants.biasmedqa_recipes import ensure_biasmedqa_recipes
from engine import calls, lanes, registered_kinds
from engine.llm_client import Completion
from engine.models import Call
from tests.datasets.test_generation_engine import dataset, model_source  # noqa: F401 (the fixture and helper of the generation tests)
from tests.datasets.test_generation_recipes import small_variants
from tests.factories import AnswerSourceFactory
from tests.llm_server import FakeLLM

pytestmark = pytest.mark.django_db


def job_for(dataset, source, *, recipe=None, study_id=None) -> GenerationJob:
    parameters = jobs.job_parameters(source, recipe)
    return GenerationJob.objects.create(dataset=dataset, source=source, parameters=parameters, recipe=recipe,
                                        settings_hash=settings_fingerprint(parameters), for_study=study_id)  # fmt: skip


def submit(job) -> int:
    subjects = [
        answer_kind.subject_for(job.id, question_id)
        for question_id in job.dataset.questions.values_list("id", flat=True)
    ]
    return calls.submit(answer_kind.KIND, job.source.endpoint, subjects, batch=answer_kind.batch_of(job.id))


def drain(endpoint):
    return [lanes.run_lane(endpoint.id, index) for index in range(endpoint.concurrency)]


def test_the_answer_kind_is_registered_by_datasets():
    assert "answer" in registered_kinds()


def test_answer_calls_store_each_answer_once_with_its_provenance_and_end_the_job(dataset):
    with FakeLLM() as server:
        source = model_source(server, logprobs=True, top_logprobs=2)
        job = job_for(dataset, source)
        assert submit(job) == 6
        assert drain(source.endpoint)[0] == "no work left"

    job.refresh_from_db()
    assert job.status == GenerationJob.Status.DONE and job.started_at and job.finished_at
    made = list(Call.objects.filter(batch=f"generation-job:{job.id}").order_by("id"))
    answers = Answer.objects.filter(source=source).order_by("question__external_id")
    assert [call.result for call in made] == [{"answer": answer.id} for answer in answers]
    assert len(server.requests) == 6 and {call.status for call in made} == {Call.Status.DONE}
    answer = answers[0]
    assert answer.text == "Generated answer to: Q: Question 0: is this treatment right?"
    assert answer.prompt == "Q: Question 0: is this treatment right?"
    assert answer.parameters == source.generation_settings() == job.parameters
    assert answer.settings_hash == job.settings_hash
    metadata = answer.response_metadata
    assert metadata["messages"][0] == {"role": "system", "content": "Be brief."}
    assert metadata["generation_job"] == job.id and metadata["attempt"] == 1
    assert metadata["endpoint"] == server.base_url and metadata["logprobs"][0]["token"] == "Yes"
    assert made[0].request["messages"] == metadata["messages"] and server.requests[0]["top_logprobs"] == 2


def test_a_second_store_of_one_question_finds_the_first_answer_and_links_it_to_the_study_once(dataset):
    from studies.models import StudyAnswer
    from tests.factories import StudyFactory

    study = StudyFactory()
    source = AnswerSourceFactory(base_url="http://127.0.0.1:9/v1", model_name="m")
    job = job_for(dataset, source, study_id=study.pk)
    submit(job)
    call = Call.objects.order_by("id").first()
    call.attempts = 1
    handler = answer_kind.AnswerKind()

    first = handler.store(call, Completion("from B", "stop", "m", 10))
    second = handler.store(call, Completion("from A", "stop", "m", 10))

    assert first == second and Answer.objects.get().text == "from B"
    assert list(StudyAnswer.objects.values_list("answer_id", "via")) == [(first["answer"], answer_links.GENERATED)]


def test_a_recipes_call_keeps_the_exact_request_and_an_edited_recipe_or_a_gone_job_fails_with_the_reason():
    _, variants = small_variants(1)
    recipe = ensure_biasmedqa_recipes()[0]
    with FakeLLM() as server:
        source = model_source(server, concurrency=1)
        kept = job_for(variants, source, recipe=recipe)
        first = answer_kind.subject_for(kept.id, variants.questions.first().id)
        calls.submit(answer_kind.KIND, source.endpoint, [first], batch=answer_kind.batch_of(kept.id))
        drain(source.endpoint)
        edited = job_for(variants, source, recipe=recipe)
        submit(edited)
        recipe.instruction = "Something else."
        recipe.save()
        calls.submit(answer_kind.KIND, source.endpoint, [{"job": 999999, "question": 1}], batch="generation-job:999999")
        drain(source.endpoint)

    answer = Answer.objects.get()
    assert answer.response_metadata["request"] == server.requests[0] and len(server.requests) == 1
    assert Call.objects.get(batch=answer_kind.batch_of(kept.id)).result == {"answer": answer.id}
    failed = list(Call.objects.exclude(batch=answer_kind.batch_of(kept.id)).order_by("id"))
    assert {call.status for call in failed} == {Call.Status.FAILED} and len(failed) == 8
    assert failed[0].error == f"the recipe {recipe.name!r} was edited after job {edited.id} started: start a new job"
    assert failed[-1].error == "generation job 999999 no longer exists"
    edited.refresh_from_db()
    assert edited.status == GenerationJob.Status.DONE  # nothing left to ask: its failures are on its calls
