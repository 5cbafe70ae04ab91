"""Reading token probabilities out of stored log-probabilities, in the shapes servers return them."""

import math

import pytest

from scoring.logprobs import Position, dose_position, positions, probability_at

# An OpenAI chat answer's `choices[0].logprobs.content` (gpt-4o style: no leading space on the first token).
OPENAI_CHAT = [
    {"token": "Yes", "logprob": -0.31, "bytes": [89, 101, 115],
     "top_logprobs": [{"token": "Yes", "logprob": -0.31, "bytes": [89, 101, 115]},
                      {"token": "No", "logprob": -1.42, "bytes": [78, 111]},
                      {"token": " No", "logprob": -4.1, "bytes": [32, 78, 111]},
                      {"token": "yes", "logprob": -6.5, "bytes": [121, 101, 115]}]},
    {"token": ".", "logprob": -0.01, "bytes": [46], "top_logprobs": [{"token": ".", "logprob": -0.01, "bytes": [46]}]},
]  # fmt: skip

# llama-cpp-python's /v1/completions `choices[0].logprobs` for " Yes.\nDosage: High (1 mg)" (Llama tokens:
# "D", "os", "age"); offsets count from the prompt's start, and it adds the sampled token to each dict.
LLAMA_CPP_PYTHON = {
    "tokens": [" Yes", ".", "\n", "D", "os", "age", ":", " High", " (", "1", " mg", ")"],
    "text_offset": [2113, 2117, 2118, 2119, 2120, 2122, 2125, 2126, 2131, 2133, 2134, 2137],
    "token_logprobs": [-0.52, -0.08, -0.01, -0.002, -0.0, -0.0, -0.0, -0.6, -0.03, -0.02, -0.05, -0.0],
    "top_logprobs": [
        {" Yes": -0.52, " No": -1.1, "No": -3.7, " yes": -5.9, " I": -6.2},
        {".": -0.08, ",": -3.1, "\n": -4.3, " -": -5.1, "!": -7.6},
        {"\n": -0.01, " ": -5.2, "\n\n": -6.0, " The": -7.7, " I": -8.1},
        {"D": -0.002, "Ex": -6.9, "Answer": -8.2, "The": -9.0, "P": -9.4},
        {"os": -0.0},
        {"age": -0.0},
        {":": -0.0},
        {" High": -0.6, " Low": -0.94, " low": -4.2, " high": -4.4, " Medium": -6.0},
        {" (": -0.03},
        {"1": -0.02},
        {" mg": -0.05},
        {")": -0.0},
    ],
}

# llama.cpp's own server (llama-server) on /v1/completions: the chat list under "content".
LLAMA_SERVER = {"content": [
    {"id": 3869, "token": " No", "logprob": -0.2, "bytes": [32, 78, 111],
     "top_logprobs": [{"id": 3869, "token": " No", "logprob": -0.2, "bytes": [32, 78, 111]},
                      {"id": 3363, "token": " Yes", "logprob": -1.8, "bytes": [32, 89, 101, 115]}]},
]}  # fmt: skip


def test_the_chat_list_becomes_positions_with_their_alternatives():
    read = positions(OPENAI_CHAT)
    assert read[0] == Position("Yes", -0.31, (("Yes", -0.31), ("No", -1.42), (" No", -4.1), ("yes", -6.5)))
    assert [position.token for position in read] == ["Yes", "."]


def test_the_legacy_completions_object_becomes_the_same_positions():
    read = positions(LLAMA_CPP_PYTHON)
    assert len(read) == 12 and read[7].token == " High"
    assert read[0].top == ((" Yes", -0.52), (" No", -1.1), ("No", -3.7), (" yes", -5.9), (" I", -6.2))
    assert positions(LLAMA_SERVER)[0].top == ((" No", -0.2), (" Yes", -1.8))


def test_no_with_and_without_a_leading_space_add_as_distinct_continuations():
    no = probability_at(positions(OPENAI_CHAT), 0, "No")
    assert no.value == pytest.approx(math.exp(-1.42) + math.exp(-4.1))
    assert (no.in_top_k, no.k, no.position, no.chosen) == (True, 4, 0, "Yes")
    # "yes" is another word: case counts
    assert probability_at(positions(OPENAI_CHAT), 0, "Yes").value == pytest.approx(math.exp(-0.31))
    legacy = probability_at(positions(LLAMA_CPP_PYTHON), 0, "No")
    assert legacy.value == pytest.approx(math.exp(-1.1) + math.exp(-3.7))


def test_a_word_not_among_the_alternatives_reads_zero_and_says_so():
    absent = probability_at(positions(OPENAI_CHAT), 1, "No")
    assert (absent.value, absent.in_top_k, absent.k) == (0.0, False, 1)
    assert probability_at(positions(OPENAI_CHAT), 2, "No") is None  # no such position


def test_a_word_with_trailing_punctuation_is_not_the_word():
    read = positions([{"token": " No.", "logprob": -0.1, "top_logprobs": [{"token": " No.", "logprob": -0.1}]}])
    assert probability_at(read, 0, "No").in_top_k is False


def test_the_generated_token_counts_even_when_the_server_left_it_out_of_the_top_k():
    # A sampled token outside the top k (or top_logprobs 0): its log-probability is in the answer.
    read = positions([{"token": " No", "logprob": -3.0, "top_logprobs": [{"token": " Yes", "logprob": -0.1}]}])
    assert probability_at(read, 0, "No").value == pytest.approx(math.exp(-3.0))
    assert positions({"tokens": [" No"], "token_logprobs": [-0.7], "top_logprobs": None})[0].top == ((" No", -0.7),)


def test_the_dose_token_is_the_first_after_the_text_contains_dosage():
    read = positions(LLAMA_CPP_PYTHON)
    assert dose_position(read) == 7  # "D" "os" "age" ":" then " High"
    high, low = probability_at(read, 7, "High"), probability_at(read, 7, "Low")
    assert (high.value, low.value) == (pytest.approx(math.exp(-0.6)), pytest.approx(math.exp(-0.94)))
    one_token = positions({"tokens": [" Yes", ".\n", "Dosage:", " Low"], "token_logprobs": [-0.1] * 4})
    assert dose_position(one_token) == 3


def test_no_dose_token_when_the_answer_has_no_dosage_line_or_ends_with_it():
    assert dose_position(positions(OPENAI_CHAT)) is None
    assert dose_position(positions({"tokens": [" Yes", "\n", "Dosage", ":"], "token_logprobs": [-0.1] * 4})) is None


@pytest.mark.parametrize(
    "garbled",
    [
        None,
        [],
        {},
        "not log-probabilities",
        {"content": []},
        {"tokens": [], "token_logprobs": []},
        {"tokens": [" Yes", "."], "token_logprobs": [-0.1]},  # lengths differ
        {"tokens": [" Yes"], "token_logprobs": [-0.1], "top_logprobs": [{}, {}]},
        {"tokens": [" Yes"], "token_logprobs": [None]},
        {"tokens": [" Yes"], "token_logprobs": [-0.1], "top_logprobs": [{" No": "low"}]},
        [{"token": "Yes"}],  # no logprob
        [{"token": "Yes", "logprob": float("nan")}],
        [{"token": "Yes", "logprob": 0.7}],  # a probability above 1
        [{"token": "Yes", "logprob": True}],
        [{"token": "Yes", "logprob": -0.1, "top_logprobs": [{"logprob": -0.1}]}],
        ["Yes"],
    ],
)
def test_missing_or_garbled_log_probabilities_read_as_none(garbled):
    assert positions(garbled) is None


def test_probabilities_stay_within_one_despite_rounding():
    read = positions([{"token": "No", "logprob": 0.00001, "top_logprobs": [{"token": "No", "logprob": 0.00001}]}])
    assert probability_at(read, 0, "No").value == 1.0
    # two continuations each certain: not the log-probabilities of one position
    both = [{"token": "No", "logprob": -0.0, "top_logprobs": [{"token": "No", "logprob": -0.0},
                                                              {"token": " No", "logprob": -0.0}]}]  # fmt: skip
    assert positions(both) is None
