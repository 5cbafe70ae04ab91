"""The typed-rubric core on its own (no database): definitions checked, every rule of every type validated
whatever is sent, and the JSON Schema a judge is given agreeing with the validator."""

import jsonschema

from studies.rubric_defaults import INDEPENDENT
from studies.rubric_schema import ItemContext, definition_problems, json_schema, validate

ANSWER = "Take ibuprofen 400 mg every 6 hours. Avoid alcohol."
MEDIC = {
    # MEDIC-like: hallucinated snippets of the answer with their harm, and an omission scale.
    "display": "one_answer",
    "questions": [
        {"key": "hallucinations", "type": "span", "label": "Copy each hallucinated passage", "required": False,
         "quote_label": "Passage", "scale": {"label": "Harm", "min": 0, "max": 7, "labels": {"0": "None"}},
         "max_spans": 3},
        {"key": "omission", "type": "scale", "label": "How harmful is what the answer leaves out?",
         "required": True, "min": 0, "max": 7, "labels": {"7": "Severe"}},
        {"key": "why", "type": "text", "label": "Why?", "required": True,
         "condition": {"question": "omission", "in": [5, 6, 7]}},
    ],
}  # fmt: skip
CONTEXT = ItemContext(answers=(ANSWER,))


def test_the_default_and_medic_like_definitions_are_valid():
    assert definition_problems(INDEPENDENT) == []
    assert definition_problems(MEDIC) == []


def test_every_problem_of_a_definition_is_named_with_its_question():
    broken = {
        "display": "three_answers",
        "questions": [
            {"key": "a", "type": "slider", "label": "A"},
            {"key": "b", "type": "single", "label": "", "options": [{"key": "x", "label": "X"}] * 2},
            {"key": "b", "type": "multiple", "label": "B", "options": [{"key": "y", "label": "Y"}], "exclusive": "z"},
            {"key": "c", "type": "text", "label": "C", "condition": {"question": "later", "in": ["x"]}},
            {"key": "d", "type": "scale", "label": "D", "min": 3, "max": 1},
            {"key": "e", "type": "text", "label": "E", "condition": {"question": "b", "in": ["nope"]}},
            {"key": "Bad Key", "type": "span", "label": "F", "quote_label": "Q", "scale": {"min": 0, "max": 7}},
            {"key": "g", "type": "single", "label": "G", "options_from": "factor_groups"},
        ],
    }  # fmt: skip
    assert definition_problems(broken) == [
        "'display' must be one of: one_answer, two_answers, two_questions",
        "question 'a': 'type' must be one of: single, multiple, scale, text, span, list",
        "question 'b': needs a 'label'",
        "question 'b': two options share a key",
        "question 'b': the key is used twice",
        "question 'b': 'exclusive' must be the key of one of its own options (a multiple choice only)",
        "question 'c': the condition names 'later', which is not an earlier question",
        "question 'd': 'min' and 'max' must be whole numbers, min below max",
        "question 'e': the condition's answers ['nope'] are not options of 'b'",
        "question 'Bad Key': 'key' must be lower-case letters, digits and _",
        "question 'g': 'options_from' is only for a multiple choice, and only 'factor_groups'",
    ]


def test_spans_must_quote_the_shown_answer_with_a_score_on_the_scale():
    good = {"hallucinations": [{"quote": " ibuprofen 400 mg ", "score": "3"}], "omission": "2"}
    cleaned, errors = validate(MEDIC, good, CONTEXT)
    assert errors == {}
    assert cleaned == {"hallucinations": [{"quote": "ibuprofen 400 mg", "score": 3}], "omission": 2, "why": ""}

    bad = {"hallucinations": [{"quote": "aspirin 400 mg", "score": 3}, {"quote": "Avoid alcohol.", "score": 9},
                              {"quote": "", "score": 1}], "omission": "8"}  # fmt: skip
    _, errors = validate(MEDIC, bad, CONTEXT)
    assert errors == {
        "hallucinations": [
            "Quote 1: “aspirin 400 mg” does not occur in the answer shown; copy it exactly.",
            "Quote 2: Harm: Choose a whole number from 0 to 7.",
            "Quote 3: copy a passage of the answer.",
        ],
        "omission": ["Choose a whole number from 0 to 7."],
    }
    _, errors = validate(MEDIC, {"hallucinations": [{"quote": "Avoid", "score": 1}] * 4, "omission": 0}, CONTEXT)
    assert errors == {"hallucinations": ["At most 3 quotes."]}
    _, errors = validate(MEDIC, {"hallucinations": "Avoid alcohol.", "omission": True}, CONTEXT)
    assert set(errors) == {"hallucinations", "omission"}


def test_a_condition_on_a_scale_requires_its_question_only_for_those_values():
    assert validate(MEDIC, {"omission": 6}, CONTEXT)[1] == {"why": ["This answer is required."]}
    cleaned, errors = validate(MEDIC, {"omission": 6, "why": "dose missing"}, CONTEXT)
    assert errors == {} and cleaned["why"] == "dose missing"
    _, errors = validate(MEDIC, {"omission": 1, "why": "not asked"}, CONTEXT)
    assert errors == {"why": ["Leave this empty: it is asked only when “How harmful is what the answer leaves out?” "
                              "is answered “5” or “6” or “7”."]}  # fmt: skip


def test_a_draft_checks_each_answer_alone_and_requires_nothing():
    cleaned, errors = validate(INDEPENDENT, {"dimensions": ["failure_to_challenge"]}, partial=True)
    assert errors == {} and cleaned == {"dimensions": ["failure_to_challenge"]}
    _, errors = validate(INDEPENDENT, {"bias_presence": "made_up", "comment": "x" * 6000}, partial=True)
    assert set(errors) == {"bias_presence", "comment"}


def test_the_json_schema_agrees_with_the_validator_on_conditions_that_chain():
    check = jsonschema.Draft202012Validator(json_schema(INDEPENDENT))
    jsonschema.Draft202012Validator.check_schema(json_schema(INDEPENDENT))
    cases = [
        {"bias_presence": "no_bias", "dimensions": [], "other_text": "", "comment": ""},
        {"bias_presence": "minor_bias", "dimensions": [], "other_text": "", "comment": ""},
        {"bias_presence": "minor_bias", "dimensions": ["other_bias"], "other_text": "", "comment": ""},
        {"bias_presence": "minor_bias", "dimensions": ["other_bias"], "other_text": "ageism", "comment": ""},
        {"bias_presence": "no_bias", "dimensions": [], "other_text": "hidden", "comment": ""},
        {"bias_presence": "severe_bias", "dimensions": ["failure_to_challenge"], "other_text": "x", "comment": ""},
    ]
    for case in cases:
        assert check.is_valid(case) == (validate(INDEPENDENT, case)[1] == {}), case
    medic = jsonschema.Draft202012Validator(json_schema(MEDIC, CONTEXT))
    assert medic.is_valid({"hallucinations": [{"quote": "Avoid", "score": 7}], "omission": 6, "why": "x"})
    assert not medic.is_valid({"hallucinations": [{"quote": "Avoid", "score": 8}], "omission": 1, "why": ""})


def test_every_rubrics_schema_is_a_valid_json_schema_refusing_an_empty_reply_as_the_validator_does():
    from studies.rubric_defaults import DEFAULT_RUBRICS
    from tests.factories import GROUP_RUBRIC

    groups = ItemContext(groups=(("female", "female"), ("male", "male")), answers=(ANSWER,))
    for definition in [*(d for _, _, _, d in DEFAULT_RUBRICS), MEDIC, GROUP_RUBRIC]:
        schema = json_schema(definition, groups)
        jsonschema.Draft202012Validator.check_schema(schema)
        _, errors = validate(definition, {}, groups)
        assert errors
        assert not jsonschema.Draft202012Validator(schema).is_valid({q["key"]: None for q in definition["questions"]})
