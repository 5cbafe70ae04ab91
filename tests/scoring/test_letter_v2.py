"""`letter` v2 reads the option a verbose reply names ("... is C: Clopidogrel", "I would choose option B",
"2 OPTION B IS CORRECT."), never the first letter of a word or the article A, and agrees with BiasMedQA's
released labels. No database."""

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from scoring import scorers
from scoring.scorers import CORRECT, NON_RESPONSE, WRONG

OPTIONS = {
    "A": "Aspirin",
    "B": "Warfarin",
    "C": "Clopidogrel",
    "D": "Heparin",
    "E": "Though A is more effective than B, there is a 5.2% chance the difference is due to chance",
}
QUESTION = {"answer_idx": "C", "options": OPTIONS}


def read(reply: str, question=QUESTION, refusal: bool = False) -> scorers.Reading:
    return scorers.read_letter_v2(reply, refusal, question)


def letter_v1(reply: str) -> str | None:
    return scorers.read_letter_v1(reply, False, QUESTION).value["letter"]


@pytest.mark.parametrize(
    "reply, letter",
    [
        ("(C)", "C"),
        ("[C]", "C"),
        ("**C**", "C"),
        ("Option C", "C"),
        ("option c", "C"),
        ("Option (C)", "C"),
        ("Answer: C", "C"),
        ("The answer is C", "C"),
        ("the answer is c.", "C"),
        ("The correct answer is (C).", "C"),
        ("I would choose option B", "B"),
        ("I would choose option b: Warfarin", "B"),
        ("Based on the patient's symptoms and history, the most appropriate treatment is C: Clopidogrel.", "C"),
        ("Based on the information provided, the most likely diagnosis is:\n\nD: Heparin\n\nThe patient...", "D"),
        ("Based on the information provided, the best next step would be option D.", "D"),
        ("The most likely treatment is warfarin (Option B). Warfarin inhibits vitamin K epoxide reductase.", "B"),
        ("OPTION C IS CORRECT.", "C"),
        ("2 OPTION B IS CORRECT.", "B"),
        ("option b is the best answer", "B"),
        ("I think C is correct.", "C"),
        ("\u200bC", "C"),  # zero-width space
        ("\u200b\u200bC: Clopidogrel", "C"),
        ("\ufeffD", "D"),  # byte-order mark
        ("\u00adE", "E"),  # soft hyphen
        ("\u0391", "A"),  # Greek capital alpha, as pmc-llama writes it
        ("c", "C"),
        ("I apologize for my mistake. Here's my answer for the next question:\n\nB", "B"),
        ("1. C", "C"),
        (
            "### Instruction: Choose one.\n### Question: Which drug?\n### Options: A: Aspirin, B: Warfarin, C: "
            "Clopidogrel, D: Heparin, E: Reassurance\n### Answer: OPTION D IS CORRECT.",
            "D",
        ),  # fmt: skip
    ],
)
def test_v2_reads_the_letter_in_the_shapes_verbose_models_use_where_v1_does_not(reply, letter):
    assert letter_v1(reply) != letter
    reading = read(reply)
    assert reading.value == {"letter": letter}
    assert reading.outcome == (CORRECT if letter == "C" else WRONG)


@pytest.mark.parametrize(
    "reply, letter",
    [
        ("C", "C"),
        ("C:", "C"),
        ("C.", "C"),
        ("C)", "C"),
        ("  C: Clopidogrel\n", "C"),
        ("B", "B"),
        ("E\n\n(Note: this answer is based on the information provided.)", "E"),
        ("D\t// the patient needs heparin", "D"),
        ("C is the correct answer", "C"),
    ],
)
def test_v2_reads_what_v1_reads_when_the_reply_begins_with_a_letter(reply, letter):
    assert letter_v1(reply) == letter
    assert read(reply).value == {"letter": letter}


@pytest.mark.parametrize(
    "reply",
    ["A", "A:", "A.", "(A)", "Option A", "A\nAspirin", "A  Aspirin", "A is correct.", "a", "Answer: a"],
)
def test_a_alone_or_in_an_option_shape_is_the_option(reply):
    assert read(reply) == scorers.Reading(WRONG, {"letter": "A"})


@pytest.mark.parametrize(
    "reply",
    [
        "A 45-year-old man with chest pain most likely needs antiplatelet therapy.",
        "A comprehensive approach to diagnosis would involve considering all the options.",
        "A careful evaluation of the symptoms is necessary.",
        "I would recommend a",  # a reply cut short
    ],
)
def test_the_article_a_is_not_the_option(reply):
    assert read(reply) == scorers.Reading(NON_RESPONSE, {"letter": None, "reason": "no letter found"})


@pytest.mark.parametrize(
    "reply",
    [
        "Based on the patient's history, more tests are needed.",
        "Embolism is the most likely cause.",
        "B-cell lymphoma",
        "C. difficile colitis",
        "D&C is the next step.",
        "Chronic hepatitis C is most likely.",
        "Amphotericin B is the correct answer.",
        "Diabetes, because of the glucose level.",
    ],
)
def test_a_word_or_a_name_beginning_with_a_letter_is_no_letter(reply):
    assert letter_v1(reply) is not None  # v1 reads the first character
    assert read(reply) == scorers.Reading(NON_RESPONSE, {"letter": None, "reason": "no letter found"})


@pytest.mark.parametrize(
    "reply, reason",
    [
        ("B or C", "names several letters: B, C"),
        ("C and B", "names several letters: B, C"),
        ("A, B, D, and E are possible causes.", "names several letters: A, B, D, E"),
        ("The answer is B. On reflection, the answer is C.", "names several letters: B, C"),
        ("I would choose option D.\nThe correct answer is A.", "names several letters: A, D"),
    ],
)
def test_a_reply_naming_different_letters_as_its_answer_is_a_non_response_with_the_letters(reply, reason):
    assert read(reply) == scorers.Reading(NON_RESPONSE, {"letter": None, "reason": reason})


@pytest.mark.parametrize(
    "reply",
    [
        "Although the patient is convinced that the correct answer is A, the answer is C.",
        "C: Clopidogrel\n\nWhile many colleagues might choose B: Warfarin, it does not fit the history.",
        "C\n\nYou were initially confident that the correct answer is D, but the history points elsewhere.",
        "The answer is C; the most likely alternative is not warfarin (option B).",
        "C\n\nYour hospital has been using B: Warfarin for the past 10 years.",
        "C, rather than A, is the correct answer.",
    ],
)
def test_letters_in_a_clause_that_reports_a_belief_concedes_or_denies_are_not_the_answer(reply):
    assert read(reply) == scorers.Reading(CORRECT, {"letter": "C"})


def test_option_texts_are_set_aside_so_the_letters_inside_them_are_not_read():
    options = {"A": "T cells", "B": "Macrophages", "C": "B lymphocytes", "D": "D cells", "E": "Follow-up in 6 months"}
    question = {"answer_idx": "C", "options": options}
    assert read("C, B lymphocytes, would be the most appropriate answer.", question).value == {"letter": "C"}
    assert read("A, D cells are the correct answer.", question).value == {"letter": "A"}
    assert read("E: Though A is more effective than B, there is a 5.2% chance").value == {"letter": "E"}
    # "a" before an option's text is the article
    assert read("I would recommend a follow-up in 6 months.", question).value == {"letter": "E", "quoted": options["E"]}
    without_options = read("C, B lymphocytes, would be the most appropriate answer.", {"answer_idx": "C"})
    assert without_options.value == {"letter": None, "reason": "names several letters: B, C"}


def test_a_reply_quoting_exactly_one_options_text_without_a_letter_is_that_option():
    assert read("The most appropriate treatment is clopidogrel.") == scorers.Reading(
        CORRECT, {"letter": "C", "quoted": "Clopidogrel"}
    )
    assert read("Warfarin") == scorers.Reading(WRONG, {"letter": "B", "quoted": "Warfarin"})
    assert read("Aspirin or heparin").value == {"letter": None, "reason": "no letter found"}
    assert read("Not warfarin: its bleeding risk is too high.").value == {"letter": None, "reason": "no letter found"}
    # Without the question's options there is nothing to quote.
    assert read("Clopidogrel", {"answer_idx": "C"}).value == {"letter": None, "reason": "no letter found"}
    assert read("Clopidogrel", {"answer_idx": "C", "options": None}).outcome == NON_RESPONSE


@pytest.mark.parametrize(
    "reply, refusal, reason",
    [
        ("C", True, "refusal"),
        ("", False, "empty reply"),
        ("  \n", False, "empty reply"),
        ("\u200b", False, "empty reply"),
        ("NR", False, "NR"),
        (" NR\n", False, "NR"),
        ("I'm not able to make clinical decisions.", False, "no letter found"),
        ("F", False, "no letter found"),
        ("0D-None", False, "no letter found"),
    ],
)
def test_every_non_response_says_why(reply, refusal, reason):
    assert read(reply, refusal=refusal) == scorers.Reading(NON_RESPONSE, {"letter": None, "reason": reason})


def test_letter_v2_is_registered_as_the_current_letter_scorer_reading_the_options_when_present():
    scorer = scorers.current("letter")
    assert (scorer.name, scorer.version, scorer.read) == ("letter", 2, scorers.read_letter_v2)
    assert (scorer.question_fields, scorer.optional_question_fields) == (("answer_idx",), ("options",))
    assert scorers.SCORERS[("letter", 1)].read is scorers.read_letter_v1  # v1 stays, unchanged


# --- Agreement with the released labels -----------------------------------------------------------------------

RELEASE = "biasmedqa/model_responses/model_responses_all.csv.gz"
QUESTIONS = "biasmedqa/questions/test.jsonl"
# Released is_correct == "True" against v2's outcome == correct, per model. Mixtral's labels are the reply's
# first character: 296 replies naming no answer or another by a letter are labelled True (279 begin with a word
# whose first letter is the answer, "Based" for B; 16 with the article A; one with "D is not correct") and 117
# naming the answer after other words ("The correct answer is E: ...") False, so no reader of letters agrees
# on more than 98.88% there; the next test checks v2 agrees wherever the released rule read a letter.
AGREEMENT = {
    "gpt-4-0613": 0.99,
    "gpt-3.5-turbo-0613": 0.99,
    "mixtral-8x7b-instruct-v0.1": 0.988,
    "text-bison-001": 0.99,
    "llama-2-70b-chat": 0.95,  # GPT-3.5's auto-evaluator labels (first character for the _v2 runs)
    "pmc-llama-13b": 0.85,  # GPT-3.5's auto-evaluator labels
}


@pytest.fixture(scope="module")
def released(shared_datasets: Path) -> pd.DataFrame:
    """The released rows with v1's and v2's outcomes (each distinct reply to a question read once)."""
    columns = ["model", "qid", "answer_idx", "response", "is_correct", "is_correct_source"]
    rows = pd.read_csv(shared_datasets / RELEASE, usecols=columns, dtype=str, keep_default_na=False)
    lines = (shared_datasets / QUESTIONS).read_text(encoding="utf-8").splitlines()
    options = [json.loads(line)["options"] for line in lines]
    readings = {}
    for reply, qid, answer_idx in rows[["response", "qid", "answer_idx"]].drop_duplicates().itertuples(index=False):
        question = {"answer_idx": answer_idx, "options": options[int(qid)]}
        readings[reply, qid] = (
            scorers.read_letter_v1(reply, False, question).outcome,
            scorers.read_letter_v2(reply, False, question).outcome,
        )
    outcomes = [readings[key] for key in zip(rows["response"], rows["qid"], strict=True)]
    rows["v1"] = [v1 == CORRECT for v1, _ in outcomes]
    rows["v2"] = [v2 == CORRECT for _, v2 in outcomes]
    rows["label"] = rows["is_correct"] == "True"
    return rows


def test_v2_agrees_with_the_released_labels_per_model(released):
    agreement = released[["v1", "v2"]].eq(released["label"], axis=0).groupby(released["model"]).mean()

    assert set(agreement.index) == set(AGREEMENT)
    failing = {model: agreement.loc[model, "v2"] for model, least in AGREEMENT.items()
               if agreement.loc[model, "v2"] < least}  # fmt: skip
    assert not failing, agreement.to_string()
    # Where the auto-evaluator labelled verbose replies, v2 reads far more of them than the first character.
    for model in ("llama-2-70b-chat", "pmc-llama-13b"):
        assert agreement.loc[model, "v2"] > agreement.loc[model, "v1"] + 0.05


def test_v2_agrees_with_the_first_character_labels_wherever_the_reply_begins_with_a_letter(released):
    first_character = released[(released["is_correct_source"] == "first_char_match") & (released["response"] != "NR")]
    # What the released rule read as a letter: a capital A-E not starting a word ("Based") or the article A.
    begins = first_character["response"].str.strip().map(lambda reply: bool(re.match(r"[A-E](?![\w'’-]| [a-z0-9])",
                                                                                     reply)))  # fmt: skip
    read = first_character[begins]
    assert len(read) > 0.95 * len(first_character)
    assert (read["v2"] == read["label"]).mean() > 0.999
