"""Worked examples (DESIGN.md, "Worked examples"): drawn per base question, so they never vary with the levels
a study compares; drawn from a held-out part of the pool, so no example is a question under test."""

import pytest
from django.urls import reverse

from datasets import example_pool
from datasets.example_pool import ExamplesError, Member, Unit, draw_examples, held_out, is_held_out
from datasets.generation import jobs
from datasets.importers.qpain import QPAIN_DATASET, import_qpain_vignettes
from datasets.models import Dataset, GenerationJob, PromptRecipe, Question
from datasets.recipes import RecipeError, build_request
from datasets.variants import biasmedqa
from datasets.variants.biasmedqa_recipes import FEW_SHOT, ONE_SHOT, ensure_biasmedqa_recipes
from datasets.variants.qpain_recipes import COMPLETION, ensure_qpain_recipes
from datasets.variants.runs import run_variant_run, start_variant_run
from tests.datasets.test_generation_recipes import model_source
from tests.datasets.test_recipes import make_variants
from tests.llm_server import FakeLLM

LEVELS = ("none", "recency", "cultural")


def unit(number: int, *, levels=LEVELS, base_in_pool=False) -> Unit:
    """A base question `b{number}` with one pool member per level (ids number*10 + i)."""
    members = tuple(Member(number * 10 + i, level, {"kind": "yes"}) for i, level in enumerate(levels, start=1))
    base = Member(number * 10, "none", {"kind": "yes"})
    return Unit(number * 10, f"b{number}", (base, *members) if base_in_pool else members, base)


# --- The draw, on plain values -----------------------------------------------------------------------------


def test_every_level_of_one_base_question_gets_the_same_example_units_and_each_shows_its_level():
    units = [unit(n) for n in range(1, 40)]
    specs = [{}, {}]

    drawn = {level: draw_examples(units, specs, seed=3, unit_key="q7", unit_id=7000, level=level) for level in LEVELS}

    by_id = {member.id: (u.key, member.level) for u in units for member in u.members}
    example_units = {level: [by_id[pk][0] for pk in ids] for level, ids in drawn.items()}
    assert len({tuple(keys) for keys in example_units.values()}) == 1  # the same two base questions
    assert len(set(example_units["none"])) == 2
    assert all(by_id[pk][1] == level for level, ids in drawn.items() for pk in ids)  # the member follows the level
    other = draw_examples(units, specs, seed=3, unit_key="q8", unit_id=8000, level="none")
    another_seed = draw_examples(units, specs, seed=4, unit_key="q7", unit_id=7000, level="none")
    assert drawn["none"] != other or drawn["none"] != another_seed  # the draw is per base question and seed


def test_a_unit_lacking_the_level_gives_way_to_the_next_in_the_seeded_order_for_that_level_only():
    units = [unit(n) for n in range(1, 6)]
    first = draw_examples(units, [{}], seed=0, unit_key="q", unit_id=1, level="recency")[0]
    first_unit = first // 10
    units = [unit(n, levels=("none", "cultural")) if n == first_unit else unit(n) for n in range(1, 6)]

    assert draw_examples(units, [{}], seed=0, unit_key="q", unit_id=1, level="cultural")[0] // 10 == first_unit
    assert draw_examples(units, [{}], seed=0, unit_key="q", unit_id=1, level="recency")[0] // 10 != first_unit


def test_at_the_reference_level_a_unit_without_an_unbiased_member_shows_its_base_question():
    units = [unit(n, levels=("recency",)) for n in range(1, 4)]

    [chosen] = draw_examples(units, [{}], seed=0, unit_key="q", unit_id=1, level="none")

    assert chosen in {10, 20, 30}  # a base question's id, not a member's


def test_never_the_questions_own_base_nor_one_unit_twice_and_a_short_pool_says_so():
    units = [unit(1), unit(2)]

    assert draw_examples(units, [{}], seed=0, unit_key="b1", unit_id=10, level="none") == [21]
    with pytest.raises(ExamplesError, match=r"no question for example 2 at level none \(kind=yes\) outside"):
        draw_examples(units, [{"where": {"kind": "yes"}}] * 2, seed=0, unit_key="b1", unit_id=10, level="none")


def test_a_held_out_base_question_stays_held_out_however_the_pool_grows():
    small = [unit(n) for n in range(200)]
    large = [unit(n) for n in range(2000)]

    part_small = {u.key for u in held_out(small, seed=0, share=0.1)}
    part_large = {u.key for u in held_out(large, seed=0, share=0.1)}

    assert part_small == part_large & {u.key for u in small}
    assert 150 <= len(part_large) <= 250  # ~10%
    assert {u.key for u in held_out(large, seed=1, share=0.1)} != part_large
    assert held_out(small, seed=0, share=0) == small  # no holdout: the whole pool is examples
    assert all(is_held_out(0, u.key, 0.1) == (u.key in part_large) for u in large)


# --- Q-Pain: the 8 profiles of a vignette see the same worked examples -------------------------------------


@pytest.mark.django_db
def test_the_completion_prompts_of_the_8_profiles_of_each_of_the_50_vignettes_differ_only_in_the_vignette_block():
    import_qpain_vignettes()
    vignettes = Dataset.objects.get(name=QPAIN_DATASET)
    run = run_variant_run(start_variant_run(generator="qpain", base_dataset=vignettes, queue=False).id)
    recipe = {recipe.name: recipe for recipe in ensure_qpain_recipes(vignettes)}[COMPLETION]
    prefixes: dict[str, set[str]] = {}
    blocks: dict[str, set[str]] = {}

    for variant in run.dataset.questions.select_related("base"):
        prompt = build_request(recipe, variant, model="davinci").prompt
        examples, final = prompt.rsplit("##\n\n", 1)  # each worked example ends with "##" and a blank line
        prefixes.setdefault(variant.base.external_id, set()).add(examples)
        blocks.setdefault(variant.base.external_id, set()).add(final)
        assert final == f"Vignette: {variant.text}\nQuestion: {variant.metadata['query']}\nAnswer:"

    assert len(prefixes) == 50
    assert {len(found) for found in prefixes.values()} == {1}  # one example set per vignette
    assert {len(found) for found in blocks.values()} == {8}  # eight profiles
    assert len({prefix for found in prefixes.values() for prefix in found}) > 5  # still drawn per vignette


# --- BiasMedQA: examples from a held-out part, the same for every bias of a question --------------------------


def medqa_like(count: int) -> Dataset:
    base = Dataset.objects.create(name="MedQA-like")
    for n in range(count):
        Question.objects.create(
            dataset=base, external_id=str(n), text=f"Patient {n} coughs. Which drug?",
            metadata={"options": dict(zip("ABCDE", "abcde", strict=True)), "answer_idx": "ABCDE"[n % 5], "qid": n},
        )  # fmt: skip
    return base


@pytest.fixture
def study():
    """60 base questions x (7 biases + none) and the eight recipes holding out 20% of them."""
    variants = make_variants(medqa_like(60), biases=[*biasmedqa.BIASES, "none"])
    recipes = {recipe.name: recipe for recipe in ensure_biasmedqa_recipes(pool=variants)}
    PromptRecipe.objects.filter(name__startswith="BiasMedQA").update(examples_holdout=0.2)
    for recipe in recipes.values():
        recipe.refresh_from_db()
    return variants, recipes


@pytest.mark.django_db
def test_the_biases_of_one_question_share_their_example_questions_drawn_outside_the_evaluated_ones(study):
    variants, recipes = study
    held = example_pool.never_evaluated(recipes[FEW_SHOT])
    evaluated = variants.questions.exclude(base_id__in=held).select_related("base")

    for recipe in (recipes[ONE_SHOT], recipes[FEW_SHOT]):
        per_base: dict[int, set[tuple[str, ...]]] = {}
        for question in evaluated:
            request = build_request(recipe, question, model="m")
            examples = [variants.questions.get(external_id=key) for key in request.examples]
            assert all(example.base_id in held for example in examples)  # never a question under test
            assert all(example.levels == question.levels for example in examples)  # the bias text follows the level
            per_base.setdefault(question.base_id, set()).add(tuple(str(e.base_id) for e in examples))
        assert len(per_base) == 60 - len(held)
        assert {len(found) for found in per_base.values()} == {1}  # the same base questions at all 8 levels

    assert 5 <= len(held) <= 20
    assert all(example_pool.never_evaluated(recipe) == held for recipe in recipes.values())


@pytest.mark.django_db
def test_a_held_out_question_is_never_rendered_and_a_job_leaves_it_out(study):
    variants, recipes = study
    recipe = recipes["BiasMedQA: no mitigation"]
    held = example_pool.never_evaluated(recipe)
    example = variants.questions.filter(base_id__in=held).first()

    with pytest.raises(RecipeError, match=f"question {example.external_id} is never evaluated with this recipe"):
        build_request(recipe, example, model="m")
    with FakeLLM() as server:
        job = jobs.start_job(dataset=variants, source=model_source(server), recipe=recipe)

    assert job.held_out == 8 * len(held)
    asked = Question.objects.filter(id__in=[call.subject["question"] for call in jobs.batch_calls(job)])
    assert asked.count() == jobs.batch_calls(job).count() == 8 * (60 - len(held))
    assert not asked.filter(base_id__in=held).exists()


@pytest.mark.django_db
def test_a_pool_holding_every_question_asked_refuses_the_job_and_says_what_to_do(study):
    variants, recipes = study
    recipe = recipes[ONE_SHOT]
    recipe.examples_holdout = 0  # the whole pool is examples: nothing of it may be evaluated
    recipe.save()

    with FakeLLM() as server, pytest.raises(jobs.GenerationRefused, match="hold out only part of the pool"):
        jobs.start_job(dataset=variants, source=model_source(server), recipe=recipe)
    assert not GenerationJob.objects.exists()


@pytest.mark.django_db
def test_a_separate_pool_leaves_every_question_of_the_study_to_evaluate():
    """The paper's way: examples from MedQA's training split, the test split evaluated whole."""
    study = make_variants(medqa_like(6), biases=["recency", "none"])
    train = Dataset.objects.create(name="MedQA-like train")
    for n in range(4):
        Question.objects.create(
            dataset=train, external_id=f"train-{n}", text=f"Train {n}?", levels={"bias": "recency"},
            metadata={"options": {"A": "a", "B": "b"}, "answer_idx": "A", "bias_answer_idx": "B"},
        )  # fmt: skip
    recipes = {recipe.name: recipe for recipe in ensure_biasmedqa_recipes(pool=train, holdout=0)}
    recipe = recipes[ONE_SHOT]
    assert recipes["BiasMedQA: no mitigation"].examples_pool is None  # it evaluates every question

    with FakeLLM() as server:
        job = jobs.start_job(dataset=study, source=model_source(server), recipe=recipe, levels={"bias": "recency"})

    assert (job.held_out, jobs.batch_calls(job).count()) == (0, 6)
    request = build_request(recipe, study.questions.get(external_id="0-recency"), model="m")
    assert request.examples[0].startswith("train-") and "### Answer: B\n\n" in request.prompt


@pytest.mark.django_db
def test_the_recipe_page_says_what_is_held_out_and_previews_the_first_question_it_evaluates(client, coordinator, study):
    variants, recipes = study
    recipe = recipes[FEW_SHOT]
    held = example_pool.never_evaluated(recipe)
    client.force_login(coordinator)

    page = client.get(reverse("datasets:recipe", args=[recipe.pk]), {"dataset": variants.pk, "external_id": ""})

    assert page.status_code == 200
    question = page.context["preview"].question
    assert question.base_id not in held
    assert not variants.questions.filter(id__lt=question.id).exclude(base_id__in=held).exists()
    notice = f'data-held-out="{len(held)}">{len(held)} base questions of\n   {variants.name} (a seeded 20% share)'
    assert notice in page.content.decode()


@pytest.mark.django_db
def test_a_pool_is_read_anew_once_it_gains_or_loses_a_question():
    pool = Dataset.objects.create(name="Pool")
    recipe = PromptRecipe.objects.create(name="R", examples=[{}], examples_pool=pool)
    first = Question.objects.create(dataset=pool, external_id="a", text="A?")
    assert [unit.key for unit in example_pool.pool_units(recipe)] == ["a"]

    Question.objects.create(dataset=pool, external_id="b", text="B?")
    assert [unit.key for unit in example_pool.pool_units(recipe)] == ["a", "b"]
    first.delete()
    assert [unit.key for unit in example_pool.pool_units(recipe)] == ["b"]
