"""Recipes, levels and variant runs are bounded (issue 17): the rendered prompt, the examples and their replace
pairs, factor names and `where` keys (plain keys, never ORM lookups), levels filters and a run's seed and limit;
refused with a message on the pages, in the engine and while rendering, never a server error."""

import tracemalloc

import pytest
from django.urls import reverse

from config.key_hosts import KeyNotAllowed, check_variable_name
from datasets import factors, recipe_pages, recipes
from datasets.generation import jobs
from datasets.models import GenerationJob, PromptRecipe, VariantRun
from datasets.variants import VariantOptionsError, biasmedqa, qpain, runs
from tests.datasets.test_recipe_pages import form_data
from tests.factories import AnswerSourceFactory, DatasetFactory, QuestionFactory

pytestmark = pytest.mark.django_db

OPTIONS = {"A": "Aspirin", "B": "Heparin", "C": "Warfarin", "D": "Nothing"}
SAMPLE = recipe_pages.SAMPLE_QUESTION
# The attacker's recipe: each pair multiplies the example's letters "e" by ten (241 bytes as JSON).
MULTIPLIER = [{"replace": [["e", "eeeeeeeeee"]] * 7}]
LOOKUPS = ["bias__isnull", "bias__regex", "race__range", "query__regex"]


@pytest.fixture
def pool():
    dataset = DatasetFactory(name="Pool")
    metadata = {"options": OPTIONS, "answer_idx": "B", "kind": "yes"}
    for n in range(3):
        QuestionFactory(dataset=dataset, external_id=str(n), text=f"Question {n}: the patient needs treatment here?",
                        levels={"bias": "recency"}, metadata=metadata)  # fmt: skip
    return dataset


def settings_of(**fields) -> dict:
    return PromptRecipe(name="r", **fields).settings()


# --- Rendering stops at the bound, before the text is made ------------------------------------------------


def test_replace_pairs_that_multiply_the_text_stop_rendering_before_the_text_is_made():
    tracemalloc.start()
    try:
        with pytest.raises(recipes.RecipeError, match=r"examples: replacing 'e' would make the prompt longer than "
                                                      r"1,000,000 characters"):  # fmt: skip
            recipes.render_prompt(settings_of(examples=MULTIPLIER), SAMPLE, [SAMPLE])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 5 * 1024 * 1024  # it built 70 million characters (about 134 MB) before the bound


def test_a_template_repeating_a_field_stops_at_the_bound():
    settings = settings_of(item_template="{question}" * 20_000)  # 200 KB of template, 2 million characters
    with pytest.raises(recipes.RecipeError, match="item_template: the prompt would be longer than 1,000,000"):
        recipes.render_prompt(settings, SAMPLE, [])
    options = settings_of(options_format="{text}" * 30, item_template="{options}")
    many = recipes.QuestionView("Which?", {"options": {f"O{n}": "x" * 2000 for n in range(20)}})
    with pytest.raises(recipes.RecipeError, match="options_format: the prompt would be longer"):
        recipes.render_prompt(options, many, [])


def test_the_whole_prompt_is_bounded_and_a_prompt_within_the_bound_renders(monkeypatch):
    monkeypatch.setattr(recipes, "MAX_PROMPT_CHARS", 1000)
    examples = [{"template": "{question}"}] * 3  # 96 characters each, as the question block
    fits = recipes.render_prompt(settings_of(examples=examples[:1], instruction="x" * 700), SAMPLE, [SAMPLE])
    assert len(fits) == 700 + 2 + 96 + 2 + 96
    with pytest.raises(recipes.RecipeError, match="examples: the prompt would be longer than 1,000 characters"):
        recipes.render_prompt(settings_of(examples=examples, instruction="x" * 850), SAMPLE, [SAMPLE] * 3)
    with pytest.raises(recipes.RecipeError, match="prompt: the prompt would be longer"):
        recipes.render_prompt(settings_of(instruction="x" * 990), SAMPLE, [])


def test_a_stored_recipe_with_too_many_examples_or_pairs_is_refused_while_rendering():
    with pytest.raises(recipes.RecipeError, match="examples: at most 20 worked examples, not 21"):
        recipes.render_prompt(settings_of(examples=[{}] * 21), SAMPLE, [SAMPLE] * 21)
    pairs = [{"replace": [["x", "y"]] * 21}]
    with pytest.raises(recipes.RecipeError, match="at most 20 replace pairs in an example, not 21"):
        recipes.render_prompt(settings_of(examples=pairs), SAMPLE, [SAMPLE])


# --- The recipe page refuses what is out of bounds ---------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("examples", '[{"replace": [["e", "eeeeeeeeee"]' + ', ["e", "eeeeeeeeee"]' * 6 + "]}]",
         "replacing 'e' would make the prompt longer than 1,000,000 characters"),
        ("examples", "[" + ", ".join(['{"answer": "wrong"}'] * 21) + "]", "At most 20 worked examples, not 21."),
        ("examples", '[{"replace": [' + ", ".join(['["a", "b"]'] * 21) + "]}]", "at most 20 pairs, not 21"),
        ("examples", '[{"replace": [["a", "' + "b" * 201 + '"]]}]', "is at most 200 characters"),
        ("examples", '[{"where": {"query__regex": "^(.+)(.+)$"}}]', "not a metadata field name"),
        ("examples", '[{"where": {"kind\\n": "yes"}}]', "not a metadata field name"),
        ("level_factor", "bias__isnull", "is not a factor name"),
        ("examples_match_factor", "race__range", "is not a factor name"),
    ],
)  # fmt: skip
def test_the_recipe_form_refuses_what_is_out_of_bounds(client, coordinator, pool, field, value, message):
    client.force_login(coordinator)
    response = client.post(reverse("datasets:recipe_create"), form_data(examples_pool=pool.pk, **{field: value}))

    assert response.status_code == 400
    assert message in " ".join(response.context["form"].errors[field])
    assert not PromptRecipe.objects.exists()


def test_a_recipe_within_the_bounds_is_saved(client, coordinator, pool):
    client.force_login(coordinator)
    examples = '[{"where": {"kind": "yes"}, "replace": [["Question", "Q"]], "answer": "correct"}]'
    data = form_data(examples_pool=pool.pk, examples=examples, examples_match_factor="bias", level_factor="bias")
    response = client.post(reverse("datasets:recipe_create"), data)
    assert response.status_code == 302, response.context["form"].errors


@pytest.mark.parametrize("lookup", LOOKUPS)
def test_a_stored_recipe_naming_a_lookup_is_refused_before_any_query(client, coordinator, pool, lookup):
    """Saved by a script or before the checks: the preview and a job say why instead of a server error."""
    recipe = PromptRecipe.objects.create(name="Old", examples=[{"answer": "wrong"}], examples_pool=pool,
                                         examples_match_factor=lookup)  # fmt: skip
    client.force_login(coordinator)
    page = client.get(reverse("datasets:recipe", args=[recipe.pk]), {"dataset": pool.pk})
    assert page.status_code == 400 and "is not a factor name" in page.context["preview_error"]

    source = AnswerSourceFactory(base_url="http://127.0.0.1:9/v1")
    with pytest.raises(jobs.GenerationRefused, match="examples_match_factor: .* is not a factor name"):
        jobs.start_job(dataset=pool, source=source, recipe=recipe)
    where = PromptRecipe.objects.create(name="Old where", examples=[{"where": {lookup: "("}}], examples_pool=pool)
    with pytest.raises(recipes.RecipeError, match="not a metadata field name"):
        recipe_pages.preview(where, pool.questions.first())
    assert not GenerationJob.objects.exists()


# --- Levels filters ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("levels", "message"),
    [
        ("bias__isnull=x", "is not a factor name"),
        ("bias__regex=(", "is not a factor name"),
        ("race__range=abc", "is not a factor name"),
        ("query__regex=^(.+)(.+)(.+)(.+)\\4\\3\\2\\1$", "is not a factor name"),
        (", ".join(f"f{n}=x" for n in range(21)), "At most 20 factors, not 21."),
        ("bias=" + "x" * 201, "is 1 to 200 characters"),
    ],
)
def test_the_job_form_refuses_levels_out_of_bounds(client, coordinator, pool, levels, message):
    recipe = PromptRecipe.objects.create(name="Plain")
    source = AnswerSourceFactory(base_url="http://127.0.0.1:9/v1")
    client.force_login(coordinator)
    response = client.post(reverse("datasets:recipe_generate", args=[recipe.pk]),
                           {"job-source": source.pk, "job-dataset": pool.pk, "job-levels": levels})  # fmt: skip

    assert response.status_code == 400
    assert message in response.context["job_form"].errors["levels"][0]
    assert not GenerationJob.objects.exists()


def test_the_levels_syntax_takes_factor_names_with_dashes_and_refuses_a_second_equals_sign():
    assert recipe_pages.parse_levels(" bias = recency ,\nage-group=65+ ") == {"bias": "recency", "age-group": "65+"}
    with pytest.raises(recipe_pages.LevelsError, match="is not factor=level"):
        recipe_pages.parse_levels("bias=a=b")


@pytest.mark.parametrize(
    "levels",
    [{"bias__isnull": "x"}, {"bias__regex": "("}, {"race__range": "abc"}, {"bias": 3},
     {f"factor{n}": "x" for n in range(10_000)}, {"bias": "x" * 201}],
)  # fmt: skip
def test_the_engine_refuses_levels_out_of_bounds_as_a_last_line_of_defence(pool, levels):
    source = AnswerSourceFactory(base_url="http://127.0.0.1:9/v1")
    with pytest.raises(jobs.GenerationRefused):
        jobs.start_job(dataset=pool, source=source, levels=levels)
    with pytest.raises(jobs.GenerationRefused):
        jobs.questions_at(pool, levels)
    assert not GenerationJob.objects.exists()


# --- Variant runs: seed and limit ---------------------------------------------------------------------------


HUGE = "99999999999999999999"


@pytest.mark.parametrize(("field", "value"), [("seed", HUGE), ("seed", str(-(2**31) - 1)), ("limit", HUGE)])
def test_the_variant_form_refuses_a_seed_or_limit_the_database_cannot_hold(client, coordinator, pool, field, value):
    client.force_login(coordinator)
    data = {"generator": "biasmedqa", "base_dataset": pool.pk, "seed": "0", field: value}
    response = client.post(reverse("datasets:variant_run_create"), data)

    assert response.status_code == 400
    assert "than or equal to" in response.context["form"].errors[field][0]
    assert not VariantRun.objects.exists()


def test_the_generators_and_start_variant_run_refuse_a_huge_limit_or_seed(pool):
    for check_options in (biasmedqa.check_options, qpain.check_options):
        with pytest.raises(VariantOptionsError, match="from 1 to 2147483647"):
            check_options({"limit": 2**31})
    with pytest.raises(runs.VariantRunRefused, match="the seed must be a whole number from"):
        runs.start_variant_run(generator="biasmedqa", base_dataset=pool, seed=2**31, queue=False)
    assert not VariantRun.objects.exists()


# --- Patterns over user input are anchored at the very end (\Z, not $) ------------------------------------


def test_a_trailing_new_line_does_not_pass_a_pattern():
    with pytest.raises(KeyNotAllowed):
        check_variable_name("OPENAI_API_KEY\n")
    with pytest.raises(VariantOptionsError, match='is not "context/NN/Race/gender"'):
        qpain.check_options({"names": {"acute_cancer/00/Black/woman\n": "Ms B"}})
    assert not factors.plain_key("bias\n") and factors.plain_key("bias")
