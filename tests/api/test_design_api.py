"""The study-design API: prompt recipes (list, create, retrieve, update), the request preview, a job started
under a recipe, and variant runs; coordinators only."""

import pytest

from datasets.models import Answer, GenerationJob, PromptRecipe, Question, VariantRun
from datasets.variants import biasmedqa
from tests.api.client import client_for
from tests.factories import AnalystFactory, AnswerSourceFactory, DatasetFactory, OnboardedRaterFactory, QuestionFactory
from tests.llm_server import FakeLLM

pytestmark = pytest.mark.django_db

OPTIONS = {"A": "Aspirin", "B": "Heparin", "C": "Warfarin", "D": "Nothing"}


@pytest.fixture
def medqa():
    dataset = DatasetFactory(name="MedQA sample")
    for n in range(3):
        QuestionFactory(dataset=dataset, external_id=str(n), text=f"Question {n}. Which drug?",
                        metadata={"options": OPTIONS, "answer_idx": "B", "answer": "Heparin"})  # fmt: skip
    return dataset


@pytest.fixture
def recipe():
    return PromptRecipe.objects.create(
        name="BiasMedQA: no mitigation",
        instruction=biasmedqa.INSTRUCTION,
        item_template=biasmedqa.ITEM_TEMPLATE,
        condition={"mitigation": "none"},
        max_tokens=8,
    )


RECIPE_BODY = {
    "name": "Short answer",
    "instruction": "Answer with one letter.",
    "item_template": "Q: {question}\nOptions: {options}\nA: ",
    "condition": {"mitigation": "none"},
    "stop": ["\n"],
    "max_tokens": 4,
}


@pytest.mark.parametrize("who", ["anonymous", "rater", "analyst"])
def test_only_coordinators_use_the_design_endpoints(who, recipe, medqa):
    user = {"anonymous": None, "rater": OnboardedRaterFactory, "analyst": AnalystFactory}[who]
    client = client_for(user() if user else None)
    expected = 401 if who == "anonymous" else 403
    question = medqa.questions.first()
    calls = [
        client.get("/api/recipes/"),
        client.get(f"/api/recipes/{recipe.pk}/"),
        client.post("/api/recipes/", RECIPE_BODY, format="json"),
        client.patch(f"/api/recipes/{recipe.pk}/", {"max_tokens": 2}, format="json"),
        client.post(f"/api/recipes/{recipe.pk}/preview/", {"question_id": question.pk}, format="json"),
        client.post(f"/api/recipes/{recipe.pk}/generate/", {"dataset": medqa.pk, "source": 1}, format="json"),
        client.get("/api/variant-runs/"),
        client.post("/api/variant-runs/", {"generator": "biasmedqa", "base_dataset": medqa.pk}, format="json"),
    ]
    assert [response.status_code for response in calls] == [expected] * len(calls)
    assert PromptRecipe.objects.count() == 1 and PromptRecipe.objects.get().max_tokens == 8
    assert not GenerationJob.objects.exists() and not VariantRun.objects.exists()


def test_a_coordinator_creates_reads_lists_and_updates_a_recipe(coordinator):
    client = client_for(coordinator)

    created = client.post("/api/recipes/", RECIPE_BODY, format="json")
    assert created.status_code == 201, created.json()
    recipe = PromptRecipe.objects.get()
    body = created.json()
    assert body["id"] == recipe.pk and body["url"] == f"http://testserver/api/recipes/{recipe.pk}/"
    assert body["item_template"] == "Q: {question}\nOptions: {options}\nA: "  # trailing space kept
    assert recipe.stop == ["\n"] and recipe.condition == {"mitigation": "none"} and recipe.created_by == coordinator
    assert client.get(body["url"]).json() == body
    assert [row["name"] for row in client.get("/api/recipes/").json()["results"]] == ["Short answer"]

    updated = client.patch(body["url"], {"level_factor": "bias", "level_texts": {"recency": "Be careful."}},
                           format="json")  # fmt: skip
    assert updated.status_code == 200
    recipe.refresh_from_db()
    assert recipe.level_texts == {"recency": "Be careful."} and recipe.max_tokens == 4
    assert client.put(body["url"], {**RECIPE_BODY, "max_tokens": 6}, format="json").status_code == 200
    recipe.refresh_from_db()
    assert recipe.max_tokens == 6 and recipe.level_texts == {"recency": "Be careful."}  # not sent: kept


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"item_template": "{question} {answr}"}, "item_template", "the question has no field {answr}"),
        ({"level_texts": ["x"]}, "level_texts", "Write a JSON object of text values"),
        ({"stop": "\n"}, "stop", "Write a JSON list of non-empty texts"),
        ({"examples": [{"answer": "wrong"}]}, "examples", "the recipe names no pool"),
        ({"condition": {"mitigation": "a\u0000b"}}, None, "JSON parse error"),
        ({"max_tokens": 0}, "max_tokens", "greater than or equal to 1"),
    ],
)
def test_a_wrong_recipe_is_400_naming_the_field(coordinator, change, field, message):
    response = client_for(coordinator).post("/api/recipes/", {**RECIPE_BODY, **change}, format="json")
    assert response.status_code == 400
    text = " ".join(response.json()[field]) if field else response.json()["detail"]
    assert message in text
    assert not PromptRecipe.objects.exists()


def test_the_preview_is_the_exact_request_for_the_question(coordinator, recipe, medqa):
    source = AnswerSourceFactory(base_url="http://127.0.0.1:9/v1", model_name="gpt-4-0613")
    question = medqa.questions.get(external_id="1")

    response = client_for(coordinator).post(
        f"/api/recipes/{recipe.pk}/preview/", {"question_id": question.pk, "source": source.pk}, format="json"
    )

    assert response.status_code == 200
    body = response.json()
    expected = (f"{biasmedqa.INSTRUCTION}\n\n### Question: Question 1. Which drug?\n"
                "### Options: A: Aspirin, B: Heparin, C: Warfarin, D: Nothing\n### Answer: ")  # fmt: skip
    assert body["prompt"] == expected and body["examples"] == []
    assert body["body"] == {"model": "gpt-4-0613", "messages": [{"role": "user", "content": expected}],
                            "temperature": 0.0, "max_tokens": 8}  # fmt: skip


def test_a_preview_the_recipe_cannot_render_is_400_and_an_unknown_question_too(coordinator, medqa):
    recipe = PromptRecipe.objects.create(name="Needs race", item_template="{question} ({race})")
    client = client_for(coordinator)
    question = medqa.questions.first()
    broken = client.post(f"/api/recipes/{recipe.pk}/preview/", {"question_id": question.pk}, format="json")
    assert broken.status_code == 400
    assert broken.json() == {"detail": "item_template: the question has no field {race}"}
    missing = client.post(f"/api/recipes/{recipe.pk}/preview/", {"question_id": 10**9}, format="json")
    assert missing.status_code == 400 and "question_id" in missing.json()


def test_a_job_started_under_a_recipe_sends_its_requests_for_the_chosen_levels(
    coordinator, recipe, medqa, django_capture_on_commit_callbacks
):
    variants = DatasetFactory(name="Variants")
    for base in medqa.questions.all():
        for bias in ("recency", "cultural"):
            Question.objects.create(
                dataset=variants, external_id=f"{base.external_id}-{bias}", base=base, text=f"{base.text} ({bias})",
                levels={"bias": bias}, metadata=base.metadata,
            )  # fmt: skip
    with FakeLLM() as server:
        source = AnswerSourceFactory(base_url=server.base_url, model_name="m", concurrency=1)
        with django_capture_on_commit_callbacks(execute=True):
            response = client_for(coordinator).post(
                f"/api/recipes/{recipe.pk}/generate/",
                {"dataset": variants.pk, "source": source.pk, "levels": {"bias": "cultural"}},
                format="json",
            )

    assert response.status_code == 201, response.json()
    job = GenerationJob.objects.get()
    assert response.json()["id"] == job.pk and response.json()["progress"]["total"] == 3
    assert job.recipe == recipe and job.levels == {"bias": "cultural"}
    assert (response.json()["recipe"], response.json()["levels"]) == (recipe.pk, {"bias": "cultural"})
    assert all(body["messages"][-1]["content"].startswith(biasmedqa.INSTRUCTION) for body in server.requests)
    assert Answer.objects.filter(source=source, question__levels__bias="cultural").count() == 3
    assert not Answer.objects.filter(question__levels__bias="recency").exists()


def test_a_second_job_for_the_same_condition_is_409(coordinator, recipe, medqa):
    source = AnswerSourceFactory(base_url="http://127.0.0.1:9/v1", model_name="m")
    client = client_for(coordinator)
    first = client.post(f"/api/recipes/{recipe.pk}/generate/", {"dataset": medqa.pk, "source": source.pk},
                        format="json")  # fmt: skip
    second = client.post(f"/api/recipes/{recipe.pk}/generate/", {"dataset": medqa.pk, "source": source.pk},
                         format="json")  # fmt: skip
    assert first.status_code == 201 and second.status_code == 409
    assert second.json()["job"] == first.json()["id"]
    levels = {"bias level": "x"}
    bad = client.post(f"/api/recipes/{recipe.pk}/generate/", {"dataset": medqa.pk, "source": source.pk,
                                                              "levels": levels}, format="json")  # fmt: skip
    assert bad.status_code == 400 and "levels" in bad.json()


def test_a_coordinator_starts_a_variant_run_and_follows_it(coordinator, medqa, django_capture_on_commit_callbacks):
    client = client_for(coordinator)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/api/variant-runs/",
            {"generator": "biasmedqa", "base_dataset": medqa.pk, "seed": 3, "biases": ["recency", "cultural"],
             "limit": 2},
            format="json",
        )  # fmt: skip

    assert response.status_code == 201, response.json()
    run = VariantRun.objects.get()
    assert (run.generator, run.seed, run.base_dataset, run.created_by) == ("biasmedqa", 3, medqa, coordinator)
    followed = client.get(response.json()["url"]).json()
    assert followed["status"] == "done" and followed["total"] == followed["done"] == 4 and followed["percent"] == 100
    assert followed["dataset"] == run.dataset_id and run.dataset.questions.count() == 4
    assert [row["id"] for row in client.get("/api/variant-runs/").json()["results"]] == [run.pk]


def test_a_variant_run_with_an_unknown_generator_or_level_is_400(coordinator, medqa):
    client = client_for(coordinator)
    unknown = client.post("/api/variant-runs/", {"generator": "nope", "base_dataset": medqa.pk}, format="json")
    assert unknown.status_code == 400 and "generator" in unknown.json()
    level = client.post("/api/variant-runs/", {"generator": "biasmedqa", "base_dataset": medqa.pk,
                                               "biases": ["sleepy"]}, format="json")  # fmt: skip
    assert level.status_code == 400 and "biases" in level.json()
    assert not VariantRun.objects.exists()


def test_a_field_the_api_does_not_know_is_400_not_ignored(coordinator, medqa):
    client = client_for(coordinator)

    response = client.post("/api/variant-runs/", {"generator": "biasmedqa", "base_dataset": medqa.pk,
                                                  "options": {"limit": 5}}, format="json")  # fmt: skip

    assert response.status_code == 400
    assert "Unknown field" in response.json()["options"][0] and "limit" in response.json()["options"][0]
    assert not VariantRun.objects.exists()
