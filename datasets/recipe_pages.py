"""What the recipe and variant pages (and their API) do beside the renderer: check a recipe, preview a request,
read a levels filter, start a job under a recipe, and start a variant run.

The renderer (`datasets.recipes`), the job engine (`datasets.generation`) and the variant generators
(`datasets.variants`) decide; this module only checks what a coordinator typed and hands it on.
"""

import re
from dataclasses import dataclass

from config.storable import json_problem

from . import example_pool, factors, recipes
from .models import AnswerSource, Dataset, PromptRecipe, Question

# A sample multiple-choice question, the shape of MedQA's (options, answer_idx, answer, meta_info): a recipe's
# templates are rendered against it when saved, so a misspelt placeholder is a form error, not a failed job.
SAMPLE_QUESTION = recipes.QuestionView(
    text="A 45-year-old man presents with chest pain. Which of the following is the most likely diagnosis?",
    metadata={
        "options": {"A": "Angina", "B": "Pericarditis", "C": "Reflux", "D": "Costochondritis", "E": "Panic"},
        "answer_idx": "A",
        "answer": "Angina",
        "meta_info": "step1",
        "qid": 0,
    },
    key="sample",
)
SAMPLE_FIELDS = ["question", "options", *SAMPLE_QUESTION.metadata]
# The model name a preview shows when no source is chosen: the job puts the source's model name here.
PREVIEW_MODEL = "<the source's model>"
EXAMPLE_ANSWERS = ("wrong", "correct")
EXAMPLE_KEYS = ("header", "answer", "where", "template", "replace")
EXAMPLES_HELP = (
    "Worked examples before the question, each drawn from the pool by the seeded rule: a list of objects with "
    '"header" ({level: text}, "*" for any other level), "answer" ("wrong" or "correct": the letter it is answered '
    'with), "where" ({metadata field: value}: only pool questions with these values), "template" (the example\'s '
    'own text over its fields, e.g. "Answer: {answer}"; instead of the item block and letter) and "replace" '
    "([[old, new], ...], applied in order to the example's text). "
    f'At most {recipes.MAX_EXAMPLES} examples, {factors.MAX_FACTORS} "where" fields and '
    f"{recipes.MAX_REPLACE_PAIRS} replace pairs of at most {recipes.MAX_REPLACE_CHARS} characters each."
)


class LevelsError(ValueError):
    """A levels filter that is not `factor=level` pairs."""


def json_field_problem(name: str, value) -> str | None:
    """Why a recipe's JSON field has the wrong shape (or cannot be stored), in the coordinator's words."""
    if problem := json_problem(value):
        return f"Not storable: {problem}."
    if name in {"level_texts", "condition"}:
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            example = '{"recency": "Keep in mind ..."}' if name == "level_texts" else '{"mitigation": "education"}'
            return f"Write a JSON object of text values, e.g. {example}, or {{}} for none."
    elif name == "stop":
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            return 'Write a JSON list of non-empty texts, e.g. ["\\n"], or [] for none.'
    elif name == "examples":
        if not isinstance(value, list):
            return 'Write a JSON list of examples, e.g. [{"header": {"*": "### Example:"}, "answer": "wrong"}].'
        if len(value) > recipes.MAX_EXAMPLES:
            return f"At most {recipes.MAX_EXAMPLES} worked examples, not {len(value)}."
        for number, spec in enumerate(value, start=1):
            if problem := example_problem(spec):
                return f"Example {number}: {problem}"
    return None


def example_problem(spec) -> str | None:
    """Why one worked-example spec has the wrong shape, or None."""
    if not isinstance(spec, dict) or set(spec) - set(EXAMPLE_KEYS):
        return f"an object with the keys {', '.join(EXAMPLE_KEYS)} (each optional), nothing else."
    header = spec.get("header", {})
    if not isinstance(header, dict) or not all(isinstance(v, str) for v in header.values()):
        return '"header" is an object of level → text ("*" for any other level).'
    if spec.get("answer", "wrong") not in EXAMPLE_ANSWERS:
        return '"answer" is "wrong" or "correct".'
    where = spec.get("where", {})
    if not isinstance(where, dict) or not all(isinstance(v, str | int | float) for v in where.values()):
        return '"where" is an object of metadata field → value, e.g. {"kind": "yes"}.'
    if len(where) > factors.MAX_FACTORS:
        return f'"where" names at most {factors.MAX_FACTORS} fields, not {len(where)}.'
    if wrong := next((key for key in where if not factors.plain_key(key)), None):
        return f'"where" names {wrong[: factors.MAX_KEY_CHARS]!r}, not a metadata field name ({factors.KEY_RULE}).'
    if "template" in spec and not (isinstance(spec["template"], str) and spec["template"].strip()):
        return '"template" is the example\'s text, e.g. "Question: {question}\\nAnswer: {answer}".'
    if "answer" in spec and "template" in spec:
        return '"answer" picks the letter after the item block; with a "template", the template writes the answer.'
    replace = spec.get("replace", [])
    if not isinstance(replace, list) or not all(
        isinstance(pair, list) and len(pair) == 2 and all(isinstance(v, str) for v in pair) and pair[0]
        for pair in replace
    ):
        return '"replace" is a list of [old, new] text pairs, applied in order, e.g. [["Patient D", "Patient A"]].'
    if len(replace) > recipes.MAX_REPLACE_PAIRS:
        return f'"replace" has at most {recipes.MAX_REPLACE_PAIRS} pairs, not {len(replace)}.'
    if any(len(text) > recipes.MAX_REPLACE_CHARS for pair in replace for text in pair):
        return f'each text of a "replace" pair is at most {recipes.MAX_REPLACE_CHARS} characters.'
    return None


def sample_questions(recipe: PromptRecipe) -> tuple[recipes.QuestionView, list[recipes.QuestionView], str]:
    """What a recipe's templates are checked against: the first question of its examples pool (or the MedQA-shaped
    sample when it has none), and for each worked example the pool's first question matching its `where`.
    Returns (question, examples, description of the sample)."""
    pool = recipe.examples_pool if recipe.examples_pool_id else None
    first = pool.questions.order_by("id").first() if pool is not None else None
    if first is None:
        fields = ", ".join(SAMPLE_FIELDS)
        return SAMPLE_QUESTION, [SAMPLE_QUESTION] * len(recipe.examples or []), f"a sample question with {fields}"
    question = recipes.QuestionView.of(first)
    examples = []
    for number, spec in enumerate(recipe.examples or [], start=1):
        where = spec.get("where") or {}
        match = first
        if where:
            match = pool.questions.filter(**{f"metadata__{key}": v for key, v in where.items()}).order_by("id").first()
            if match is None:
                wanted = ", ".join(f"{key}={v}" for key, v in where.items())
                raise recipes.RecipeError(f"examples: example {number}: the pool {pool.name!r} has no question with "
                                          f"{wanted}")  # fmt: skip
        examples.append(recipes.QuestionView.of(match))
    values = recipes.item_values(question, recipe.settings())
    fields = ", ".join(["question", "options", *sorted(set(values) - {"question", "options"})])
    return question, examples, f"{first.external_id} of {pool.name!r}, with the fields {fields}"


def check_recipe(recipe: PromptRecipe) -> None:
    """Render a sample question (and samples as the worked examples) with the recipe; raises RecipeError."""
    recipes.check_keys(recipe)
    if recipe.examples and recipe.examples_pool_id is None:
        raise recipes.RecipeError("examples: the recipe names no pool to draw them from")
    as_system = recipe.mode == PromptRecipe.Mode.CHAT and recipe.prompt_role == PromptRecipe.PromptRole.SYSTEM
    if as_system and recipe.system_prompt:
        raise recipes.RecipeError(
            "prompt_role: the prompt is sent as the system message, so the recipe cannot have a system prompt too"
        )
    question, examples, described = sample_questions(recipe)
    try:
        recipes.render_prompt(recipe.settings(), question, examples)
    except recipes.RecipeError as error:
        raise recipes.RecipeError(f"{error} (checked against {described})") from None


def error_field(error: recipes.RecipeError) -> str | None:
    """The recipe field a RecipeError names (its message starts with it), or None."""
    name = str(error).split(":", 1)[0]
    if name.startswith("examples "):  # "examples template: ..." names a worked example's own template
        return "examples"
    fields = {
        "item_template",
        "options_format",
        "examples",
        "examples_pool",
        "level_factor",
        "examples_match_factor",
        "prompt_role",
    }
    return name if name in fields else None


@dataclass(frozen=True)
class Preview:
    question: Question
    model: str
    request: recipes.Request


def preview(recipe: PromptRecipe, question: Question, source: AnswerSource | None = None) -> Preview:
    """The exact request a job of this recipe sends for this question (with the source's model name)."""
    model = source.model_name if source is not None else PREVIEW_MODEL
    recipes.check_keys(recipe)  # a recipe saved before they were checked: its keys would reach the queries
    return Preview(question, model, recipes.build_request(recipe, question, model=model))


def find_question(dataset: Dataset, external_id: str = "", recipe: PromptRecipe | None = None) -> Question | None:
    """The dataset's question with this external id, or when none is given its first question (that the recipe
    evaluates: not one of its held-out worked examples)."""
    questions = dataset.questions.order_by("id")
    if external_id:
        return questions.filter(external_id=external_id).first()
    try:
        if recipe is not None:
            recipes.check_keys(recipe)
        excluded = example_pool.never_evaluated(recipe) if recipe is not None else None
    except recipes.RecipeError:
        excluded = None  # the preview itself says what is wrong with the recipe
    if excluded:
        questions = questions.exclude(id__in=excluded).exclude(base_id__in=excluded)
    return questions.first()


def parse_levels(text: str) -> dict[str, str]:
    """`bias=recency, mitigation=none` (commas or new lines) → {"bias": "recency", "mitigation": "none"}."""
    levels: dict[str, str] = {}
    for part in filter(str.strip, re.split(r"[,\n]", text or "")):
        factor, equals, level = (side.strip() for side in part.partition("="))
        if not (factor and equals and level) or "=" in level:
            raise LevelsError(f"{part.strip()!r} is not factor=level (e.g. bias=recency).")
        if factor in levels:
            raise LevelsError(f"The factor {factor!r} is given twice.")
        levels[factor] = level
    if problem := factors.levels_problem(levels):
        raise LevelsError(problem)
    return levels


def format_levels(levels: dict) -> str:
    return ", ".join(f"{factor}={level}" for factor, level in (levels or {}).items())
