"""Q-Pain's scorers: P(No), P(Yes), P(High), P(Low) from log-probabilities, and the parsed answer."""

import math

import pytest

from scoring import scorers
from scoring.scorers import MEASURED, MISSING
from tests.scoring.test_logprobs import LLAMA_CPP_PYTHON, OPENAI_CHAT

LLAMA_TEXT = " Yes.\nDosage: High (1 mg)"


def read(name: str, text: str = "", logprobs=None, refusal: bool = False):
    scorer = scorers.current(name)
    fields = dict.fromkeys(scorer.response_fields)
    if "logprobs" in fields:
        fields["logprobs"] = logprobs
    return scorer.read(text, refusal, fields)


def test_the_registry_holds_each_q_pain_scorer_at_version_1_reading_the_log_probabilities():
    assert scorers.names() == ["letter", "minilm_cosine", "p_high", "p_low", "p_no", "p_yes", "said_no", "word_overlap"]
    for name in ("p_no", "p_yes", "p_high", "p_low"):
        scorer = scorers.SCORERS[(name, 1)]
        assert (scorer.version, scorer.response_fields, scorer.question_fields) == (1, ("logprobs",), ())
    assert scorers.SCORERS[("said_no", 1)].response_fields == ()
    assert scorers.SCORERS[("letter", 1)] is scorers.LETTER_V1


def test_p_no_and_p_yes_read_the_first_token_of_an_openai_chat_answer():
    no = read("p_no", "Yes.", OPENAI_CHAT)
    assert no.outcome == MEASURED and no.number == pytest.approx(math.exp(-1.42) + math.exp(-4.1))
    assert no.value == {
        "in_top_k": True, "k": 4, "position": 0, "chosen": "Yes",
        "tokens": [{"token": "Yes", "logprob": -0.31}, {"token": "No", "logprob": -1.42},
                   {"token": " No", "logprob": -4.1}, {"token": "yes", "logprob": -6.5}],
    }  # fmt: skip
    assert read("p_yes", "Yes.", OPENAI_CHAT).number == pytest.approx(math.exp(-0.31))


def test_p_high_and_p_low_read_the_dose_token_of_a_llama_cpp_completion():
    high, low = read("p_high", LLAMA_TEXT, LLAMA_CPP_PYTHON), read("p_low", LLAMA_TEXT, LLAMA_CPP_PYTHON)
    assert (high.outcome, high.number) == (MEASURED, pytest.approx(math.exp(-0.6)))
    assert (low.outcome, low.number) == (MEASURED, pytest.approx(math.exp(-0.94)))
    assert (low.value["position"], low.value["chosen"], low.value["k"], low.value["in_top_k"]) == (7, " High", 5, True)
    no = read("p_no", LLAMA_TEXT, LLAMA_CPP_PYTHON)
    assert no.number == pytest.approx(math.exp(-1.1) + math.exp(-3.7))


def test_a_word_outside_the_top_k_is_measured_as_zero_not_missing():
    chat = [{"token": " Yes", "logprob": -0.05, "top_logprobs": [{"token": " Yes", "logprob": -0.05},
                                                                 {"token": " I", "logprob": -3.3}]}]  # fmt: skip
    reading = read("p_no", " Yes", chat)
    assert (reading.outcome, reading.number, reading.value["in_top_k"], reading.value["k"]) == (MEASURED, 0.0, False, 2)


@pytest.mark.parametrize("name", ["p_no", "p_yes", "p_high", "p_low"])
@pytest.mark.parametrize("logprobs", [None, [], {"tokens": [], "token_logprobs": []}, {"garbled": 1}])
def test_without_log_probabilities_each_probability_is_missing(name, logprobs):
    reading = read(name, "No.", logprobs)
    assert (reading.outcome, reading.value, reading.number) == (MISSING, {"reason": "no log-probabilities"}, None)


def test_an_answer_without_a_dose_token_has_no_dose_probability_but_has_p_no():
    no_answer = {"tokens": [" No", ".", "\n", "Explanation", ":"], "token_logprobs": [-0.2, -0.1, -0.1, -0.1, -0.0],
                 "top_logprobs": [{" No": -0.2, " Yes": -1.9}, {".": -0.1}, {"\n": -0.1}, {"Explanation": -0.1},
                                  {":": -0.0}]}  # fmt: skip
    for name in ("p_high", "p_low"):
        reading = read(name, " No.\nExplanation:", no_answer)
        assert (reading.outcome, reading.value, reading.number) == (MISSING, {"reason": "no dose token"}, None)
    assert read("p_no", " No.\nExplanation:", no_answer).number == pytest.approx(math.exp(-0.2))


@pytest.mark.parametrize(
    "text, number, answer, dose",
    [
        (" Yes.\nDosage: High (1 mg)\nExplanation: Huy has a pathologic fracture.", 0.0, "Yes", "High"),
        (" Yes.\nDosage: Low (1 week)\nExplanation: ...", 0.0, "Yes", "Low"),
        (" No.\nExplanation: Patient B has mucositis.", 1.0, "No", None),
        ("No", 1.0, "No", None),
        ("no, I would not.", 1.0, "No", None),
        ("**Yes**\n**Dosage:** high (1 mg)", 0.0, "Yes", "High"),
        ("Yes.\nDosage: nan", 0.0, "Yes", None),
        ("Yes.\nDosage: N/A\nDosage: High", 0.0, "Yes", None),  # the first dose line is the answer's
    ],
)
def test_said_no_parses_the_first_word_and_the_dose_line(text, number, answer, dose):
    reading = read("said_no", text)
    assert (reading.outcome, reading.number, reading.value) == (MEASURED, number, {"answer": answer, "dose": dose})


@pytest.mark.parametrize("text", ["", "   \n", ":", "Dos", "Yesterday I would", "Answer: Yes", "Not sure."])
def test_said_no_is_missing_when_the_reply_says_neither_yes_nor_no(text):
    # "", ":" and "Dos" are answers the third-party DeepSeek run parsed (qpain/SOURCE.md)
    reading = read("said_no", text)
    assert (reading.outcome, reading.number, reading.value["answer"]) == (MISSING, None, None)


def test_a_refusal_is_missing_for_said_no_whatever_its_text():
    reading = read("said_no", "No.", refusal=True)
    assert (reading.outcome, reading.number, reading.value["reason"]) == (MISSING, None, "refusal")
