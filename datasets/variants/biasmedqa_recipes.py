"""BiasMedQA's four prompt recipes (mitigations) as data: `ensure_biasmedqa_recipes`.

The texts are `biasmedqa.py`'s, as `../shared/datasets/biasmedqa/SOURCE.md` quotes them. The instruction is
the one of the no-mitigation and education logs ("purposes"); the one-shot logs still carry the code's
"puposes" typo, which these recipes do not reproduce, so a one-shot prompt equals the logged one once that
word is fixed. SOURCE.md does not give the authors' max tokens: a reply is one letter, so 10 is plenty, and
the letter scorer reads the first character. Temperature 0.
"""

from ..models import Dataset, PromptRecipe
from . import biasmedqa

NO_MITIGATION = "BiasMedQA: no mitigation"
EDUCATION = "BiasMedQA: education"
ONE_SHOT = "BiasMedQA: one-shot"
FEW_SHOT = "BiasMedQA: few-shot"
MAX_TOKENS = 10


def recipe_fields() -> dict[str, dict]:
    """name -> the recipe's fields (besides the pool)."""
    common = {
        "mode": PromptRecipe.Mode.CHAT,
        "instruction": biasmedqa.INSTRUCTION,
        "item_template": biasmedqa.ITEM_TEMPLATE,
        "options_format": "{letter}: {text}",
        "options_separator": ", ",
        "max_tokens": MAX_TOKENS,
        "temperature": 0.0,
    }
    examples = {"examples_footer": biasmedqa.EXAMPLES_FOOTER, "examples_match_factor": biasmedqa.FACTOR}
    return {
        NO_MITIGATION: {**common, "condition": {"mitigation": "none"},
                        "description": "BiasMedQA's prompt: instruction, question, options; no mitigation."},
        EDUCATION: {**common, "condition": {"mitigation": "education"}, "level_factor": biasmedqa.FACTOR,
                    "level_texts": dict(biasmedqa.EDUCATION),
                    "description": "The instruction followed by the bias's education sentence."},
        ONE_SHOT: {**common, **examples, "condition": {"mitigation": "one-shot"},
                   "examples": biasmedqa.ONE_SHOT_EXAMPLES,
                   "description": "One example with the same bias, answered with its bias letter, before the "
                   "question."},
        FEW_SHOT: {**common, **examples, "condition": {"mitigation": "few-shot"},
                   "examples": biasmedqa.FEW_SHOT_EXAMPLES,
                   "description": "Two examples with the same bias: one answered with its bias letter, one "
                   "correctly."},
    }  # fmt: skip


def ensure_biasmedqa_recipes(*, pool: Dataset | None = None) -> list[PromptRecipe]:
    """The four recipes, created once by name (a recipe already there is left as it is, so answers made with
    it keep their settings); one-shot and few-shot draw their examples from `pool`, set on a recipe that has
    none yet."""
    recipes = []
    for name, fields in recipe_fields().items():
        examples = bool(fields.get("examples"))
        defaults = {**fields, "examples_pool": pool if examples else None}
        recipe, created = PromptRecipe.objects.get_or_create(name=name, defaults=defaults)
        if not created and examples and pool is not None and recipe.examples_pool_id is None:
            recipe.examples_pool = pool
            recipe.save(update_fields=["examples_pool", "updated_at"])
        recipes.append(recipe)
    return recipes
