"""Worked examples (DESIGN.md, "Worked examples"): which base questions of a recipe's pool it may show, which
it shows for a question, and which questions it therefore never evaluates.

A pool's *unit* is a base question: a pool question stands for its base question (a variant) or for itself.
- The draw is per **base question**: every variant of one base question (its levels of the factors compared)
  gets the same example units, so the examples never vary with the levels a study compares. Only the member
  of each unit that is shown follows the question's level of the recipe's match factor (BiasMedQA: the
  example's bias text), and at the reference level a unit without such a member shows its base question.
- The **examples part** is the pool's units held out by the recipe (`examples_holdout`: a unit is held out
  when its seeded hash falls below the share, so a unit's part never changes as the pool grows), or the whole
  pool. A question whose unit is in the examples part is never evaluated with the recipe, unless the recipe
  allows examples from evaluated questions (Q-Pain's closed prompt), which still never shows the question's
  own unit.

`draw_examples` and `held_out` are pure (plain values); `pool_units` reads the pool from the database once per
process and pool state.
"""

import hashlib
from dataclasses import dataclass, field
from functools import lru_cache

from django.db.models import Count, Max
from django.db.models.fields.json import KeyTextTransform, KeyTransform

from .factors import REFERENCE_LEVEL
from .models import PromptRecipe, Question


class ExamplesError(ValueError):
    """The pool cannot give the examples asked for; the message says which and why."""


@dataclass(frozen=True)
class Member:
    """A pool question (or, at the reference level, a unit's base question) as the draw sees it."""

    id: int
    level: str  # its level of the match factor; REFERENCE_LEVEL when it lacks the factor
    metadata: dict = field(default_factory=dict)  # only the keys the specs' `where` read


@dataclass(frozen=True)
class Unit:
    id: int  # the base question's id
    key: str  # its external id: seeds the draw and the held-out part, stable across databases
    members: tuple[Member, ...]
    base: Member | None = None  # the base question itself, when it is not in the pool


def _hash(*parts: object) -> int:
    text = ":".join(str(part) for part in parts)
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def is_held_out(seed: int, unit_key: str, share: float) -> bool:
    """Whether a unit is in the recipe's held-out part: its seeded hash, as a fraction of 2^64, is below the
    share. Depends on nothing but the seed, the unit and the share."""
    return share > 0 and _hash(seed, "holdout", unit_key) < share * 2**64


def held_out(units: list[Unit], *, seed: int, share: float) -> list[Unit]:
    """The examples part: the held-out units, or every unit when nothing is held out (share 0)."""
    if share <= 0:
        return list(units)
    return [unit for unit in units if is_held_out(seed, unit.key, share)]


def member_at(unit: Unit, level: str | None, where: dict) -> Member | None:
    """The unit's member at this level of the match factor (any level when there is no match factor) whose
    metadata has every `where` value; at the reference level, the base question when no member is."""
    candidates = [m for m in unit.members if level is None or m.level == level]
    if level == REFERENCE_LEVEL and not candidates and unit.base is not None:
        candidates = [unit.base]
    for member in sorted(candidates, key=lambda m: m.id):
        if all(member.metadata.get(key) == value for key, value in where.items()):
            return member
    return None


def draw_examples(
    units: list[Unit], specs: list[dict], *, seed: int, unit_key: str, unit_id: int, level: str | None
) -> list[int]:
    """One pool question id per spec, for a question of unit (`unit_id`, `unit_key`) at `level`.

    For spec i, the units are put in a seeded order, sha256(seed, the question's unit key, i, the unit's key),
    and the first unit is taken that is not the question's own, not taken by an earlier spec, and has a member
    at the level matching the spec's `where`. The order does not depend on the level, so the variants of one
    base question get the same units whenever those units have members at their levels.
    """
    chosen: list[int] = []
    taken: set[int] = {unit_id}
    for position, spec in enumerate(specs):
        where = spec.get("where") or {}
        ordered = sorted(units, key=lambda unit: (_hash(seed, unit_key, position, unit.key), unit.id))
        for unit in ordered:
            if unit.id in taken:
                continue
            member = member_at(unit, level, where)
            if member is not None:
                chosen.append(member.id)
                taken.add(unit.id)
                break
        else:
            wanted = ", ".join(f"{key}={value}" for key, value in where.items())
            at = f" at level {level}" if level is not None else ""
            raise ExamplesError(
                f"the pool has no question for example {position + 1}{at}{f' ({wanted})' if wanted else ''} "
                f"outside the question's own base question and the other examples ({len(units)} base questions "
                "to draw from)"
            )
    return chosen


# --- The pool in the database -------------------------------------------------------------------------------


def where_keys(specs: list[dict]) -> tuple[str, ...]:
    return tuple(sorted({key for spec in specs if isinstance(spec, dict) for key in (spec.get("where") or {})}))


def pool_units(recipe: PromptRecipe) -> list[Unit]:
    """The recipe's pool as units (every base question with its pool members), read once per pool state."""
    if recipe.examples_pool_id is None:
        return []
    state = Question.objects.filter(dataset_id=recipe.examples_pool_id).aggregate(
        n=Count("id"), last=Max("id"), newest=Max("created_at")
    )
    return list(
        _read_units(
            recipe.examples_pool_id,
            recipe.examples_match_factor,
            where_keys(recipe.examples or []),
            (state["n"], state["last"], state["newest"]),
        )
    )


@lru_cache(maxsize=8)
def _read_units(pool_id: int, factor: str, keys: tuple[str, ...], state: tuple) -> tuple[Unit, ...]:
    """Units of a pool; `state` (count, last id, newest creation time) names the pool's contents, so a pool that
    gained or lost questions is read anew (questions are never changed in place: a stored variant that differs is
    refused, not overwritten; SQLite may give a new question a deleted one's id, not its creation time)."""
    extract = {f"where_{index}": KeyTransform(key, "metadata") for index, key in enumerate(keys)}
    if factor:
        extract["level"] = KeyTextTransform(factor, "levels")
    rows = (
        Question.objects.filter(dataset_id=pool_id)
        .order_by("id")
        .annotate(**extract)
        .values("id", "base_id", "external_id", "base__external_id", *extract)
    )
    members: dict[int, list[Member]] = {}
    unit_keys: dict[int, str] = {}
    for row in rows.iterator(chunk_size=5000):
        unit_id = row["base_id"] or row["id"]
        unit_keys[unit_id] = row["base__external_id"] if row["base_id"] else row["external_id"]
        members.setdefault(unit_id, []).append(_member(row, keys, factor))
    in_pool = {member.id for unit in members.values() for member in unit}
    bases = {}
    if factor:
        outside = [unit_id for unit_id in members if unit_id not in in_pool]
        for start in range(0, len(outside), 5000):
            base_rows = (
                Question.objects.filter(id__in=outside[start : start + 5000]).annotate(**extract).values("id", *extract)
            )
            bases.update({row["id"]: _member(row, keys, factor) for row in base_rows})
    return tuple(
        Unit(unit_id, unit_keys[unit_id], tuple(found), bases.get(unit_id)) for unit_id, found in members.items()
    )


def _member(row: dict, keys: tuple[str, ...], factor: str) -> Member:
    level = row.get("level") if factor else None
    return Member(
        id=row["id"],
        level=REFERENCE_LEVEL if level is None else str(level),
        metadata={key: row[f"where_{index}"] for index, key in enumerate(keys)},
    )


def question_unit(question: Question) -> tuple[int, str]:
    """(id, external id) of the question's base question, or of the question itself."""
    if question.base_id is None:
        return question.pk, question.external_id
    return question.base_id, question.base.external_id


def examples_part(recipe: PromptRecipe) -> list[Unit] | None:
    """The units the recipe shows as examples; None when it has no pool."""
    if recipe.examples_pool_id is None:
        return None
    return held_out(pool_units(recipe), seed=recipe.examples_seed, share=recipe.examples_holdout)


def never_evaluated(recipe: PromptRecipe, part: list[Unit] | None = None) -> set[int] | None:
    """Ids of the base questions whose questions the recipe never evaluates (its examples part, read here
    unless given), or None when it evaluates any question (no pool, or examples may come from evaluated
    questions)."""
    part = examples_part(recipe) if part is None else part
    if part is None or recipe.examples_from_evaluated:
        return None
    return {unit.id for unit in part}
