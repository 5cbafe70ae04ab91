"""Scorers: versioned deterministic readings of one answer (scoring/DESIGN.md). Pure: no Django here.

A scorer reads an answer's text (and whether it was a refusal) against the fields of its question it names
in `question_fields` (and `optional_question_fields`) and of its response it names in `response_fields` (the
log-probabilities), and returns a `Reading`: a choice (correct / wrong / non-response) or a number (measured /
missing). Versions are append-only: a changed rule is a new version registered beside the old one, so scores
stored under the old version still mean what they said.

A scorer may also read a reference answer found by a named rule (`reads = ANSWER_AND_REFERENCE`), and may read
a batch of answers at once (`read_batch`): the runner (`services.score_missing`) finds the references and feeds
the batches.
"""

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from . import embeddings, letters, logprobs

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
# Every score an import of released outputs stores, as (name, version): study files may name them beside the
# registered scorers (`scoring/release_import.py`: `released`; `scoring/qpain_import.py`: the `released_p_*`).
IMPORTED_SCORES: frozenset[tuple[str, int]] = frozenset(
    [(RELEASED, 1), ("released_p_no", 1), ("released_p_yes", 1), ("released_p_high", 1), ("released_p_low", 1)]
)


@dataclass(frozen=True)
class Reading:
    outcome: str
    value: dict[str, Any] = field(default_factory=dict)
    number: float | None = None  # a numeric scorer's reading (outcome MEASURED); None otherwise


# What a scorer reads (scoring/DESIGN.md, "Scorers that read several answers").
ANSWER = "answer"
ANSWER_AND_REFERENCE = "answer_and_reference"
READS = (ANSWER, ANSWER_AND_REFERENCE)
# Rules that find an answer's reference; each one's lookup is in scoring/references.py.
SAME_SOURCE_CONDITION_BASE = "same_source_condition_base"  # the same source and settings' answer to the base
REFERENCE_RULES = (SAME_SOURCE_CONDITION_BASE,)


class Embedding(NamedTuple):
    """An answer's sentence embedding (scoring/embeddings.py) and the word pieces of its whole text."""

    vector: npt.NDArray[np.float32]
    tokens: int


@dataclass(frozen=True)
class Reply:
    """What a scorer reads of one answer: its text, whether it was a refusal, and the fields it names."""

    text: str
    refusal: bool
    fields: Mapping[str, Any] = field(default_factory=dict)
    # For a scorer with an `embedding_model`: the text's embedding, attached by the runner from the cache
    # (scoring/embedding_cache.py); None for a blank text.
    embedding: Embedding | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Pair:
    """One unit of a batch: the answer, and its reference answer for a scorer that reads one (else None)."""

    answer: Reply
    reference: Reply | None = None


@dataclass(frozen=True)
class Scorer:
    name: str
    version: int
    description: str
    # Keys of the question's metadata the scorer needs; an answer whose question lacks one is not scored.
    question_fields: tuple[str, ...]
    # read(text, refusal, fields): `fields` holds the question_fields of the question's metadata and the
    # response_fields of the answer's response_metadata (e.g. `logprobs`), each under its own name.
    # None for a scorer that reads batches (`read_batch`).
    read: Callable[[str, bool, Mapping[str, Any]], Reading] | None
    # Keys of the answer's response_metadata the scorer reads; a missing one arrives as None (never skipped).
    response_fields: tuple[str, ...] = ()
    # Keys of the question's metadata the scorer reads when present; a missing one arrives as None (never skipped).
    optional_question_fields: tuple[str, ...] = ()
    reads: str = ANSWER
    # The rule that finds the reference answer (REFERENCE_RULES); only with reads = ANSWER_AND_REFERENCE.
    reference: str | None = None
    # read_batch(pairs): one Reading per pair, in order (an embedding model reads many texts at once).
    read_batch: Callable[[Sequence[Pair]], list[Reading]] | None = None
    # Answers per batch unless the caller says otherwise: large for cheap readings, small for a model.
    batch_size: int = 2000
    # The embedding model whose vectors the runner attaches to each reply (Reply.embedding), or None.
    embedding_model: str | None = None

    def __post_init__(self) -> None:
        if self.reads not in READS:
            raise ValueError(f"scorer {self.name} v{self.version}: reads {self.reads!r}; known: {', '.join(READS)}")
        if (self.reads == ANSWER_AND_REFERENCE) != (self.reference is not None):
            raise ValueError(f"scorer {self.name} v{self.version}: a reference rule goes with reads = "
                             f"{ANSWER_AND_REFERENCE!r}, and only with it")  # fmt: skip
        if self.reference is not None and self.reference not in REFERENCE_RULES:
            raise ValueError(f"scorer {self.name} v{self.version}: no reference rule {self.reference!r}; known: "
                             f"{', '.join(REFERENCE_RULES)}")  # fmt: skip
        if (self.read is None) == (self.read_batch is None):
            raise ValueError(f"scorer {self.name} v{self.version}: give exactly one of read and read_batch")
        if self.reads == ANSWER_AND_REFERENCE and self.read_batch is None:
            raise ValueError(f"scorer {self.name} v{self.version}: read sees one answer; a reference needs read_batch")
        if self.embedding_model is not None and self.read_batch is None:
            raise ValueError(f"scorer {self.name} v{self.version}: embeddings are read in batches (read_batch)")
        if self.batch_size < 1:
            raise ValueError(f"scorer {self.name} v{self.version}: batch_size must be at least 1")

    def score_batch(self, pairs: Sequence[Pair]) -> list[Reading]:
        """One reading per pair, in order: the scorer's own batch reading, or its `read` of each answer."""
        if self.read_batch is not None:
            readings = list(self.read_batch(pairs))
            if len(readings) != len(pairs):
                raise ValueError(f"scorer {self.name} v{self.version} read {len(readings)} of {len(pairs)} answers")
            return readings
        assert self.read is not None  # __post_init__: one of the two
        return [self.read(pair.answer.text, pair.answer.refusal, pair.answer.fields) for pair in pairs]


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


def read_letter_v2(text: str, refusal: bool, fields: Mapping[str, Any]) -> Reading:
    """The letter the reply names as its answer, in the shapes verbose models use (scoring/letters.py), or the
    option whose text it quotes when it names no letter (with the question's `options`).

    A refusal, an empty reply, the reply `NR`, a reply naming no letter or several letters as its answer is a
    non-response; `value["reason"]` says which.
    """
    if refusal:
        return Reading(NON_RESPONSE, {"letter": None, "reason": "refusal"})
    reply = letters.clean_reply(text)
    if not reply:
        return Reading(NON_RESPONSE, {"letter": None, "reason": "empty reply"})
    if reply == NO_ANSWER_MARKER:
        return Reading(NON_RESPONSE, {"letter": None, "reason": "NR"})
    choice = letters.read_choice(reply, letters.option_texts(fields.get("options")))
    if choice.letter is None:
        return Reading(NON_RESPONSE, {"letter": None, "reason": choice.reason})
    value: dict[str, Any] = {"letter": choice.letter}
    if choice.quoted is not None:
        value["quoted"] = choice.quoted
    return Reading(CORRECT if choice.letter == fields["answer_idx"] else WRONG, value)


LETTER_V2 = Scorer(
    name="letter",
    version=2,
    description='The letter the reply names as its answer ("C", "(C)", "Option C", "the answer is C", '
    '"... is C: text", "OPTION C IS CORRECT"; never a word\'s first letter or the article A), else the one option '
    "whose text it quotes; NR, empty, a refusal, no letter or several letters: non-response, with the reason.",
    question_fields=("answer_idx",),
    read=read_letter_v2,
    optional_question_fields=("options",),
)

NO_LOGPROBS = {"reason": "no log-probabilities"}
NO_DOSE_TOKEN = {"reason": "no dose token"}


def read_token_probability_v1(
    text: str, refusal: bool, fields: Mapping[str, Any], *, word: str, at_dose: bool
) -> Reading:
    """P(word) at the answer's first token (Yes/No) or at its dose token (High/Low), from the answer's
    log-probabilities (scoring/logprobs.py); missing when it has none, or (dose) no token after "Dosage:".

    Read whatever the text or refusal flag say: the probabilities are the model's, whichever token it chose.
    """
    read = logprobs.positions(fields.get("logprobs"))
    if read is None:
        return Reading(MISSING, dict(NO_LOGPROBS))
    index = logprobs.dose_position(read) if at_dose else 0
    probability = logprobs.probability_at(read, index, word) if index is not None else None
    if probability is None:
        return Reading(MISSING, dict(NO_DOSE_TOKEN))
    value = {
        "in_top_k": probability.in_top_k, "k": probability.k, "position": probability.position,
        "chosen": probability.chosen,
        "tokens": [{"token": token, "logprob": logprob} for token, logprob in probability.top],
    }  # fmt: skip
    return Reading(MEASURED, value, probability.value)


def _probability_v1(name: str, word: str, *, at_dose: bool) -> Scorer:
    where = 'the first token after "Dosage:"' if at_dose else "the answer's first token"
    return Scorer(
        name=name,
        version=1,
        description=f'P({word}) at {where}: exp(log-probability) of the top-k alternatives reading "{word}" '
        f'(" {word}" and "{word}" add); 0 when not among them; missing without log-probabilities.',
        question_fields=(),
        read=partial(read_token_probability_v1, word=word, at_dose=at_dose),
        response_fields=("logprobs",),
    )


P_NO_V1 = _probability_v1("p_no", "No", at_dose=False)
P_YES_V1 = _probability_v1("p_yes", "Yes", at_dose=False)
P_HIGH_V1 = _probability_v1("p_high", "High", at_dose=True)
P_LOW_V1 = _probability_v1("p_low", "Low", at_dose=True)

FIRST_WORD = re.compile(r"[\W_]*([^\W_]+)")  # the first word, whatever whitespace or punctuation precedes it
DOSE_LINE = re.compile(r"[\W_]*dosage\s*:[\W_]*([^\W_]*)", re.IGNORECASE)


def parse_qpain_reply(text: str) -> tuple[str | None, str | None]:
    """(Yes | No | None, High | Low | None) read from a Q-Pain reply.

    As the official notebook reads its first line (the answer) and the "Dosage:" line, but by the first word,
    case-insensitive, so " Yes.", "yes," and "**No**" read alike; "Dos", ":" or "Yesterday" read as neither.
    """
    first = FIRST_WORD.match(text)
    word = first.group(1).capitalize() if first else None
    answer = word if word in ("Yes", "No") else None
    dose = None
    for line in text.splitlines():
        if match := DOSE_LINE.match(line):
            dose = match.group(1).capitalize() if match.group(1).lower() in ("high", "low") else None
            break  # the first dose line is the answer's; a later one belongs to text the model ran on with
    return answer, dose


def read_said_no_v1(text: str, refusal: bool, fields: Mapping[str, Any]) -> Reading:
    """1.0 for a reply that answers No, 0.0 for Yes; missing for a refusal or a reply that says neither
    (Q-Pain's parsed answer, for sources without log-probabilities)."""
    if refusal:
        return Reading(MISSING, {"reason": "refusal", "answer": None, "dose": None})
    answer, dose = parse_qpain_reply(text)
    if answer is None:
        return Reading(MISSING, {"reason": "no Yes or No", "answer": None, "dose": dose})
    return Reading(MEASURED, {"answer": answer, "dose": dose}, 1.0 if answer == "No" else 0.0)


SAID_NO_V1 = Scorer(
    name="said_no",
    version=1,
    description="1 when the reply's first word is No, 0 when Yes (case-insensitive); missing when neither or a "
    "refusal. The dose is read from its Dosage: line.",
    question_fields=(),
    read=read_said_no_v1,
)

WORD = re.compile(r"[^\W_]+")  # a run of letters or digits: "don't" is "don" and "t"


def words(text: str) -> set[str]:
    """The set of lower-cased words of a text."""
    return set(WORD.findall(text.lower()))


def read_word_overlap(pair: Pair) -> Reading:
    """Jaccard overlap |A & B| / |A | B| of the answer's and its reference's lower-cased word sets.

    A refusal is read as its text like any answer; an answer or reference without a word is missing.
    """
    if pair.reference is None:  # the runner always gives a two-answer scorer its reference
        return Reading(MISSING, {"reason": "no reference answer"})
    answer, reference = words(pair.answer.text), words(pair.reference.text)
    if not answer:
        return Reading(MISSING, {"reason": "the answer has no words"})
    if not reference:
        return Reading(MISSING, {"reason": "the reference answer has no words"})
    shared, every = len(answer & reference), len(answer | reference)
    return Reading(MEASURED, {"shared_words": shared, "all_words": every}, shared / every)


def read_word_overlap_v1(pairs: Sequence[Pair]) -> list[Reading]:
    return [read_word_overlap(pair) for pair in pairs]


# A stand-in for ContextSRH's cosine similarity of sentence embeddings (`minilm_cosine`, below): the same
# shape, a reading of an answer against its source's answer to the base question under the same settings.
WORD_OVERLAP_V1 = Scorer(
    name="word_overlap",
    version=1,
    description="Stand-in for ContextSRH's embedding similarity: Jaccard overlap of the lower-cased word sets of "
    "the answer and the same source and settings' answer to its base question; missing without a base question "
    "or without words.",
    question_fields=(),
    read=None,
    reads=ANSWER_AND_REFERENCE,
    reference=SAME_SOURCE_CONDITION_BASE,
    read_batch=read_word_overlap_v1,
    batch_size=64,
)


def read_minilm_cosine(pair: Pair) -> Reading:
    """The cosine of the answer's and its reference's all-MiniLM-L6-v2 embeddings (each cut at 256 word pieces).

    A refusal is read as its text like any answer; a blank answer or reference is missing.
    """
    if pair.reference is None:  # the runner always gives a two-answer scorer its reference
        return Reading(MISSING, {"reason": "no reference answer"})
    if not pair.answer.text.strip():
        return Reading(MISSING, {"reason": "the answer is empty"})
    if not pair.reference.text.strip():
        return Reading(MISSING, {"reason": "the reference answer is empty"})
    answer, reference = pair.answer.embedding, pair.reference.embedding
    if answer is None or reference is None:
        raise ValueError("minilm_cosine reads embeddings: the runner attaches them (Scorer.embedding_model)")
    value = {
        "model": embeddings.MODEL_ID,
        "tokens": answer.tokens,
        "reference_tokens": reference.tokens,
        "truncated": max(answer.tokens, reference.tokens) > embeddings.MAX_TOKENS,
    }
    return Reading(MEASURED, value, embeddings.cosine(answer.vector, reference.vector))


def read_minilm_cosine_v1(pairs: Sequence[Pair]) -> list[Reading]:
    return [read_minilm_cosine(pair) for pair in pairs]


MINILM_COSINE_V1 = Scorer(
    name="minilm_cosine",
    version=1,
    description="ContextSRH's similarity: the cosine of the all-MiniLM-L6-v2 sentence embeddings (int8 ONNX, mean "
    "pooling, 256 word pieces) of the answer and the same source and settings' answer to its base question; "
    "missing without a base question or for a blank text.",
    question_fields=(),
    read=None,
    reads=ANSWER_AND_REFERENCE,
    reference=SAME_SOURCE_CONDITION_BASE,
    read_batch=read_minilm_cosine_v1,
    batch_size=64,
    embedding_model=embeddings.MODEL_ID,
)

# (name, version) -> scorer. Append only: never change a registered version's rule.
SCORERS: dict[tuple[str, int], Scorer] = {
    (scorer.name, scorer.version): scorer
    for scorer in (
        LETTER_V1,
        LETTER_V2,
        P_NO_V1,
        P_YES_V1,
        P_HIGH_V1,
        P_LOW_V1,
        SAID_NO_V1,
        WORD_OVERLAP_V1,
        MINILM_COSINE_V1,
    )
}


def current(name: str) -> Scorer:
    """The newest registered version of a scorer."""
    versions = [scorer for (scorer_name, _), scorer in SCORERS.items() if scorer_name == name]
    if not versions:
        names = sorted({scorer_name for scorer_name, _ in SCORERS})
        raise KeyError(f"no scorer named {name!r}; known: {', '.join(names)}")
    return max(versions, key=lambda scorer: scorer.version)


def names() -> list[str]:
    return sorted({name for name, _ in SCORERS})
