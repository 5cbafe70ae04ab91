"""Q-Pain's closed prompt as recipes: Patient A (a de-identified "Yes" vignette of the same context, high dose),
Patient B (the context's "No" vignette as is), then the open vignette; and a Q-Pain recipe made on the pages and
through the API."""

import json

import pytest
from django.urls import reverse

from datasets.importers.qpain import QPAIN_DATASET, import_qpain_vignettes, read_vignettes
from datasets.models import Dataset, PromptRecipe, Question
from datasets.recipes import build_request
from datasets.variants.qpain_recipes import CHAT, COMPLETION, EXAMPLES, ITEM_TEMPLATE, ensure_qpain_recipes
from datasets.variants.runs import run_variant_run, start_variant_run
from tests.api.client import client_for

pytestmark = pytest.mark.django_db

# SOURCE.md's de-identification of a closed "Yes" example, in its order, written out again here.
DEIDENTIFIED = [("[gender] ", ""), ("[race] ", ""), ("[possessive]", "their"), ("[subject]", "Patient A"),
                ("[subjective]", "Patient A"), ("Patient D", "Patient A")]  # fmt: skip
LEFT_OVER = ("[race]", "[gender]", "[possessive]", "[subjective]", "Patient D")


def deidentified(text: str) -> str:
    for old, new in DEIDENTIFIED:
        text = text.replace(old, new)
    return text


@pytest.fixture
def vignettes() -> Dataset:
    import_qpain_vignettes()
    return Dataset.objects.get(name=QPAIN_DATASET)


@pytest.fixture
def variants(vignettes) -> list[Question]:
    run = run_variant_run(start_variant_run(generator="qpain", base_dataset=vignettes, queue=False).id)
    return list(run.dataset.questions.select_related("base").order_by("id"))


def test_the_two_recipes_are_made_once_and_brought_back_to_their_settings(vignettes):
    completion, chat = ensure_qpain_recipes(vignettes)

    for recipe in (completion, chat):
        assert (recipe.instruction, recipe.item_template, recipe.examples) == ("", ITEM_TEMPLATE, EXAMPLES)
        assert (recipe.examples_pool, recipe.examples_match_factor) == (vignettes, "context")
        assert (recipe.temperature, recipe.max_tokens, recipe.stop) == (0.0, 150, ["##"])
        assert (recipe.logprobs, recipe.top_logprobs) == (True, 5)
    assert (completion.name, completion.mode, chat.name, chat.mode) == (COMPLETION, "completion", CHAT, "chat")
    stamp = PromptRecipe.objects.get(name=CHAT).updated_at
    PromptRecipe.objects.filter(name=COMPLETION).update(max_tokens=20, stop=[])

    ensure_qpain_recipes(vignettes)

    assert PromptRecipe.objects.count() == 2
    assert PromptRecipe.objects.get(name=CHAT).updated_at == stamp  # as defined: left untouched
    fixed = PromptRecipe.objects.get(name=COMPLETION)
    assert (fixed.max_tokens, fixed.stop) == (150, ["##"])


def test_each_variants_prompt_is_patient_a_then_patient_b_then_its_open_prompt(vignettes, variants):
    completion, _ = ensure_qpain_recipes(vignettes)
    rows = {row.external_id: row for row in read_vignettes()}
    patients_a: dict[str, set[str]] = {}

    for variant in variants:
        request = build_request(completion, variant, model="davinci")
        context = variant.levels["context"]
        a_id, b_id = request.examples
        a, b = rows[a_id], rows[b_id]
        assert b_id == f"{context}-no"
        assert a.metadata["kind"] == "yes" and a.levels["context"] == context
        assert a_id != variant.base.external_id  # never the question's own vignette
        patients_a.setdefault(context, set()).add(a_id)
        example_a = (
            f"Vignette: {deidentified(a.text)}\nQuestion: {deidentified(a.metadata['query'])}\n"
            f"Answer: {a.metadata['answer']}\nDosage: {a.metadata['dose_high']}\n"
            f"Explanation: {deidentified(a.metadata['explanation'])}##"
        )
        example_b = (
            f"Vignette: {b.text}\nQuestion: {b.metadata['query']}\nAnswer: {b.metadata['answer']}\nDosage: nan\n"
            f"Explanation: {b.metadata['explanation']}##"
        )
        open_prompt = f"Vignette: {variant.text}\nQuestion: {variant.metadata['query']}\nAnswer:"
        assert request.prompt == example_a + "\n\n" + example_b + "\n\n" + open_prompt, variant.external_id
        assert request.prompt.count("##") == 2 and "Patient A" in example_a and "Patient B" in example_b
        for placeholder in LEFT_OVER:
            assert placeholder not in request.prompt, (variant.external_id, placeholder)
        if context != "acute_non_cancer":
            assert "[" not in request.prompt
        else:  # that context's "No" vignette carries a `[subject]` the release (and the notebook) leave as is
            assert "[subject]" not in example_a + open_prompt and b.text.count("[subject]") == 1
        assert request.body == {"model": "davinci", "prompt": request.prompt, "temperature": 0.0, "max_tokens": 150,
                                "stop": ["##"], "logprobs": 5}  # fmt: skip
    assert len(variants) == 400
    assert all(len(chosen) > 3 for chosen in patients_a.values())  # a seeded draw among the context's others


def test_the_chat_recipe_sends_the_same_text_as_the_user_message_with_top_5_log_probabilities(vignettes, variants):
    completion, chat = ensure_qpain_recipes(vignettes)
    variant = variants[0]

    sent = build_request(chat, variant, model="deepseek-chat")

    assert sent.prompt == build_request(completion, variant, model="x").prompt
    assert sent.body == {"model": "deepseek-chat", "messages": [{"role": "user", "content": sent.prompt}],
                         "temperature": 0.0, "max_tokens": 150, "stop": ["##"], "logprobs": True,
                         "top_logprobs": 5}  # fmt: skip


# --- Made by a coordinator on the pages and through the API ---------------------------------------------


def form_data(pool: Dataset, **overrides) -> dict:
    data = {
        "name": "My Q-Pain recipe", "description": "", "mode": "completion", "system_prompt": "", "instruction": "",
        "level_factor": "", "level_texts": "{}", "item_template": ITEM_TEMPLATE, "options_format": "{letter}: {text}",
        "options_separator": ", ", "examples": json.dumps(EXAMPLES), "examples_pool": str(pool.pk),
        "examples_match_factor": "context", "examples_seed": "0", "examples_footer": "", "condition": "{}",
        "stop": '["##"]', "logprobs": "on", "top_logprobs": "5", "max_tokens": "150", "temperature": "0",
        "prompt_role": "user", "examples_holdout": "0", "examples_from_evaluated": "on",
    }  # fmt: skip
    return {**data, **overrides}


def test_a_coordinator_creates_and_edits_a_qpain_recipe_on_the_pages(client, coordinator, vignettes, variants):
    client.force_login(coordinator)

    created = client.post(reverse("datasets:recipe_create"), form_data(vignettes))

    recipe = PromptRecipe.objects.get()
    assert created.status_code == 302, created.context["form"].errors
    assert recipe.examples == EXAMPLES and recipe.item_template == ITEM_TEMPLATE and recipe.examples_pool == vignettes
    edit = reverse("datasets:recipe_edit", args=[recipe.pk])
    page = client.get(edit)
    assert page.status_code == 200 and "where" in page.context["form"]["examples"].help_text
    data = {name: page.context["form"][name].value() for name in page.context["form"].fields}
    data = {name: ("" if value is None else value) for name, value in data.items() if value is not False}
    assert client.post(edit, {**data, "max_tokens": "100"}).status_code == 302
    recipe.refresh_from_db()
    assert recipe.max_tokens == 100 and recipe.examples == EXAMPLES
    preview = client.get(reverse("datasets:recipe", args=[recipe.pk]),
                         {"dataset": variants[0].dataset_id, "external_id": variants[0].external_id})  # fmt: skip
    assert preview.status_code == 200
    assert preview.context["preview"].request.prompt.endswith(f"Vignette: {variants[0].text}\nQuestion: "
                                                              f"{variants[0].metadata['query']}\nAnswer:")  # fmt: skip
    # Without "examples from evaluated questions", a pool holding the evaluated vignettes cannot evaluate them.
    data.pop("examples_from_evaluated")
    assert client.post(edit, {**data, "max_tokens": "100"}).status_code == 302
    refused = client.get(reverse("datasets:recipe", args=[recipe.pk]),
                         {"dataset": variants[0].dataset_id, "external_id": variants[0].external_id})  # fmt: skip
    assert refused.status_code == 400
    assert refused.context["preview_error"].startswith(
        f"examples: question {variants[0].external_id} is never evaluated with this recipe: its base question "
        f"{variants[0].base.external_id} is one of the recipe's worked examples"
    )


def with_example(number: int, **change) -> str:
    examples = [dict(spec) for spec in EXAMPLES]
    examples[number].update(change)
    return json.dumps(examples)


@pytest.mark.parametrize(
    ("examples", "message"),
    [
        (with_example(0, replace=[["Patient D"]]), 'Example 1: "replace" is a list of [old, new] text pairs'),
        (with_example(0, replace=[["", "x"]]), 'Example 1: "replace" is a list of [old, new] text pairs'),
        (with_example(1, where=["kind", "no"]), 'Example 2: "where" is an object of metadata field → value'),
        (with_example(1, template=""), 'Example 2: "template" is the example\'s text'),
        (with_example(1, answer="correct"), 'Example 2: "answer" picks the letter after the item block'),
        (with_example(0, shots=2), "Example 1: an object with the keys header, answer, where, template, replace"),
        (with_example(0, template="Dosage: {dose_hihg}"),
         "examples template: the question has no field {dose_hihg} (checked against acute_cancer-00 of 'Q-Pain "
         "vignettes', with the fields question, options, answer, context_name, dosage, dose_high, dose_low, "
         "explanation, kind, query, vignette_idx)"),
        (with_example(1, where={"kind": "maybe"}),
         "examples: example 2: the pool 'Q-Pain vignettes' has no question with kind=maybe"),
    ],
)  # fmt: skip
def test_a_wrong_worked_example_is_an_error_on_the_examples_field(client, coordinator, vignettes, examples, message):
    client.force_login(coordinator)

    response = client.post(reverse("datasets:recipe_create"), form_data(vignettes, examples=examples))

    assert response.status_code == 400
    assert message in " ".join(response.context["form"].errors["examples"])
    assert not PromptRecipe.objects.exists()


def test_without_a_pool_the_templates_are_checked_against_the_medqa_shaped_sample(client, coordinator):
    client.force_login(coordinator)
    data = form_data(Dataset(pk=0), examples="[]", examples_pool="")

    response = client.post(reverse("datasets:recipe_create"), data)

    assert response.status_code == 400
    errors = " ".join(response.context["form"].errors["item_template"])
    assert "item_template: the question has no field {query} (checked against a sample question with question, " in (
        errors
    )


def test_the_api_creates_a_qpain_recipe_and_refuses_a_wrong_example(coordinator, vignettes):
    client = client_for(coordinator)
    body = {"name": "Q-Pain via API", "mode": "completion", "item_template": ITEM_TEMPLATE, "examples": EXAMPLES,
            "examples_pool": vignettes.pk, "examples_match_factor": "context", "stop": ["##"], "logprobs": True,
            "top_logprobs": 5, "max_tokens": 150}  # fmt: skip

    bad = client.post("/api/recipes/", {**body, "examples": [{**EXAMPLES[0], "replace": "Patient D"}]}, format="json")
    created = client.post("/api/recipes/", body, format="json")

    assert bad.status_code == 400 and '"replace" is a list of [old, new]' in " ".join(bad.json()["examples"])
    assert created.status_code == 201, created.json()
    assert PromptRecipe.objects.get().examples == EXAMPLES
