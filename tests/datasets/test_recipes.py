"""BiasMedQA's recipes over the generator's variants: the logged prompts, byte for byte, and all 8,911."""

import json
import re

import pytest

from datasets.models import Dataset, PromptRecipe, Question, text_fingerprint
from datasets.recipes import QuestionView, build_request, render_prompt
from datasets.variants import biasmedqa
from datasets.variants.biasmedqa_recipes import (
    EDUCATION,
    FEW_SHOT,
    NO_MITIGATION,
    ONE_SHOT,
    ensure_biasmedqa_recipes,
)
from datasets.variants.runs import run_variant_run, start_variant_run
from tests.datasets.biasmedqa_logs import log_escaped, logged_prompts
from tests.datasets.test_variants import import_medqa

pytestmark = pytest.mark.django_db


def medqa_rows(shared_datasets, count: int | None = None) -> list[dict]:
    lines = (shared_datasets / "biasmedqa" / "questions" / "test.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines[:count]]


def base_dataset(name: str, rows: list[dict], *, escaped: bool) -> Dataset:
    """Base questions as the medqa importer stores them (qid = line - 1), optionally as the logs escape them."""
    dataset = Dataset.objects.create(name=name)
    for qid, row in enumerate(rows):
        metadata = {key: row[key] for key in ("options", "answer_idx", "answer", "meta_info")} | {"qid": qid}
        text = row["question"].strip()
        if escaped:
            text, metadata = log_escaped(metadata, text)
        Question.objects.create(dataset=dataset, external_id=str(qid), text=text, metadata=metadata)
    return dataset


def make_variants(base: Dataset, **options) -> Dataset:
    run = start_variant_run(generator="biasmedqa", base_dataset=base, options=options, queue=False)
    run = run_variant_run(run.id)
    assert run.status == "done", run.error
    return run.dataset


def test_the_recipes_are_created_once_by_name_recommended_and_as_published():
    pool = Dataset.objects.create(name="Examples")

    first = ensure_biasmedqa_recipes(pool=pool)
    again = ensure_biasmedqa_recipes()

    published = [f"BiasMedQA as published: {name.split(': ')[1]}" for name in (NO_MITIGATION, EDUCATION, ONE_SHOT,
                                                                                FEW_SHOT)]  # fmt: skip
    names = [NO_MITIGATION, published[0], EDUCATION, published[1], ONE_SHOT, published[2], FEW_SHOT, published[3]]
    assert [recipe.name for recipe in first] == names
    assert [recipe.pk for recipe in again] == [recipe.pk for recipe in first]
    assert PromptRecipe.objects.count() == 8
    conditions = [recipe.condition["mitigation"] for recipe in again]
    assert conditions == ["none", "none", "education", "education", "one-shot", "one-shot", "few-shot", "few-shot"]
    # Every recipe holds out the same share of the pool: all conditions evaluate the same questions.
    assert {(recipe.examples_pool, recipe.examples_holdout, recipe.examples_seed) for recipe in again} == {
        (pool, 0.05, 0)
    }
    settings = [(recipe.prompt_role, recipe.max_tokens, recipe.temperature) for recipe in again]
    assert settings == [("user", 512, 0.0), ("system", 2048, None)] * 4


def test_20_self_diagnosis_prompts_equal_the_logged_gpt4_prompts_byte_for_byte(shared_datasets):
    """Generator (with the logged letters) + the no-mitigation recipe rebuild the 20 logged prompts, once the
    base questions are escaped as the logs escape them."""
    folder = shared_datasets / "biasmedqa"
    logged = logged_prompts(folder / "raw_samples" / "bias_output_self_diagnosis_gpt-4-0613.first20.txt")
    lines = (folder / "biasmedqa_injections.jsonl").read_text(encoding="utf-8").splitlines()
    base = base_dataset("MedQA as logged", medqa_rows(shared_datasets, 20), escaped=True)
    variants = make_variants(
        base, biases=["self_diagnosis"], letters=biasmedqa.letters_from_jsonl(lines), letters_source="injections"
    )
    (recipe, *_) = ensure_biasmedqa_recipes()

    requests = [
        build_request(recipe, variants.questions.get(external_id=f"{qid}-self_diagnosis"), model="gpt-4-0613")
        for qid in range(20)
    ]

    assert len(logged) == 20
    assert [request.prompt for request in requests] == logged
    assert [request.body["messages"] for request in requests] == [[{"role": "user", "content": p}] for p in logged]
    assert requests[0].body | {"messages": None} == {
        "model": "gpt-4-0613", "messages": None, "temperature": 0.0, "max_tokens": 512,
    }  # fmt: skip
    assert sum("\\" in prompt for prompt in logged) > 0  # the escaping is exercised, not vacuous


def test_education_appends_the_bias_sentence_to_the_instruction_after_a_space():
    recipes = {recipe.name: recipe for recipe in ensure_biasmedqa_recipes()}
    settings = recipes[EDUCATION].settings()
    question = QuestionView("A cough. Which drug?", {"options": {"A": "a", "B": "b"}}, {"bias": "recency"}, "1")
    unbiased = QuestionView("A cough. Which drug?", {"options": {"A": "a", "B": "b"}}, {}, "1")

    prompt = render_prompt(settings, question, [])

    assert prompt == (
        f"{biasmedqa.INSTRUCTION} {biasmedqa.EDUCATION['recency']}\n\n"
        "### Question: A cough. Which drug?\n### Options: A: a, B: b\n### Answer: "
    )
    assert render_prompt(settings, unbiased, []) == render_prompt(recipes[NO_MITIGATION].settings(), unbiased, [])


def parse_block(block: str) -> tuple[str, dict, str]:
    """A logged question block: (question, options, answer letter)."""
    match = re.fullmatch(r"### Question: (.*)\n### Options: (.*)\n### Answer: (.*)", block, re.DOTALL)
    assert match, block[:200]
    options = dict(part.split(": ", 1) for part in re.split(r", (?=[A-E]: )", match.group(2)))
    return match.group(1), options, match.group(3)


def test_one_shot_prompts_follow_the_logged_layout(shared_datasets):
    """The 20 logged one-shot confirmation prompts: header, example block answered with its bias letter, blank
    line, footer, blank line, target block. With each logged example as the pool and the target's logged
    letter, ours equal theirs but for the code's "puposes" typo (which the one-shot logs keep)."""
    folder = shared_datasets / "biasmedqa"
    logged = logged_prompts(folder / "raw_samples" / "bias_output_confirmation_one-shot_gpt-4-0613.first20.txt")
    rows = medqa_rows(shared_datasets, 20)
    base = base_dataset("MedQA (first 20)", rows, escaped=False)
    pool = Dataset.objects.create(name="One-shot examples")
    recipe = {recipe.name: recipe for recipe in ensure_biasmedqa_recipes(pool=pool, holdout=0)}[ONE_SHOT]
    header = biasmedqa.ONE_SHOT_EXAMPLES[0]["header"]["*"]

    ours = []
    for qid, prompt in enumerate(logged):
        parts = prompt.split("\n\n")
        assert parts[0].replace("puposes", "purposes") == biasmedqa.INSTRUCTION
        assert parts[1].startswith(header + "\n### Question: ")
        assert parts[2:4] == [biasmedqa.EXAMPLES_FOOTER, parts[3]] and parts[3].endswith("### Answer: ")
        example_text, example_options, example_letter = parse_block(parts[1].removeprefix(header + "\n"))
        _, _, no_letter = parse_block(parts[3])
        assert no_letter == ""
        target_letter = re.search(r"the correct answer is ([A-E]):", parts[3]).group(1)
        pool.questions.all().delete()
        Question.objects.create(
            dataset=pool, external_id=f"example-{qid}", text=example_text, levels={"bias": "confirmation"},
            metadata={"options": example_options, "bias_answer_idx": example_letter},
        )  # fmt: skip
        base_question = base.questions.get(external_id=str(qid))
        text, sentence = biasmedqa.biased_question(
            base_question.text, base_question.metadata["options"], "confirmation", target_letter
        )
        target = Question.objects.create(
            dataset=Dataset.objects.get_or_create(name="Targets")[0], base=base_question,
            external_id=f"{qid}-confirmation", text=text, levels={"bias": "confirmation"},
            metadata=biasmedqa.variant_metadata(base_question.metadata, "confirmation", target_letter, sentence),
        )  # fmt: skip
        request = build_request(recipe, target, model="gpt-4-0613")
        assert request.examples == (f"example-{qid}",)
        ours.append(request.prompt)

    assert ours == [prompt.replace("puposes", "purposes") for prompt in logged]


def test_few_shot_layout_bias_letter_then_correct_letter():
    recipes = {recipe.name: recipe for recipe in ensure_biasmedqa_recipes()}
    options = {"A": "a", "B": "b", "C": "c"}
    wrong = QuestionView("One?", {"options": options, "answer_idx": "A", "bias_answer_idx": "C"}, {"bias": "x"}, "e1")
    right = QuestionView("Two?", {"options": options, "answer_idx": "B", "bias_answer_idx": "A"}, {"bias": "x"}, "e2")
    target = QuestionView("Three?", {"options": options}, {"bias": "x"}, "t")

    prompt = render_prompt(recipes[FEW_SHOT].settings(), target, [wrong, right])

    headers = [spec["header"]["*"] for spec in biasmedqa.FEW_SHOT_EXAMPLES]
    block = "### Question: {}\n### Options: A: a, B: b, C: c\n### Answer: {}"
    first, second = f"{headers[0]}\n{block.format('One?', 'C')}", f"{headers[1]}\n{block.format('Two?', 'B')}"
    expected = [biasmedqa.INSTRUCTION, first, second, biasmedqa.EXAMPLES_FOOTER, block.format("Three?", "")]
    assert prompt == "\n\n".join(expected)
    none_headers = [spec["header"]["none"] for spec in biasmedqa.FEW_SHOT_EXAMPLES]
    unbiased = render_prompt(recipes[FEW_SHOT].settings(), QuestionView("Three?", {"options": options}), [wrong, right])
    assert [line for line in unbiased.splitlines() if line.startswith("### Example")] == none_headers


def test_the_no_mitigation_recipe_renders_8911_distinct_requests(shared_datasets):
    medqa = import_medqa(shared_datasets)
    variants = make_variants(medqa)
    recipe = ensure_biasmedqa_recipes()[0]

    requests = [build_request(recipe, question, model="stand-in") for question in variants.questions.all()]

    prompts = {request.prompt for request in requests}
    assert len(requests) == len(prompts) == 8911
    assert all(request.body["messages"][-1]["content"] == request.prompt for request in requests)
    assert all(prompt.startswith(biasmedqa.INSTRUCTION + "\n\n### Question: ") for prompt in prompts)
    assert sum(text_fingerprint(prompt) != "" for prompt in prompts) == 8911
