"""The prompt-recipe pages: list, create and edit (JSON fields and templates checked), preview of the exact
request, and starting a job under a recipe; success, wrong method, permission denied."""

import json

import pytest
from django.urls import reverse
from django.utils.html import escape

from datasets.models import Answer, GenerationJob, PromptRecipe
from datasets.variants import biasmedqa
from tests.factories import AnalystFactory, AnswerSourceFactory, DatasetFactory, QuestionFactory
from tests.llm_server import FakeLLM

pytestmark = pytest.mark.django_db

OPTIONS = {"A": "Aspirin", "B": "Heparin", "C": "Warfarin", "D": "Nothing"}


@pytest.fixture
def medqa():
    dataset = DatasetFactory(name="MedQA sample")
    for n in range(4):
        QuestionFactory(dataset=dataset, external_id=str(n), text=f"Question {n}. Which drug?",
                        metadata={"options": OPTIONS, "answer_idx": "B", "answer": "Heparin"})  # fmt: skip
    return dataset


@pytest.fixture
def variants_set(medqa):
    dataset = DatasetFactory(name="MedQA variants")
    for base in medqa.questions.all():
        for bias in ("recency", "cultural"):
            QuestionFactory(dataset=dataset, external_id=f"{base.external_id}-{bias}", base=base,
                            text=f"{base.text} A {bias} sentence.", levels={"bias": bias},
                            metadata={**base.metadata, "bias_answer_idx": "A"})  # fmt: skip
    return dataset


@pytest.fixture
def recipe(coordinator):
    return PromptRecipe.objects.create(
        name="BiasMedQA: education",
        instruction=biasmedqa.INSTRUCTION,
        level_factor="bias",
        level_texts=biasmedqa.EDUCATION,
        item_template=biasmedqa.ITEM_TEMPLATE,
        condition={"mitigation": "education"},
        max_tokens=8,
        created_by=coordinator,
    )


def form_data(**overrides):
    data = {
        "name": "My recipe", "description": "", "mode": "chat", "system_prompt": "", "instruction": "Answer.",
        "level_factor": "", "level_texts": "{}", "item_template": "Q: {question}\nOptions: {options}\nA: ",
        "options_format": "{letter}: {text}", "options_separator": ", ", "examples": "[]", "examples_pool": "",
        "examples_match_factor": "", "examples_seed": "0", "examples_footer": "", "condition": '{"mitigation": "none"}',
        "stop": "[]", "top_logprobs": "", "max_tokens": "16", "temperature": "0",
    }  # fmt: skip
    return {**data, **overrides}


# --- Access ------------------------------------------------------------------------------------------


def get_urls(recipe):
    return [
        reverse("datasets:recipes"),
        reverse("datasets:recipe_create"),
        reverse("datasets:recipe", args=[recipe.pk]),
        reverse("datasets:recipe_edit", args=[recipe.pk]),
    ]


def test_anonymous_users_are_sent_to_login(client, recipe):
    for url in [*get_urls(recipe), reverse("datasets:recipe_generate", args=[recipe.pk])]:
        response = client.get(url) if "generate" not in url else client.post(url)
        assert response.status_code == 302 and response["Location"].startswith(reverse("login")), url


@pytest.mark.parametrize("role", ["physician", "analyst"])
def test_raters_and_analysts_get_403(client, physician, recipe, medqa, role):
    client.force_login(physician if role == "physician" else AnalystFactory())
    for url in get_urls(recipe):
        assert client.get(url).status_code == 403, url
    assert client.post(reverse("datasets:recipe_create"), form_data()).status_code == 403
    source = AnswerSourceFactory(base_url="http://127.0.0.1:9/v1")
    generate = reverse("datasets:recipe_generate", args=[recipe.pk])
    assert client.post(generate, {"job-source": source.pk, "job-dataset": medqa.pk}).status_code == 403
    assert PromptRecipe.objects.count() == 1 and not GenerationJob.objects.exists()


def test_wrong_methods_are_refused(client, coordinator, recipe):
    client.force_login(coordinator)
    recipes, create, detail, edit = get_urls(recipe)
    for url in (recipes, detail):
        assert client.post(url).status_code == 405, url
    for url in (create, edit):
        assert client.put(url).status_code == 405, url
    assert client.get(reverse("datasets:recipe_generate", args=[recipe.pk])).status_code == 405


# --- List, create, edit --------------------------------------------------------------------------------


def test_the_list_shows_each_recipe_with_its_condition(client, coordinator, recipe):
    client.force_login(coordinator)
    response = client.get(reverse("datasets:recipes"))
    assert response.status_code == 200
    assert b"BiasMedQA: education" in response.content and b"mitigation=education" in response.content
    assert reverse("datasets:recipe", args=[recipe.pk]).encode() in response.content


def test_a_coordinator_creates_a_recipe_and_lands_on_its_page(client, coordinator):
    client.force_login(coordinator)
    response = client.post(reverse("datasets:recipe_create"), form_data(stop='["\\n"]'))

    recipe = PromptRecipe.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("datasets:recipe", args=[recipe.pk])
    assert recipe.item_template == "Q: {question}\nOptions: {options}\nA: "  # the trailing space kept
    assert recipe.condition == {"mitigation": "none"} and recipe.stop == ["\n"] and recipe.max_tokens == 16
    assert recipe.created_by == coordinator


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("item_template", "Q: {question} {answr}", "item_template: the question has no field {answr}"),
        ("options_format", "{letter}) {txt}", "options_format: the question has no field {txt}"),
        ("level_texts", "{not json", "This is not valid JSON"),
        ("level_texts", '["a list"]', "Write a JSON object of text values"),
        ("condition", '{"mitigation": 3}', "Write a JSON object of text values"),
        ("stop", '"\\n"', "Write a JSON list of non-empty texts"),
        ("examples", '[{"answer": "maybe"}]', 'Example 1: "answer" is "wrong" or "correct".'),
        ("examples", '[{"answer": "wrong"}]', "examples: the recipe names no pool"),
        ("max_tokens", "0", "greater than or equal to 1"),
    ],
)
def test_a_wrong_setting_is_a_form_error_on_its_field_and_nothing_is_saved(client, coordinator, field, value, message):
    client.force_login(coordinator)
    response = client.post(reverse("datasets:recipe_create"), form_data(**{field: value}))

    assert response.status_code == 400
    assert not PromptRecipe.objects.exists()
    assert message in " ".join(response.context["form"].errors[field])
    assert b"The recipe was not saved" in response.content
    assert escape(value).encode() in response.content  # shown again as typed


def test_editing_a_recipe_keeps_its_settings_and_checks_them_again(client, coordinator, recipe):
    client.force_login(coordinator)
    edit = reverse("datasets:recipe_edit", args=[recipe.pk])
    page = client.get(edit)
    assert page.status_code == 200
    assert json.loads(page.context["form"]["condition"].value()) == {"mitigation": "education"}

    data = {name: page.context["form"][name].value() for name in page.context["form"].fields}
    data = {name: ("" if value is None else value) for name, value in data.items() if value is not False}
    bad = client.post(edit, {**data, "item_template": "{question} {nope}"})
    assert bad.status_code == 400
    recipe.refresh_from_db()
    assert recipe.item_template == biasmedqa.ITEM_TEMPLATE

    good = client.post(edit, {**data, "max_tokens": "5"})
    assert good.status_code == 302
    recipe.refresh_from_db()
    assert recipe.max_tokens == 5 and recipe.level_texts == biasmedqa.EDUCATION
    assert recipe.item_template == biasmedqa.ITEM_TEMPLATE


# --- Preview -------------------------------------------------------------------------------------------


def test_the_preview_shows_the_exact_prompt_and_body_for_the_chosen_question(client, coordinator, recipe, variants_set):
    source = AnswerSourceFactory(name="GPT", base_url="http://127.0.0.1:9/v1", model_name="gpt-4-0613")
    client.force_login(coordinator)

    response = client.get(
        reverse("datasets:recipe", args=[recipe.pk]),
        {"dataset": variants_set.pk, "external_id": "2-recency", "source": source.pk},
    )

    assert response.status_code == 200
    preview = response.context["preview"]
    assert preview.question.external_id == "2-recency"
    prompt = preview.request.prompt
    assert prompt.startswith(biasmedqa.INSTRUCTION + " " + biasmedqa.EDUCATION["recency"] + "\n\n### Question: ")
    assert prompt.endswith("### Options: A: Aspirin, B: Heparin, C: Warfarin, D: Nothing\n### Answer: ")
    body = json.loads(response.context["preview_body"])
    assert body == {"model": "gpt-4-0613", "messages": [{"role": "user", "content": prompt}], "temperature": 0.0,
                    "max_tokens": 8}  # fmt: skip
    assert b"### Answer: </pre>" in response.content  # the prompt is shown whole, trailing space included
    assert b"&quot;model&quot;: &quot;gpt-4-0613&quot;" in response.content


def test_a_preview_without_source_or_id_shows_the_first_question_and_says_whose_model(
    client, coordinator, recipe, medqa
):
    client.force_login(coordinator)
    response = client.get(reverse("datasets:recipe", args=[recipe.pk]), {"dataset": medqa.pk})
    assert response.status_code == 200
    assert response.context["preview"].question.external_id == "0"
    assert json.loads(response.context["preview_body"])["model"] == "<the source's model>"


def test_a_preview_of_an_unknown_question_or_a_recipe_that_cannot_render_it_says_why(client, coordinator, medqa):
    recipe = PromptRecipe.objects.create(name="Needs a field", item_template="{question} ({race})")
    client.force_login(coordinator)
    page = reverse("datasets:recipe", args=[recipe.pk])

    unknown = client.get(page, {"dataset": medqa.pk, "external_id": "no-such-id"})
    assert unknown.status_code == 400
    assert unknown.context["preview_form"].errors["external_id"] == ["The dataset has no question with this id."]

    broken = client.get(page, {"dataset": medqa.pk})
    assert broken.status_code == 400 and broken.context["preview"] is None
    assert b"item_template: the question has no field {race}" in broken.content


# --- Starting a job --------------------------------------------------------------------------------------


def test_a_job_started_from_the_recipe_asks_only_the_chosen_level_with_the_recipes_request(
    client, coordinator, recipe, variants_set, django_capture_on_commit_callbacks
):
    client.force_login(coordinator)
    with FakeLLM() as server:
        source = AnswerSourceFactory(name="Stand-in", base_url=server.base_url, model_name="m", concurrency=1)
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(
                reverse("datasets:recipe_generate", args=[recipe.pk]),
                {"job-source": source.pk, "job-dataset": variants_set.pk, "job-levels": "bias=recency"},
            )

    job = GenerationJob.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("datasets:generation_job", args=[job.pk])
    assert job.recipe == recipe and job.levels == {"bias": "recency"} and job.created_by == coordinator
    answers = Answer.objects.filter(source=source).select_related("question")
    assert sorted(a.question.external_id for a in answers) == ["0-recency", "1-recency", "2-recency", "3-recency"]
    job_page = client.get(response["Location"])
    assert reverse("datasets:recipe", args=[recipe.pk]).encode() in job_page.content
    assert b"<code>bias=recency</code>" in job_page.content
    sent = {body["messages"][-1]["content"] for body in server.requests}
    assert all(biasmedqa.EDUCATION["recency"] in prompt for prompt in sent) and len(sent) == 4


def test_a_wrong_levels_filter_or_a_missing_source_is_a_form_error(client, coordinator, recipe, variants_set):
    client.force_login(coordinator)
    generate = reverse("datasets:recipe_generate", args=[recipe.pk])
    source = AnswerSourceFactory(base_url="http://127.0.0.1:9/v1")

    data = {"job-source": source.pk, "job-dataset": variants_set.pk, "job-levels": "bias recency"}
    wrong = client.post(generate, data)
    assert wrong.status_code == 400
    assert "'bias recency' is not factor=level" in wrong.context["job_form"].errors["levels"][0]
    missing = client.post(generate, {"job-dataset": variants_set.pk})
    assert missing.status_code == 400 and "source" in missing.context["job_form"].errors
    assert b"No job was started" in missing.content
    assert not GenerationJob.objects.exists()
