"""ContextSRH's prompt as a recipe: `ensure_contextsrh_recipe`.

The paper (seed 004, section 3 and Appendix A) sends the question alone, as a user's chat message, with or
without the appended context sentence, at temperature 0; no instruction, no system prompt, no examples. One
recipe serves both the original questions and their context variants, so the requests differ only by the
context sentence, and the answers share a settings hash (the scorer's reference rule pairs an answer with its
source's answer to the original under the same settings).
"""

from ..models import PromptRecipe

RECIPE = "ContextSRH: the question as asked (temperature 0)"
MAX_TOKENS = 1024  # the paper's answers run to "at least one paragraph"; long enough not to cut them off


def recipe_fields() -> dict:
    return {
        "description": "ContextSRH's prompt: the question (with or without its context sentence) as the user's "
        "only message; no instruction or examples; temperature 0 as in the paper.",
        "mode": PromptRecipe.Mode.CHAT,
        "system_prompt": "",
        "instruction": "",
        "item_template": "{question}",
        "examples": [],
        "stop": [],
        "logprobs": False,
        "top_logprobs": None,
        "max_tokens": MAX_TOKENS,
        "temperature": 0.0,
    }


def ensure_contextsrh_recipe() -> PromptRecipe:
    """The recipe, created by name or brought back to these settings (only fields that differ are saved)."""
    return PromptRecipe.objects.ensure(RECIPE, recipe_fields())
