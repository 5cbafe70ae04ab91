"""What a scorer declares it reads, checked when it is defined; word_overlap v1 read on plain values (no database)."""

import pytest

from scoring import references, scorers
from scoring.scorers import MEASURED, MISSING, Pair, Reading, Reply, Scorer


def _overlap(answer: str, reference: str | None) -> Reading:
    pair = Pair(Reply(answer, False), Reply(reference, False) if reference is not None else None)
    return scorers.WORD_OVERLAP_V1.score_batch([pair])[0]


def test_word_overlap_is_the_jaccard_overlap_of_lower_cased_word_sets():
    # {see, a, doctor, today} vs {see, your, doctor}: {see, doctor} shared of 5 words
    reading = _overlap("See a doctor, today.", "see YOUR doctor!")
    assert reading == Reading(MEASURED, {"shared_words": 2, "all_words": 5}, 0.4)
    # a repeated word counts once; "don't" is "don" and "t"; digits are words
    assert _overlap("don't don't take 2", "do not take 2").value == {"shared_words": 2, "all_words": 6}
    assert _overlap("Same words", "words same").number == 1.0
    assert _overlap("alpha", "beta").number == 0.0


def test_word_overlap_without_words_or_reference_is_missing_with_the_reason():
    assert _overlap("", "words") == Reading(MISSING, {"reason": "the answer has no words"})
    assert _overlap("words", " ... ") == Reading(MISSING, {"reason": "the reference answer has no words"})
    assert _overlap("words", None) == Reading(MISSING, {"reason": "no reference answer"})


def test_a_batch_gives_one_reading_per_pair_in_order():
    pairs = [Pair(Reply("a b", False), Reply("a", False)), Pair(Reply("a", False), Reply("a", True))]
    assert [reading.number for reading in scorers.WORD_OVERLAP_V1.score_batch(pairs)] == [0.5, 1.0]


def test_a_one_answer_scorer_reads_a_batch_through_its_read():
    pairs = [Pair(Reply("C", False, {"answer_idx": "C"})), Pair(Reply("NR", False, {"answer_idx": "C"}))]
    assert [reading.outcome for reading in scorers.LETTER_V1.score_batch(pairs)] == ["correct", "non_response"]


def test_every_registered_scorer_says_what_it_reads_and_every_rule_has_a_lookup():
    reads = {key: (scorer.reads, scorer.reference) for key, scorer in scorers.SCORERS.items()}
    assert reads.pop(("word_overlap", 1)) == ("answer_and_reference", "same_source_condition_base")
    assert reads.pop(("minilm_cosine", 1)) == ("answer_and_reference", "same_source_condition_base")
    assert set(reads.values()) == {("answer", None)}
    assert set(references.RULES) == set(scorers.REFERENCE_RULES)


def _read_batch(pairs):
    return [Reading(MISSING) for _ in pairs]


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"reads": "two answers", "read_batch": _read_batch}, "reads 'two answers'; known: answer, "),
        ({"reads": "answer_and_reference", "read_batch": _read_batch}, "a reference rule goes with reads"),
        ({"reference": "same_source_condition_base", "read_batch": _read_batch}, "a reference rule goes with"),
        ({"reads": "answer_and_reference", "reference": "nearest", "read_batch": _read_batch}, "no reference rule"),
        ({}, "exactly one of read and read_batch"),
        ({"read": lambda text, refusal, fields: Reading(MISSING), "read_batch": _read_batch}, "exactly one of"),
        ({"reads": "answer_and_reference", "reference": "same_source_condition_base",
          "read": lambda text, refusal, fields: Reading(MISSING)}, "a reference needs read_batch"),
        ({"read_batch": _read_batch, "batch_size": 0}, "batch_size must be at least 1"),
    ],
)  # fmt: skip
def test_a_scorer_that_cannot_say_what_it_reads_is_refused_when_defined(fields, problem):
    with pytest.raises(ValueError, match=problem):
        Scorer(**{"name": "x", "version": 1, "description": "", "question_fields": (), "read": None, **fields})


def test_a_batch_reading_that_loses_an_answer_is_an_error_not_a_shorter_list():
    lossy = Scorer("x", 1, "", (), None, read_batch=lambda pairs: [])
    with pytest.raises(ValueError, match="read 0 of 1 answers"):
        lossy.score_batch([Pair(Reply("a", False))])
