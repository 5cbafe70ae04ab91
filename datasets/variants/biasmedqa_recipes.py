"""BiasMedQA's prompt recipes (mitigations) as data, in two sets: `ensure_biasmedqa_recipes`.

The texts are `biasmedqa.py`'s, as `../shared/datasets/biasmedqa/SOURCE.md` quotes them. The instruction is
the one of the no-mitigation and education logs ("purposes"); the one-shot logs still carry the code's
"puposes" typo, which these recipes do not reproduce, so a one-shot prompt equals the logged one once that
word is fixed.

- **Recommended** ("BiasMedQA: ..."): the prompt as the user message, temperature 0 (the same prompt gets the
  same reply, so a difference between biases is not sampling noise) and 512 tokens, so a verbose model that
  explains before or after its letter is not cut off before it names one (`letter` v2 reads it there).
- **As published** ("BiasMedQA as published: ..."): the authors' code sent OpenAI models the prompt as the
  system message with max_tokens 2048 and no temperature (the API's default, 1: sampled). Their Llama and
  Mixtral runs generated 40 new tokens; copy a recipe and set 40 to mimic those.

When given a pool (the variants of the study), every recipe holds out the same seeded share of its base
questions (`HOLDOUT`): the one- and few-shot examples are drawn from that part only, and no recipe of either
set evaluates it, so every condition is asked the same questions and no example is a question under test.
"""

from ..factors import REFERENCE_LEVEL
from ..models import Dataset, PromptRecipe
from . import biasmedqa

NO_MITIGATION = "BiasMedQA: no mitigation"
EDUCATION = "BiasMedQA: education"
ONE_SHOT = "BiasMedQA: one-shot"
FEW_SHOT = "BiasMedQA: few-shot"
PUBLISHED = "BiasMedQA as published: "
MAX_TOKENS = 512
PUBLISHED_MAX_TOKENS = 2048
# The share of the pool's base questions held out as worked examples (59 of MedQA's 1,273 test questions at seed 0).
HOLDOUT = 0.05
HOLDOUT_SEED = 0


def _mitigations() -> dict[str, dict]:
    """mitigation name (after "BiasMedQA: ") -> the fields that make that mitigation."""
    examples = {"examples_footer": biasmedqa.EXAMPLES_FOOTER, "examples_match_factor": biasmedqa.FACTOR}
    return {
        "no mitigation": {"condition": {"mitigation": REFERENCE_LEVEL},
                          "description": "BiasMedQA's prompt: instruction, question, options; no mitigation."},
        "education": {"condition": {"mitigation": "education"}, "level_factor": biasmedqa.FACTOR,
                      "level_texts": dict(biasmedqa.EDUCATION),
                      "description": "The instruction followed by the bias's education sentence."},
        "one-shot": {**examples, "condition": {"mitigation": "one-shot"}, "examples": biasmedqa.ONE_SHOT_EXAMPLES,
                     "description": "One example with the same bias, answered with its bias letter, before the "
                     "question."},
        "few-shot": {**examples, "condition": {"mitigation": "few-shot"}, "examples": biasmedqa.FEW_SHOT_EXAMPLES,
                     "description": "Two examples with the same bias: one answered with its bias letter, one "
                     "correctly."},
    }  # fmt: skip


def recipe_fields() -> dict[str, dict]:
    """name -> the recipe's fields (besides the pool)."""
    common = {
        "mode": PromptRecipe.Mode.CHAT,
        "system_prompt": "",
        "instruction": biasmedqa.INSTRUCTION,
        "item_template": biasmedqa.ITEM_TEMPLATE,
        "options_format": "{letter}: {text}",
        "options_separator": ", ",
        "level_factor": "",
        "level_texts": {},
        "examples": [],
        "examples_match_factor": "",
        "examples_footer": "",
        "examples_seed": HOLDOUT_SEED,
        "stop": [],
        "logprobs": False,
        "top_logprobs": None,
    }
    recommended = {"prompt_role": PromptRecipe.PromptRole.USER, "max_tokens": MAX_TOKENS, "temperature": 0.0}
    published = {
        "prompt_role": PromptRecipe.PromptRole.SYSTEM, "max_tokens": PUBLISHED_MAX_TOKENS, "temperature": None,
    }  # fmt: skip
    fields = {}
    for mitigation, own in _mitigations().items():
        fields[f"BiasMedQA: {mitigation}"] = {
            **common, **recommended, **own,
            "description": f"{own['description']} Recommended: the prompt as the user message, temperature 0, "
            f"{MAX_TOKENS} tokens.",
        }  # fmt: skip
        fields[f"{PUBLISHED}{mitigation}"] = {
            **common, **published, **own,
            "description": f"{own['description']} As the authors sent it to OpenAI models: the prompt as the "
            f"system message, no temperature (the API's default), {PUBLISHED_MAX_TOKENS} tokens.",
        }  # fmt: skip
    return fields


def ensure_biasmedqa_recipes(*, pool: Dataset | None = None, holdout: float = HOLDOUT) -> list[PromptRecipe]:
    """The eight recipes (recommended and as published, per mitigation), created by name or brought back to
    these settings (only fields that differ are saved, so a recipe as defined is left untouched and its jobs
    keep running). With a pool (the study's variants) and a holdout, every recipe draws its examples from, and
    never evaluates, the same held-out share of it; with a separate pool (`holdout=0`, e.g. variants of MedQA's
    training split), only the one- and few-shot recipes name it. Without a pool, a recipe keeps the one it has."""
    recipes = []
    for name, fields in recipe_fields().items():
        wanted = dict(fields)
        if pool is not None and (holdout > 0 or fields["examples"]):
            wanted |= {"examples_pool": pool, "examples_holdout": holdout}
        recipes.append(PromptRecipe.objects.ensure(name, wanted))
    return recipes
