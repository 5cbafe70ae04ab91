"""What the recipe and variant pages (and their API) do beside the renderer: check a recipe, preview a request,
read a levels filter, start a job under a recipe, and start a variant run.

The renderer (`datasets.recipes`), the job engine (`datasets.generation`) and the variant generators
(`datasets.variants`) decide; this module only checks what a coordinator typed and hands it on.
"""

import re
from dataclasses import dataclass

from config.storable import json_problem

from . import recipes
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
LEVEL_PAIR = re.compile(r"^\s*(\w+)\s*=\s*([^=,]+?)\s*$")
LEVEL_FACTOR = re.compile(r"^\w+$")
EXAMPLE_ANSWERS = ("wrong", "correct")


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
        for number, spec in enumerate(value, start=1):
            if not isinstance(spec, dict) or set(spec) - {"header", "answer"}:
                return f'Example {number}: an object with "header" and "answer" only.'
            header = spec.get("header", {})
            if not isinstance(header, dict) or not all(isinstance(v, str) for v in header.values()):
                return f'Example {number}: "header" is an object of level → text ("*" for any other level).'
            if spec.get("answer", "wrong") not in EXAMPLE_ANSWERS:
                return f'Example {number}: "answer" is "wrong" or "correct".'
    return None


def check_recipe(recipe: PromptRecipe) -> None:
    """Render the sample question (and the sample as each worked example) with the recipe; raises RecipeError."""
    if recipe.examples and recipe.examples_pool_id is None:
        raise recipes.RecipeError("examples: the recipe names no pool to draw them from")
    settings = recipe.settings()
    examples = [SAMPLE_QUESTION] * len(recipe.examples or [])
    try:
        recipes.render_prompt(settings, SAMPLE_QUESTION, examples)
    except recipes.RecipeError as error:
        fields = ", ".join(SAMPLE_FIELDS)
        raise recipes.RecipeError(f"{error} (checked against a sample question with {fields})") from None


def error_field(error: recipes.RecipeError) -> str | None:
    """The recipe field a RecipeError names (its message starts with it), or None."""
    name = str(error).split(":", 1)[0]
    return name if name in {"item_template", "options_format", "examples", "examples_pool"} else None


@dataclass(frozen=True)
class Preview:
    question: Question
    model: str
    request: recipes.Request


def preview(recipe: PromptRecipe, question: Question, source: AnswerSource | None = None) -> Preview:
    """The exact request a job of this recipe sends for this question (with the source's model name)."""
    model = source.model_name if source is not None else PREVIEW_MODEL
    return Preview(question, model, recipes.build_request(recipe, question, model=model))


def find_question(dataset: Dataset, external_id: str = "") -> Question | None:
    """The dataset's question with this external id, or its first question when none is given."""
    questions = dataset.questions.order_by("id")
    return questions.filter(external_id=external_id).first() if external_id else questions.first()


def parse_levels(text: str) -> dict[str, str]:
    """`bias=recency, mitigation=none` (commas or new lines) → {"bias": "recency", "mitigation": "none"}."""
    levels: dict[str, str] = {}
    for part in filter(str.strip, re.split(r"[,\n]", text or "")):
        match = LEVEL_PAIR.match(part)
        if not match:
            raise LevelsError(f"{part.strip()!r} is not factor=level (e.g. bias=recency).")
        factor, level = match.groups()
        if factor in levels:
            raise LevelsError(f"The factor {factor!r} is given twice.")
        levels[factor] = level
    return levels


def format_levels(levels: dict) -> str:
    return ", ".join(f"{factor}={level}" for factor, level in (levels or {}).items())
