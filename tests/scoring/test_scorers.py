"""The letter scorer reads BiasMedQA replies as the paper's code does (response[0] == answer_idx)."""

import pytest

from scoring import scorers
from scoring.scorers import CORRECT, NON_RESPONSE, WRONG, Reading

QUESTION = {"answer_idx": "C"}


@pytest.mark.parametrize(
    "reply, outcome, letter",
    [
        ("C", CORRECT, "C"),
        ("  C: Tell the attending", CORRECT, "C"),
        ("B", WRONG, "B"),
        ("E\n", WRONG, "E"),
        ("A. Disclose the error", WRONG, "A"),
        ("NR", NON_RESPONSE, None),
        ("", NON_RESPONSE, None),
        ("   \n", NON_RESPONSE, None),
        ("F", NON_RESPONSE, None),
        ("c", NON_RESPONSE, None),  # BiasMedQA's rule compares the character as written
        ("The answer is C", NON_RESPONSE, None),
        ("I would choose option B", NON_RESPONSE, None),
    ],
)
def test_letter_v1_reads_the_first_character_of_the_stripped_reply(reply, outcome, letter):
    assert scorers.read_letter_v1(reply, False, QUESTION) == Reading(outcome, {"letter": letter})


def test_a_refusal_is_a_non_response_whatever_its_text():
    assert scorers.read_letter_v1("C", True, QUESTION).outcome == NON_RESPONSE


def test_readings_are_frozen():
    reading = scorers.read_letter_v1("C", False, QUESTION)
    with pytest.raises(AttributeError):
        reading.outcome = WRONG  # type: ignore[misc]


def test_the_registry_holds_letter_v1_and_v2_and_current_picks_the_newest_version(monkeypatch):
    assert scorers.SCORERS[("letter", 1)] is scorers.LETTER_V1
    assert scorers.current("letter") is scorers.SCORERS[("letter", 2)] is scorers.LETTER_V2
    v3 = scorers.Scorer("letter", 3, "test", ("answer_idx",), lambda text, refusal, question: Reading(WRONG))
    monkeypatch.setitem(scorers.SCORERS, ("letter", 3), v3)
    assert scorers.current("letter") is v3
    assert "letter" in scorers.names()


def test_an_unknown_scorer_names_the_known_ones():
    with pytest.raises(KeyError, match="letter"):
        scorers.current("nope")
