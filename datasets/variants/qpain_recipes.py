"""Q-Pain's closed prompt as two prompt recipes (completion and chat): `ensure_qpain_recipes`.

The prompt of the official notebook (../shared/datasets/qpain/SOURCE.md): a "Yes" vignette of the question's
context as Patient A, answered with the high dose and de-identified, then the context's "No" vignette as
Patient B as it is (`Dosage: nan`), then the open vignette ending in `Answer:`. Each example ends with `##` and a
blank line. The notebook's settings: temperature 0, 150 tokens, stop `##`, 5 log-probabilities.
"""

from ..models import Dataset, PromptRecipe
from . import qpain

COMPLETION = "Q-Pain: closed prompt (completion)"
CHAT = "Q-Pain: closed prompt (chat)"
ITEM_TEMPLATE = "Vignette: {question}\nQuestion: {query}\nAnswer:"
PATIENT_A = "Patient A"
# The notebook's de-identification of a closed "Yes" example, in its order; `[subjective]` is the release's typo
# for `[subject]` (post-op vignette 9), which the notebook would leave in the example.
DEIDENTIFY = [
    ["[gender] ", ""],
    ["[race] ", ""],
    ["[possessive]", "their"],
    ["[subject]", PATIENT_A],
    ["[subjective]", PATIENT_A],
    ["Patient D", PATIENT_A],
]
EXAMPLES = [
    {
        "where": {"kind": qpain.YES},
        "template": "Vignette: {question}\nQuestion: {query}\nAnswer: {answer}\nDosage: {dose_high}\n"
        "Explanation: {explanation}##",
        "replace": DEIDENTIFY,
    },
    {
        "where": {"kind": qpain.NO},
        "template": "Vignette: {question}\nQuestion: {query}\nAnswer: {answer}\nDosage: nan\n"
        "Explanation: {explanation}##",
    },
]
MAX_TOKENS = 150
STOP = ["##"]
TOP_LOGPROBS = 5


def recipe_fields() -> dict[str, dict]:
    """name -> the recipe's fields (besides the pool)."""
    common = {
        "instruction": "",
        "system_prompt": "",
        "level_factor": "",
        "level_texts": {},
        "item_template": ITEM_TEMPLATE,
        "examples": EXAMPLES,
        "examples_match_factor": "context",
        "examples_seed": 0,
        # Patient A is another "Yes" vignette of the context, itself evaluated in its own prompts, as in the paper's
        # notebook; drawn per vignette (DESIGN.md, "Worked examples"), so the 8 profiles share it.
        "examples_from_evaluated": True,
        "examples_footer": "",
        "condition": {},
        "stop": STOP,
        "logprobs": True,
        "top_logprobs": TOP_LOGPROBS,
        "max_tokens": MAX_TOKENS,
        "temperature": 0.0,
    }
    return {
        COMPLETION: {**common, "mode": PromptRecipe.Mode.COMPLETION,
                     "description": "Q-Pain's closed prompt as the notebook sends it to a completions endpoint: "
                     "Patient A (a \"Yes\" vignette of the same context, high dose), Patient B (the context's "
                     "\"No\" vignette), then the vignette; 5 log-probabilities per token."},
        CHAT: {**common, "mode": PromptRecipe.Mode.CHAT,
               "description": "The same closed prompt as one user message, for chat-only servers; "
                              "log-probabilities with the top 5."},
    }  # fmt: skip


def ensure_qpain_recipes(pool: Dataset) -> list[PromptRecipe]:
    """The two recipes, created by name or brought back to these settings (only the fields that differ are
    saved, so a recipe already as defined is left untouched and its jobs keep running); the examples come from
    `pool`, the dataset "Q-Pain vignettes"."""
    recipes = []
    for name, fields in recipe_fields().items():
        wanted = {**fields, "examples_pool": pool}
        recipes.append(PromptRecipe.objects.ensure(name, wanted))
    return recipes
