"""Prompt recipes (DESIGN.md): how a question becomes the exact request a model receives.

`render_prompt` is pure (settings and plain question views in, text out); `build_request` adds the worked
examples drawn from the recipe's pool and the request body the engine sends as is, so a preview shows
byte for byte what a generation job will send.
"""

import random
import re
from dataclasses import dataclass, field

from . import example_pool
from .factors import KEY_RULE, MAX_FACTORS, MAX_KEY_CHARS, REFERENCE_LEVEL, level_of, plain_key
from .models import PromptRecipe, Question

PLACEHOLDER = re.compile(r"\{(\w+)\}")
LETTERS = "ABCDEFGHIJ"

# Bounds on what a recipe may make (issue 17). A real prompt is a few thousand characters; `replace` pairs and
# templates repeating a field multiply text, so rendering stops with a RecipeError at MAX_PROMPT_CHARS rather
# than build a string of gigabytes. The pages and the API refuse larger recipes when they are saved.
MAX_PROMPT_CHARS = 1_000_000
MAX_EXAMPLES = 20
MAX_REPLACE_PAIRS = 20
MAX_REPLACE_CHARS = 200  # each text of a pair


class RecipeError(ValueError):
    """A recipe that cannot render a question: the message says which field and why."""


def check_keys(recipe: PromptRecipe) -> None:
    """Raise RecipeError if what the recipe's queries are built from is out of bounds: a factor (`level_factor`,
    `examples_match_factor`) or a key of an example's `where` that is not a plain key, more than MAX_EXAMPLES
    examples (a query each) or MAX_FACTORS `where` keys. Call it before building such a query: a recipe saved
    before the pages and the API checked these may hold anything."""
    for name in ("level_factor", "examples_match_factor"):
        value = getattr(recipe, name) or ""
        if value and not plain_key(value):
            raise RecipeError(f"{name}: {str(value)[:MAX_KEY_CHARS]!r} is not a factor name ({KEY_RULE}).")
    examples = recipe.examples or []
    if not isinstance(examples, list) or len(examples) > MAX_EXAMPLES:
        raise RecipeError(f"examples: a list of at most {MAX_EXAMPLES} worked examples.")
    for number, spec in enumerate(examples, start=1):
        where = spec.get("where") if isinstance(spec, dict) else None
        if where is None:
            continue
        if not isinstance(where, dict) or len(where) > MAX_FACTORS:
            raise RecipeError(f'examples: example {number}: "where" is an object of at most {MAX_FACTORS} fields.')
        for key in where:
            if not plain_key(key):
                raise RecipeError(f'examples: example {number}: "where" names {str(key)[:MAX_KEY_CHARS]!r}, '
                                  f"not a metadata field name ({KEY_RULE}).")  # fmt: skip


@dataclass(frozen=True)
class QuestionView:
    """What a recipe may read of a question (a model row or a plain value in tests)."""

    text: str
    metadata: dict = field(default_factory=dict)
    levels: dict = field(default_factory=dict)
    key: str = ""  # stable identifier for the seeded example choice: the external id

    @classmethod
    def of(cls, question: Question) -> "QuestionView":
        return cls(question.text, question.metadata or {}, question.levels or {}, question.external_id)

    def level(self, factor: str) -> str:
        return level_of(self.levels, factor)


@dataclass(frozen=True)
class Request:
    mode: str
    prompt: str  # the prompt text: the user message in chat mode
    body: dict  # the JSON body sent to the endpoint, without nothing added but the model's name
    examples: tuple[str, ...] = ()  # external ids of the worked examples, for provenance


def options_text(options: dict, settings: dict) -> str:
    item_format = settings.get("options_format") or "{letter}: {text}"
    separator = settings.get("options_separator") or ", "
    items: list[str] = []
    length = 0
    for letter, text in sorted((options or {}).items()):
        items.append(_fill(item_format, {"letter": letter, "text": str(text)}, "options_format"))
        length += len(items[-1]) + len(separator)
        _check_length(length, "options_format")
    return separator.join(items)


def _fill(template: str, values: dict, where: str) -> str:
    """The template with each {name} replaced by its value; its length is known (and checked) before it is made."""
    texts = {name: str(value) for name, value in values.items()}
    length = len(template)
    for match in PLACEHOLDER.finditer(template):
        name = match.group(1)
        if name not in texts:
            raise RecipeError(f"{where}: the question has no field {{{name}}}")
        length += len(texts[name]) - len(match.group(0))
    _check_length(length, where)
    return PLACEHOLDER.sub(lambda match: texts[match.group(1)], template)


def _replace(text: str, old: str, new: str) -> str:
    """str.replace, refused (before the text is made) when the result would pass MAX_PROMPT_CHARS."""
    if len(text) + text.count(old) * (len(new) - len(old)) > MAX_PROMPT_CHARS:
        raise RecipeError(f"examples: replacing {old[:40]!r} would make the prompt longer than {MAX_PROMPT_CHARS:,} "
                          "characters (the limit).")  # fmt: skip
    return text.replace(old, new)


def _check_length(length: int, where: str) -> None:
    if length > MAX_PROMPT_CHARS:
        raise RecipeError(f"{where}: the prompt would be longer than {MAX_PROMPT_CHARS:,} characters (the limit).")


def item_values(question: QuestionView, settings: dict) -> dict:
    """The fields a template may name: the metadata's plain values, `question` (the text) and `options`."""
    values = {key: value for key, value in question.metadata.items() if isinstance(value, str | int | float)}
    values["question"] = question.text
    values["options"] = options_text(question.metadata.get("options") or {}, settings)
    return values


def item_block(question: QuestionView, settings: dict) -> str:
    """The question block (item template over the question's text, options and metadata fields)."""
    return _fill(settings.get("item_template") or "{question}", item_values(question, settings), "item_template")


def example_block(spec: dict, example: QuestionView, settings: dict) -> str:
    """One worked example: its own `template` over the example's fields, then the spec's `replace` pairs in
    order (Q-Pain's de-identification: `[race] ` -> ``, `Patient D` -> `Patient A`); without a template, the
    item block answered with a letter (BiasMedQA)."""
    if spec.get("template"):
        block = _fill(spec["template"], item_values(example, settings), "examples template")
    else:
        answer = example_answer(example, spec.get("answer", "wrong"), int(settings.get("examples_seed") or 0))
        block = item_block(example, settings) + answer
    pairs = spec.get("replace") or []
    if len(pairs) > MAX_REPLACE_PAIRS:
        raise RecipeError(f"examples: at most {MAX_REPLACE_PAIRS} replace pairs in an example, not {len(pairs)}.")
    for old, new in pairs:
        block = _replace(block, old, new)
    return block


def example_answer(example: QuestionView, kind: str, seed: int) -> str:
    """The letter a worked example is answered with: its correct letter, or a wrong one (its bias letter if it
    carries one, else a seeded draw among the other options)."""
    correct = str(example.metadata.get("answer_idx", ""))
    if kind == "correct":
        return correct
    if example.metadata.get("bias_answer_idx"):
        return str(example.metadata["bias_answer_idx"])
    wrong = sorted(letter for letter in (example.metadata.get("options") or {}) if letter != correct)
    if not wrong:
        raise RecipeError(f"example {example.key}: no wrong option to answer with")
    return random.Random(f"{seed}:{example.key}:wrong").choice(wrong)


def render_prompt(settings: dict, question: QuestionView, examples: list[QuestionView]) -> str:
    """The prompt text: instruction (+ the per-level text), worked examples, footer, question block."""
    instruction = settings.get("instruction") or ""
    factor = settings.get("level_factor") or ""
    level = question.level(factor) if factor else REFERENCE_LEVEL
    extra = (settings.get("level_texts") or {}).get(level) if factor else None
    if extra:
        instruction = f"{instruction} {extra}" if instruction else extra
    parts = [instruction] if instruction else []
    specs = settings.get("examples") or []
    if len(specs) > MAX_EXAMPLES:
        raise RecipeError(f"examples: at most {MAX_EXAMPLES} worked examples, not {len(specs)}.")
    # An example's header is keyed by the question's level of the factor the examples match (BiasMedQA's
    # one-shot recipe has no per-level instruction text, but its header names the bias or not).
    header_factor = settings.get("examples_match_factor") or factor
    header_level = question.level(header_factor) if header_factor else REFERENCE_LEVEL
    for spec, example in zip(specs, examples, strict=True):
        headers = spec.get("header") or {}
        header = headers.get(header_level, headers.get("*", ""))
        block = example_block(spec, example, settings)
        parts.append(f"{header}\n{block}" if header else block)
        _check_length(_joined_length(parts), "examples")
    if specs and settings.get("examples_footer"):
        parts.append(settings["examples_footer"])
    parts.append(item_block(question, settings))
    _check_length(_joined_length(parts), "prompt")
    return "\n\n".join(parts)


def _joined_length(parts: list[str]) -> int:
    return sum(map(len, parts)) + 2 * (len(parts) - 1)


def choose_examples(recipe: PromptRecipe, question: Question) -> list[Question]:
    """The recipe's worked examples for this question (`example_pool.draw_examples`): drawn per base question, so
    every variant of one base question gets the same example questions, from the recipe's examples part, never
    the question's own base question; refused for a question the recipe holds out as an example."""
    check_keys(recipe)  # a recipe stored before its keys were checked: they name the pool's JSON fields
    unit_id, unit_key = example_pool.question_unit(question)
    part = example_pool.examples_part(recipe)  # one read of the pool: it decides both checks below
    excluded = example_pool.never_evaluated(recipe, part)
    if excluded is not None and unit_id in excluded:
        raise RecipeError(
            f"examples: question {question.external_id} is never evaluated with this recipe: its base question "
            f"{unit_key} is one of the recipe's worked examples (pool {recipe.examples_pool}). "
            + (
                "Hold out part of the pool for examples (examples holdout) or draw them from a separate pool."
                if not recipe.examples_holdout
                else "Evaluate the pool's other questions."
            )
        )
    wanted = len(recipe.examples or [])
    if not wanted:
        return []
    if recipe.examples_pool_id is None:
        raise RecipeError("examples: the recipe names no pool to draw them from")
    factor = recipe.examples_match_factor
    try:
        chosen = example_pool.draw_examples(
            part or [],
            list(recipe.examples),
            seed=recipe.examples_seed,
            unit_key=unit_key,
            unit_id=unit_id,
            level=QuestionView.of(question).level(factor) if factor else None,
        )
    except example_pool.ExamplesError as error:
        raise RecipeError(f"examples: {error}") from None
    by_id = Question.objects.in_bulk(chosen)
    return [by_id[pk] for pk in chosen]


def request_body(settings: dict, prompt: str, *, model: str) -> dict:
    """The exact JSON body of an OpenAI-compatible chat or completions request."""
    body: dict = {"model": model}
    if settings.get("mode") == PromptRecipe.Mode.COMPLETION:
        body["prompt"] = prompt
    else:
        messages = [{"role": "system", "content": settings["system_prompt"]}] if settings.get("system_prompt") else []
        body["messages"] = [*messages, {"role": settings.get("prompt_role") or "user", "content": prompt}]
    if settings.get("temperature") is not None:  # unset: not sent, the server's default applies
        body["temperature"] = settings["temperature"]
    body["max_tokens"] = settings.get("max_tokens", 1024)
    if settings.get("stop"):
        body["stop"] = list(settings["stop"])
    if settings.get("logprobs"):
        if settings.get("mode") == PromptRecipe.Mode.COMPLETION:
            body["logprobs"] = settings.get("top_logprobs") or 1
        else:
            body["logprobs"] = True
            if settings.get("top_logprobs"):
                body["top_logprobs"] = settings["top_logprobs"]
    return body


def build_request(recipe: PromptRecipe, question: Question, *, model: str) -> Request:
    settings = recipe.settings()
    examples = choose_examples(recipe, question)
    prompt = render_prompt(settings, QuestionView.of(question), [QuestionView.of(example) for example in examples])
    return Request(
        settings["mode"], prompt, request_body(settings, prompt, model=model), tuple(e.external_id for e in examples)
    )
