"""Factors and levels: the one home of what they are (DESIGN.md, "factor levels").

A *factor* is a named way the questions or the conditions of a study vary: `bias`, `race`, `gender`,
`mitigation`, `context`. A *level* is one value of a factor: `recency`, `Black`, `woman`, `education`. A question
carries its levels as `Question.levels` (`{"bias": "recency"}`), a condition as its recipe's `condition`
(`{"mitigation": "education"}`). A question or a condition without a factor is at that factor's reference level,
`REFERENCE_LEVEL` (`none`: the base question as it is, no mitigation), which comparisons are made against.
Several factors may be compared as one *crossed* factor (Q-Pain's `race x gender`), whose level joins theirs
(`Black woman`).

Factor names (and metadata field names) end up in queries after `levels__` or `metadata__`, where Django reads
`__` as the start of a lookup (`bias__regex`): they must be plain keys (`plain_key`).

Pure: no Django, no other app of ours, so every app may import it.
"""

import re
from collections.abc import Iterable, Mapping

REFERENCE_LEVEL = "none"
CROSSED_FACTOR_JOIN = " x "  # ("race", "gender") -> the factor "race x gender"
CROSSED_LEVEL_JOIN = " "  # ("Black", "woman") -> its level "Black woman"

KEY = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
MAX_KEY_CHARS = 100
KEY_RULE = f"letters, digits, _ and -, starting with a letter, without __, at most {MAX_KEY_CHARS} characters"
MAX_FACTORS = 20  # factors of a levels filter, keys of an example's `where`
MAX_LEVEL_CHARS = 200


def level_of(levels: Mapping[str, object], factor: str) -> str:
    """The level of `factor` in `levels` ({factor: level}), the reference level when the factor is absent."""
    return str(levels.get(factor, REFERENCE_LEVEL))


def crossed_factor(factors: Iterable[str]) -> str:
    """The name of factors compared as one: ("race", "gender") -> "race x gender"."""
    return CROSSED_FACTOR_JOIN.join(factors)


def crossed_level(levels: Iterable[str]) -> str:
    """The level of a crossed factor: ("Black", "woman") -> "Black woman"."""
    return CROSSED_LEVEL_JOIN.join(levels)


def plain_key(name: object) -> bool:
    """Whether `name` may be a factor's or a metadata field's name in a query (see KEY_RULE)."""
    return isinstance(name, str) and len(name) <= MAX_KEY_CHARS and "__" not in name and bool(KEY.fullmatch(name))


def levels_problem(levels: object) -> str | None:
    """Why a levels filter ({factor: level}, a job's or a request's) cannot be used, or None."""
    if not isinstance(levels, dict) or not all(isinstance(level, str) for level in levels.values()):
        return 'Levels name a factor and a level, e.g. {"bias": "recency"}.'
    if len(levels) > MAX_FACTORS:
        return f"At most {MAX_FACTORS} factors, not {len(levels)}."
    for factor, level in levels.items():
        if not plain_key(factor):
            return f"{str(factor)[:MAX_KEY_CHARS]!r} is not a factor name ({KEY_RULE})."
        if not level or len(level) > MAX_LEVEL_CHARS:
            return f"The level of {factor} is 1 to {MAX_LEVEL_CHARS} characters."
    return None
