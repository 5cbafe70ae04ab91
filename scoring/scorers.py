"""Scorers: versioned deterministic readings of one answer (scoring/DESIGN.md). Pure: no Django here.

A scorer reads an answer's text (and whether it was a refusal) against the fields of its question it names
in `question_fields`, and returns a `Reading`. Versions are append-only: a changed rule is a new version
registered beside the old one, so scores stored under the old version still mean what they said.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

CORRECT = "correct"
WRONG = "wrong"
NON_RESPONSE = "non_response"
OUTCOMES = (CORRECT, WRONG, NON_RESPONSE)
# Numeric scorers (Q-Pain's P(No)): a number was read, or what the scorer reads is absent.
MEASURED = "measured"
MISSING = "missing"
NUMERIC_OUTCOMES = (MEASURED, MISSING)

# Scores imported with a release (its own labels) are stored under this name; never computed here.
RELEASED = "released"


@dataclass(frozen=True)
class Reading:
    outcome: str
    value: dict[str, Any] = field(default_factory=dict)
    number: float | None = None  # a numeric scorer's reading (outcome MEASURED); None otherwise


@dataclass(frozen=True)
class Scorer:
    name: str
    version: int
    description: str
    # Keys of the question's metadata the scorer needs; an answer whose question lacks one is not scored.
    question_fields: tuple[str, ...]
    # read(text, refusal, fields): `fields` holds the question_fields of the question's metadata and the
    # response_fields of the answer's response_metadata (e.g. `logprobs`), each under its own name.
    read: Callable[[str, bool, Mapping[str, Any]], Reading]
    # Keys of the answer's response_metadata the scorer reads; a missing one arrives as None (never skipped).
    response_fields: tuple[str, ...] = ()


LETTERS = frozenset("ABCDE")
NO_ANSWER_MARKER = "NR"  # BiasMedQA's logs write NR where the API returned no answer (paper, Appendix C)


def read_letter_v1(text: str, refusal: bool, question: Mapping[str, Any]) -> Reading:
    """BiasMedQA's rule: the first character of the stripped reply is the chosen letter when it is A-E.

    The reply `NR`, an empty reply, a refusal, or a reply that starts with anything else is a non-response.
    """
    reply = text.strip()
    if refusal or not reply or reply == NO_ANSWER_MARKER or reply[0] not in LETTERS:
        return Reading(NON_RESPONSE, {"letter": None})
    letter = reply[0]
    return Reading(CORRECT if letter == question["answer_idx"] else WRONG, {"letter": letter})


LETTER_V1 = Scorer(
    name="letter",
    version=1,
    description="First character of the stripped reply, A-E; NR, empty, a refusal or no letter: non-response.",
    question_fields=("answer_idx",),
    read=read_letter_v1,
)

# (name, version) -> scorer. Append only: never change a registered version's rule.
SCORERS: dict[tuple[str, int], Scorer] = {(LETTER_V1.name, LETTER_V1.version): LETTER_V1}


def current(name: str) -> Scorer:
    """The newest registered version of a scorer."""
    versions = [scorer for (scorer_name, _), scorer in SCORERS.items() if scorer_name == name]
    if not versions:
        names = sorted({scorer_name for scorer_name, _ in SCORERS})
        raise KeyError(f"no scorer named {name!r}; known: {', '.join(names)}")
    return max(versions, key=lambda scorer: scorer.version)


def names() -> list[str]:
    return sorted({name for name, _ in SCORERS})
