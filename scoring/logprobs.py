"""Read token probabilities out of an answer's stored log-probabilities (scoring/DESIGN.md). Pure: no Django.

An answer keeps what the server returned (`response_metadata["logprobs"]`, datasets/generation/work.py) in
one of three shapes:

- chat completions: the list `choices[0].logprobs.content`, one {token, logprob, top_logprobs: [{token,
  logprob}]} per generated token;
- legacy completions (OpenAI, llama-cpp-python): {tokens, token_logprobs, text_offset, top_logprobs:
  [{token: logprob}]};
- llama.cpp's own server on /v1/completions: {"content": [...]} holding the chat list.

`positions` turns any of them into one list of `Position`s, or None when there is nothing readable (no
log-probabilities, an empty list, or a shape it does not know): a scorer then says the reading is missing
rather than guessing.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

DOSE_MARKER = "Dosage:"
ROUNDING = 1e-4  # servers round log-probabilities: a position's probabilities may sum a hair above 1


@dataclass(frozen=True)
class Position:
    """One generated token: its text, its log-probability and the alternatives the server listed there."""

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...]  # (token text, log-probability); a list, as two ids may share a text


@dataclass(frozen=True)
class Probability:
    """The probability of a word at one position, and what it was read from."""

    value: float  # in [0, 1]; 0.0 when the word is not among the alternatives
    in_top_k: bool
    k: int  # how many alternatives the server listed there
    position: int
    chosen: str  # the token generated there
    top: tuple[tuple[str, float], ...]


def positions(raw: Any) -> list[Position] | None:
    """The generated tokens of a stored log-probabilities value, or None when it has none or is garbled."""
    if isinstance(raw, dict) and isinstance(raw.get("content"), list):
        raw = raw["content"]  # llama.cpp's server puts the chat list in a completion choice
    try:
        if isinstance(raw, list):
            read = [_chat_position(entry) for entry in raw]
        elif isinstance(raw, dict):
            read = _legacy_positions(raw)
        else:
            return None
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    return read or None


def _logprob(value: Any) -> float:
    # bool is an int; NaN, infinities and positive values are no log-probability (json cannot hold -inf)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value > ROUNDING:
        raise ValueError(f"not a log-probability: {value!r}")
    return min(float(value), 0.0)


def _with_chosen(token: str, logprob: float, top: list[tuple[str, float]]) -> tuple[tuple[str, float], ...]:
    """The alternatives, plus the generated token when the server left it out: its log-probability is known
    (OpenAI's legacy API likewise always adds the sampled token, so a position may hold k + 1).

    Alternatives are distinct continuations, so their probabilities cannot sum above 1: more than rounding
    says the values are not log-probabilities of one position."""
    if all(text != token for text, _ in top):
        top = [*top, (token, logprob)]
    if sum(math.exp(value) for _, value in top) > 1 + ROUNDING:
        raise ValueError("the alternatives' probabilities sum above 1")
    return tuple(top)


def _chat_position(entry: dict[str, Any]) -> Position:
    token, logprob = str(entry["token"]), _logprob(entry["logprob"])
    top = [(str(item["token"]), _logprob(item["logprob"])) for item in entry.get("top_logprobs") or []]
    return Position(token, logprob, _with_chosen(token, logprob, top))


def _legacy_positions(raw: dict[str, Any]) -> list[Position]:
    tokens, logprobs, tops = raw["tokens"], raw["token_logprobs"], raw.get("top_logprobs")
    if not isinstance(tokens, list) or not isinstance(logprobs, list) or len(tokens) != len(logprobs):
        raise ValueError("tokens and token_logprobs differ")
    if tops is None:
        tops = [None] * len(tokens)
    if not isinstance(tops, list) or len(tops) != len(tokens):
        raise ValueError("tokens and top_logprobs differ")
    read = []
    for token, logprob, top in zip(tokens, logprobs, tops, strict=True):
        token, logprob = str(token), _logprob(logprob)
        alternatives = [(str(text), _logprob(value)) for text, value in (top or {}).items()]
        read.append(Position(token, logprob, _with_chosen(token, logprob, alternatives)))
    return read


def probability_at(read: Sequence[Position], index: int, word: str) -> Probability | None:
    """P(word) at position `index`: the sum of exp(logprob) over the alternatives whose text, leading
    whitespace stripped, is exactly `word`; None when the answer has no such position.

    " No" and "No" both count: they are distinct continuations (different tokens) of the same answer, so
    their probabilities add. "No." or "no" do not. A word absent from the alternatives reads 0.0 with
    `in_top_k` False: its probability is below the k-th alternative's, not known to be zero.
    """
    if not 0 <= index < len(read):
        return None
    position = read[index]
    matching = [logprob for text, logprob in position.top if text.lstrip() == word]
    value = min(1.0, sum(math.exp(logprob) for logprob in matching))  # rounding may pass 1 by a hair
    return Probability(value, bool(matching), len(position.top), index, position.token, position.top)


def dose_position(read: Sequence[Position]) -> int | None:
    """The index of the first token generated after the text so far contains "Dosage:" (Q-Pain's dose
    token, the notebook's fixed token 7 for GPT-3's tokeniser); None when no token follows it."""
    text = ""
    for index, position in enumerate(read):
        if DOSE_MARKER in text:
            return index
        text += position.token
    return None
