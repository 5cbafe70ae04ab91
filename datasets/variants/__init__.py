"""Variant generators (DESIGN.md): seeded, versioned, idempotent rules that make variants of base questions.

A generator is pure: a base question (plain values), the seed and the checked options in, variant specs out.
`runs.py` applies one to a base dataset as a `VariantRun` (a Celery job with progress) and stores the specs.
Bump a generator's version whenever what it yields for the same input changes: the version names the
target dataset, so old variants are never silently replaced.
"""

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

# A run's seed is stored in a 32-bit column and its limit becomes a query's LIMIT: larger numbers are refused with a
# message (pages, API, check_options, start_variant_run), never left to fail in the database.
MIN_SEED, MAX_SEED = -(2**31), 2**31 - 1
MAX_LIMIT = 2**31 - 1


class VariantOptionsError(ValueError):
    """Options a generator cannot run with: the message says which and why."""


@dataclass(frozen=True)
class BaseQuestion:
    """What a generator may read of a base question."""

    external_id: str
    text: str
    metadata: dict = field(default_factory=dict)


@dataclass(frozen=True)
class VariantSpec:
    """One variant to store: keyed `{base external id}-{level}` in the target dataset."""

    external_id: str
    text: str
    levels: dict
    metadata: dict


@dataclass(frozen=True)
class Generator:
    name: str
    version: int
    factor: str
    # the factor's levels a run may ask for (the pages offer them; check_options decides)
    levels: tuple[str, ...]
    description: str
    # options as given (JSON) -> options checked and completed with defaults; raises VariantOptionsError
    check_options: Callable[[dict], dict]
    # (base question, seed, checked options) -> the variants of that base question
    variants: Callable[[BaseQuestion, int, dict], Iterator[VariantSpec]]
    # checked options -> how many variants each base question yields; None when that depends on the question
    per_base: Callable[[dict], int] | None
    # (seed, checked options) -> the target dataset's default name
    dataset_name: Callable[[int, dict], str]
    # Question filter (ORM lookups) choosing the base questions it applies to: Q-Pain's "Yes" vignettes only
    # (metadata__kind="yes"); the run's total counts only these.
    base_filter: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    # The option that takes the levels chosen on the variant pages and the API (BiasMedQA's `biases`).
    levels_option: str = "levels"
    # (a base question's metadata, checked options) -> how many variants it yields: for a generator without per_base
    # (ContextSRH: one per group of each attribute the question is marked for)
    per_question: Callable[[dict, dict], int] | None = None

    def __post_init__(self):
        if (self.per_base is None) == (self.per_question is None):
            raise TypeError(f"generator {self.name}: give either per_base or per_question")


def _registry() -> dict[str, Generator]:
    from . import biasmedqa, contextsrh, qpain

    return {generator.name: generator for generator in (biasmedqa.GENERATOR, qpain.GENERATOR, contextsrh.GENERATOR)}


GENERATORS: dict[str, Generator] = _registry()


def get_generator(name: str) -> Generator:
    try:
        return GENERATORS[name]
    except KeyError:
        raise VariantOptionsError(f"unknown generator {name!r}; known: {', '.join(sorted(GENERATORS))}") from None
