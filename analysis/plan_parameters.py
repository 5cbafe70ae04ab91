"""A study's analysis plans: the plans its definition names, with the parameters it gives them, checked and applied.

`Study.definition["plans"]` is a list of `{plan: NAME, params: {...}}` (DESIGN.md, "Plans per study"). A parameter
overrides what the named plan fixes:
- a plan comparing a factor's levels (`AnalysisPlan.comparison`, Q-Pain's): `compare` (the factors crossed into
  one level), `block` (the pairing unit), `strata`, `level_order` and, for the paired tests, `correction`
  (`paired.CORRECTIONS`);
- a plan with reference levels (BiasMedQA's accuracy): `reference_levels`, e.g. `{bias: none}`;
- a plan over judge ratings (MEDIC's): `factors`, the factors whose levels it describes and compares;
- a plan with options of its own (`AnalysisPlan.options`, ContextSRH's): those, each checked by `OPTION_CHECKS`
  (`scorer`: a scorer's name; `k`: a positive whole number of votes, or null for a majority).
Any other parameter, or a value of the wrong shape, is refused with its place in the list and what the plan takes.
Pure: no Django.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType

from .paired import CORRECTIONS
from .plans import PLANS, AnalysisPlan

COMPARISON_PARAMETERS = ("compare", "block", "strata", "level_order", "correction")
REFERENCE_PARAMETERS = ("reference_levels",)
JUDGE_PLAN_PARAMETERS = ("factors",)  # a plan over judge ratings (MEDIC's): the factors whose levels it compares
# A factor name is a key of a question's levels, read in a database query: a plain key only.
FACTOR_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,99}")
MAX_LEVEL_CHARS = 200
SCORER_NAME = re.compile(r"[a-z][a-z0-9_]{0,99}")


class PlanParameterError(ValueError):
    """What is wrong with a study's plans, every problem with its place (`plans[1].params.block: ...`)."""

    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = problems


def _scorer(value: object, where: str) -> str:
    if not isinstance(value, str) or not SCORER_NAME.fullmatch(value):
        raise PlanParameterError([f"{where}: {value!r} is not a scorer's name, e.g. minilm_cosine"])
    return value


def _votes(value: object, where: str) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise PlanParameterError([f"{where}: expected a whole number of votes of at least 1, or null (a majority)"])
    return value


# An option's check: (value, where) -> the value to use, or PlanParameterError.
OPTION_CHECKS = MappingProxyType({"scorer": _scorer, "k": _votes})


def parameters_of(plan: AnalysisPlan) -> tuple[str, ...]:
    """The parameters a study may give the plan."""
    if plan.options:
        return tuple(plan.options)
    if plan.reads_judges:
        return JUDGE_PLAN_PARAMETERS
    if plan.comparison is not None:
        # Group means correct nothing: a correction there would be silently ignored, so it is refused.
        return tuple(name for name in COMPARISON_PARAMETERS if name != "correction" or plan.correction is not None)
    return REFERENCE_PARAMETERS if plan.reference_levels else ()


def _factor(value: object, where: str) -> str:
    if not isinstance(value, str) or not FACTOR_NAME.fullmatch(value) or "__" in value:
        raise PlanParameterError([f"{where}: {value!r} is not a factor name (a letter, then letters, digits, _ or -)"])
    return value


def _factors(value: object, where: str, *, required: bool) -> tuple[str, ...]:
    if not isinstance(value, list | tuple) or (required and not value):
        shape = "a list of one or more factor names" if required else "a list of factor names"
        raise PlanParameterError([f"{where}: expected {shape}, e.g. [race, gender]"])
    names = tuple(_factor(item, f"{where}[{index}]") for index, item in enumerate(value))
    if len(set(names)) != len(names):
        raise PlanParameterError([f"{where}: a factor is named twice"])
    return names


def _levels(value: object, where: str) -> tuple[str, ...]:
    if not isinstance(value, list | tuple) or not all(
        isinstance(level, str) and 0 < len(level) <= MAX_LEVEL_CHARS for level in value
    ):
        raise PlanParameterError([f"{where}: expected a list of levels (texts), e.g. [Black woman, White man]"])
    return tuple(value)


def _correction(value: object, where: str) -> str:
    if value not in CORRECTIONS:
        raise PlanParameterError([f"{where}: {value!r} is not a correction; choose {', '.join(CORRECTIONS)}"])
    return str(value)


def _reference_levels(plan: AnalysisPlan, value: object, where: str) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise PlanParameterError([f"{where}: expected factor: level pairs, e.g. {{bias: none}}"])
    chosen: dict[str, str] = {}
    for factor, level in value.items():
        if factor not in plan.reference_levels:
            known = ", ".join(plan.reference_levels)
            raise PlanParameterError([f"{where}.{factor}: {plan.name} has no such factor; its factors: {known}"])
        if not isinstance(level, str) or not 0 < len(level) <= MAX_LEVEL_CHARS:
            raise PlanParameterError([f"{where}.{factor}: the reference level must be a text, e.g. none"])
        chosen[str(factor)] = level
    return chosen


def configure(plan: AnalysisPlan, params: object, where: str = "params") -> AnalysisPlan:
    """The plan with a study's parameters; PlanParameterError for an unknown parameter or a bad value."""
    if not isinstance(params, Mapping):
        raise PlanParameterError([f"{where}: expected name: value pairs"])
    known = parameters_of(plan)
    unknown = sorted(str(name) for name in params if name not in known)
    if unknown:
        takes = f"its parameters are {', '.join(known)}" if known else "it takes no parameters"
        raise PlanParameterError([f"{where}: {plan.name} has no parameter {', '.join(unknown)}; {takes}"])
    if not params:
        return plan
    if plan.options:
        chosen = {str(name): OPTION_CHECKS[str(name)](value, f"{where}.{name}") for name, value in params.items()}
        options = {**plan.options, **chosen}
        scorers = (str(options["scorer"]),) if "scorer" in options else plan.scorers
        return replace(plan, options=MappingProxyType(options), scorers=scorers)
    if plan.reads_judges:
        return replace(plan, factors=_factors(params["factors"], f"{where}.factors", required=True))
    if plan.comparison is None:
        levels = _reference_levels(plan, params["reference_levels"], f"{where}.reference_levels")
        return replace(plan, reference_levels=MappingProxyType({**plan.reference_levels, **levels}))
    assert plan.statistic_of is not None, f"{plan.name} compares levels but cannot remake its statistic"
    given = plan.comparison
    comparison = replace(
        given,
        compare=_factors(params.get("compare", given.compare), f"{where}.compare", required=True),
        block=_factor(params.get("block", given.block), f"{where}.block"),
        strata=_factors(params.get("strata", given.strata), f"{where}.strata", required=False),
        level_order=_levels(params.get("level_order", given.level_order), f"{where}.level_order"),
        correction=_correction(params.get("correction", given.correction), f"{where}.correction"),
    )
    roles = [*comparison.compare, comparison.block, *comparison.strata]
    if len(set(roles)) != len(roles):
        raise PlanParameterError([f"{where}: a factor is compared, the block or a stratum, never two of these"])
    return replace(
        plan,
        comparison=comparison,
        statistic=plan.statistic_of(comparison),
        factors=("source", *comparison.compare, *comparison.strata, comparison.block),
        requires_levels=(*comparison.compare, comparison.block),
        correction=comparison.correction if plan.correction is not None else None,
    )


def study_plans(entries: object, known: Mapping[str, AnalysisPlan] = PLANS) -> list[AnalysisPlan]:
    """The plans of a study's definition (`[{plan, params}]`, none when absent), configured, in their order;
    PlanParameterError with every problem. Each table is written once, so two plans writing one file are refused."""
    if entries is None:
        return []
    if not isinstance(entries, list):
        raise PlanParameterError(["plans: expected a list of {plan: NAME, params: {...}}"])
    plans: list[AnalysisPlan] = []
    problems: list[str] = []
    tables: dict[str, int] = {}
    for index, entry in enumerate(entries):
        where = f"plans[{index}]"
        if not isinstance(entry, Mapping) or set(entry) - {"plan", "params"} or "plan" not in entry:
            problems.append(f"{where}: expected {{plan: NAME, params: {{...}}}} (params optional)")
            continue
        plan = known.get(entry["plan"]) if isinstance(entry["plan"], str) else None
        if plan is None:
            problems.append(f"{where}.plan: no plan named {entry['plan']!r}; the plans: {', '.join(known)}")
            continue
        try:
            plans.append(configure(plan, entry.get("params") or {}, f"{where}.params"))
        except PlanParameterError as error:
            problems.extend(error.problems)
        if plan.table in tables:
            problems.append(f"{where}: {plan.name} writes {plan.table}, as plans[{tables[plan.table]}] does")
        tables.setdefault(plan.table, index)
    if problems:
        raise PlanParameterError(problems)
    return plans
