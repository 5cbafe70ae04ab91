"""Generation jobs that run a condition (source x prompt recipe) over variants at given levels."""

import pytest

from datasets.generation import jobs
from datasets.models import Answer, AnswerSource, GenerationJob, PromptRecipe, Question
from datasets.variants import biasmedqa
from datasets.variants.biasmedqa_recipes import ensure_biasmedqa_recipes
from engine.models import Call
from tests.datasets.test_generation_engine import drain
from tests.datasets.test_generation_worker import finished_job
from tests.datasets.test_recipes import make_variants
from tests.datasets.test_variants import import_medqa
from tests.factories import AnswerSourceFactory, DatasetFactory
from tests.llm_server import FakeLLM


def small_variants(rows: int = 4):
    """Variants of a few MedQA-like questions, each with five options: 7 biases per question."""
    base = DatasetFactory(name="Base")
    for n in range(rows):
        Question.objects.create(
            dataset=base, external_id=str(n), text=f"A patient {n} coughs. Which drug?",
            metadata={"options": dict(zip("ABCDE", ["a", "b", "c", "d", "e"], strict=True)), "answer_idx": "A",
                      "qid": n},
        )  # fmt: skip
    return base, make_variants(base)


def model_source(server, **fields) -> AnswerSource:
    defaults = {"base_url": server.base_url, "model_name": "fake-model", "concurrency": 2,
                "request_timeout_seconds": 5, "system_prompt": "Ignored with a recipe.", "max_tokens": 999}  # fmt: skip
    return AnswerSourceFactory(**{**defaults, **fields})


@pytest.mark.django_db
def test_a_condition_asks_only_the_questions_at_its_levels_and_stores_the_exact_request():
    _, variants = small_variants()
    recipes = {recipe.name: recipe for recipe in ensure_biasmedqa_recipes()}
    recipe = recipes["BiasMedQA: no mitigation"]
    with FakeLLM() as server:
        source = model_source(server)
        job = jobs.start_job(dataset=variants, source=source, recipe=recipe, levels={"bias": "recency"})
        drain(source)
        again = jobs.start_job(dataset=variants, source=source, recipe=recipe, levels={"bias": "recency"})
        education = jobs.start_job(
            dataset=variants, source=source, recipe=recipes["BiasMedQA: education"], levels={"bias": "recency"}
        )
        drain(source)

    job.refresh_from_db()
    assert job.status == GenerationJob.Status.DONE and job.recipe == recipe and job.levels == {"bias": "recency"}
    assert job.parameters == {"model": "fake-model", **recipe.settings()}
    assert job.parameters["condition"] == {"mitigation": "none"} and job.parameters["max_tokens"] == 512
    assert (again.status, again.already_present, jobs.batch_calls(again).count()) == (GenerationJob.Status.DONE, 4, 0)
    answers = Answer.objects.filter(source=source, settings_hash=job.settings_hash).select_related("question")
    assert sorted(answer.question.external_id for answer in answers) == [f"{n}-recency" for n in range(4)]
    received = server.requests[:4]
    for answer in answers:
        request = answer.response_metadata["request"]
        assert request in received
        assert request == {"model": "fake-model", "messages": [{"role": "user", "content": answer.prompt}],
                           "temperature": 0.0, "max_tokens": 512}  # fmt: skip
        assert answer.prompt.startswith(biasmedqa.INSTRUCTION + "\n\n### Question: A patient")
        assert answer.text in "ABCDE" and len(answer.text) == 1  # the stand-in answers with a letter
        assert answer.parameters == job.parameters
    assert education.settings_hash != job.settings_hash
    education_answers = Answer.objects.filter(settings_hash=education.settings_hash)
    assert education_answers.count() == 4
    assert all(biasmedqa.EDUCATION["recency"] in answer.prompt for answer in education_answers)


@pytest.mark.django_db
def test_the_as_published_recipe_sends_the_prompt_as_the_system_message_with_no_temperature():
    """BiasMedQA's authors sent OpenAI models the prompt as the system message, max_tokens 2048, no temperature."""
    _, variants = small_variants(2)
    recipes = {recipe.name: recipe for recipe in ensure_biasmedqa_recipes()}
    published, recommended = recipes["BiasMedQA as published: no mitigation"], recipes["BiasMedQA: no mitigation"]
    with FakeLLM() as server:
        source = model_source(server)
        job = jobs.start_job(dataset=variants, source=source, recipe=published, levels={"bias": "recency"})
        drain(source)
        other = jobs.start_job(dataset=variants, source=source, recipe=recommended, levels={"bias": "recency"})
        drain(source)

    assert job.settings_hash != other.settings_hash
    sent = server.requests[:2]
    answers = Answer.objects.filter(settings_hash=job.settings_hash)
    assert answers.count() == 2
    for answer in answers:
        request = answer.response_metadata["request"]
        assert request in sent  # the body stored is the body sent
        assert request == {"model": "fake-model", "messages": [{"role": "system", "content": answer.prompt}],
                           "max_tokens": 2048}  # fmt: skip
        assert answer.parameters["temperature"] is None and answer.parameters["prompt_role"] == "system"
    assert [body["messages"][0]["role"] for body in server.requests[2:]] == ["user", "user"]
    assert all(body["temperature"] == 0.0 for body in server.requests[2:])
    # Recipes made before prompt_role existed keep their settings (and so their answers' settings hash).
    assert "prompt_role" not in recommended.settings() and "examples_rule" not in recommended.settings()


@pytest.mark.django_db
def test_the_reference_level_matches_questions_without_the_factor():
    base, variants = small_variants(2)
    Question.objects.create(dataset=variants, external_id="plain", text="No bias here?", metadata={})

    assert set(jobs.questions_at(variants, {"bias": "none"}).values_list("external_id", flat=True)) == {"plain"}
    assert jobs.questions_at(variants, {"bias": "cultural"}).count() == 2
    assert jobs.questions_at(variants, {}).count() == 15


@pytest.mark.django_db
def test_a_completion_mode_recipe_posts_to_completions_with_stop_and_logprobs():
    _, variants = small_variants(2)
    recipe = PromptRecipe.objects.create(
        name="Completion", mode=PromptRecipe.Mode.COMPLETION, instruction="Answer with a letter.",
        item_template=biasmedqa.ITEM_TEMPLATE, stop=["\n"], logprobs=True, top_logprobs=2, max_tokens=1,
    )  # fmt: skip
    with FakeLLM() as server:
        source = model_source(server)
        job = jobs.start_job(dataset=variants, source=source, recipe=recipe, levels={"bias": "frequency"})
        drain(source)

    job.refresh_from_db()
    assert job.status == GenerationJob.Status.DONE
    assert {path for method, path, _ in server.received} == {"/v1/completions"}
    answer = Answer.objects.filter(source=source).first()
    assert answer.response_metadata["request"] == {
        "model": "fake-model", "prompt": answer.prompt, "temperature": 0.0, "max_tokens": 1, "stop": ["\n"],
        "logprobs": 2,
    }  # fmt: skip
    assert answer.response_metadata["request"] in server.requests
    assert len(answer.text) == 1 and answer.response_metadata["logprobs"]["tokens"] == [answer.text]


@pytest.mark.django_db
def test_a_recipe_edited_after_the_job_started_fails_its_questions_instead_of_sending_other_prompts():
    _, variants = small_variants(1)
    recipe = ensure_biasmedqa_recipes()[0]
    with FakeLLM() as server:
        source = model_source(server)
        job = jobs.start_job(dataset=variants, source=source, recipe=recipe, levels={"bias": "recency"})
        recipe.instruction = "Something else."
        recipe.save()
        drain(source)

    call = jobs.batch_calls(job).get()
    assert call.status == Call.Status.FAILED and "was edited after job" in call.error
    assert server.requests == []


@pytest.mark.django_db
def test_a_recipe_that_cannot_render_is_refused_before_any_task():
    _, variants = small_variants(1)
    one_shot = {recipe.name: recipe for recipe in ensure_biasmedqa_recipes()}["BiasMedQA: one-shot"]  # no pool
    with FakeLLM() as server, pytest.raises(jobs.GenerationRefused, match="names no pool"):
        jobs.start_job(dataset=variants, source=model_source(server), recipe=one_shot)

    assert not GenerationJob.objects.exists()


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_condition_runs_on_the_celery_worker_over_50_biased_medqa_questions(shared_datasets, celery_worker):
    variants = make_variants(import_medqa(shared_datasets), limit=50, biases=["self_diagnosis"])
    recipe = ensure_biasmedqa_recipes()[0]
    with FakeLLM() as server:
        source = model_source(server, concurrency=4)
        job = jobs.start_job(dataset=variants, source=source, recipe=recipe, levels={"bias": "self_diagnosis"})
        job = finished_job(job, seconds=60, workers=[celery_worker])

    assert job.status == GenerationJob.Status.DONE
    answers = Answer.objects.filter(source=source)
    assert answers.count() == 50 == len(server.requests)
    assert sorted(answer.response_metadata["request"]["messages"][0]["content"] for answer in answers) == sorted(
        request["messages"][0]["content"] for request in server.requests
    )
    letters = {answer.text for answer in answers}
    assert letters <= set("ABCDE") and len(letters) >= 3
    assert all(answer.parameters["condition"] == {"mitigation": "none"} for answer in answers)
