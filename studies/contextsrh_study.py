"""ContextSRH as a study file (issue 21; DESIGN.md, "ContextSRH"): one function writes the design, so the committed
`studies/definitions/contextsrh.yaml` and the demo's small ContextSRH study are the same design at two sizes.

The study: the original questions and their context variants (the `contextsrh` generator: one per group of each
attribute a question depends on), answered by every answering source under one recipe (the question alone, at
temperature 0), so an original answer and its context answers differ only by the context sentence; the
`minilm_cosine` scorer compares each context answer with its source's original answer; people rate the original
answers under "ContextSRH: correct for which groups" (`replication` raters of each pool per answer); the
`contextsrh` plan writes Table 1 (similarity, % Win, % Human) and the group tests.
"""

from typing import Any

from datasets.variants import get_generator
from datasets.variants.contextsrh_recipes import RECIPE

from . import contextsrh
from .study_schema import complete
from .study_yaml import dump_yaml

GENERATOR = "contextsrh"
SCORER = {"name": "minilm_cosine", "version": 1}


def variants_dataset(
    *, attributes: list[str] | None = None, seed: int = 0, name: str | None = None
) -> tuple[str, dict[str, Any]]:
    """The variant run's dataset name (the generator's default unless `name`) and its checked options."""
    generator = get_generator(GENERATOR)
    wanted: dict[str, Any] = {"attributes": attributes} if attributes else {}
    if name:
        wanted["dataset"] = name
    options = generator.check_options(wanted)
    return generator.dataset_name(seed, options), options


def contextsrh_definition(
    *,
    name: str,
    description: str,
    originals: str,
    answerers: list[str],
    pools: dict[str, int],
    attributes: list[str] | None = None,
    k: int | None = None,
    seed: int = 0,
    variants: str | None = None,
) -> dict[str, Any]:
    """The study file's definition (complete, in the schema's order). `originals`: the dataset of original questions
    (import_contextsrh's, or a part of it); `variants`: the context variants' dataset (default: the generator's
    name); `pools`: {pool name: raters per answer}; `k`: the votes a group needs to count as correct for an answer
    (None: a majority of the raters counted)."""
    generator = get_generator(GENERATOR)
    variants, options = variants_dataset(attributes=attributes, seed=seed, name=variants)
    definition = {
        "format": 1,
        "name": name,
        "description": description,
        "questions": [
            {"dataset": originals},
            {
                "dataset": variants,
                "variant_run": {
                    "generator": GENERATOR,
                    "version": generator.version,
                    "seed": seed,
                    "base_dataset": originals,
                    "options": options,
                },
            },  # fmt: skip
        ],
        "conditions": [{"source": source, "recipe": RECIPE} for source in answerers],
        "scorers": [SCORER],
        "rubric": {"name": contextsrh.RUBRIC_NAME, "version": 1},
        "pools": [{"pool": pool, "replication": replication} for pool, replication in pools.items()],
        "plans": [{"plan": "contextsrh", "params": {"scorer": SCORER["name"], "k": k}}],
    }  # the rubric's own "How to answer" notes carry the paper's instructions: the study adds none
    return complete(definition)


def contextsrh_file(**options: Any) -> str:
    return dump_yaml(contextsrh_definition(**options))
