"""Rubric questions of type `list` (rubric_schema): entries of typed fields (a quote of the answer shown, a text,
a scale, a number), none or several per answer, checked by the one validator, asked of judges by the JSON Schema,
and shown on the rating form as rows of inputs (ListWidget) read back into the list; and `part`, the rubric as a
judge asking some of its questions sees it."""

import jsonschema
import pytest
from django.http import QueryDict

from studies.rubric_schema import ItemContext, definition_problems, json_schema, part, part_problems, validate
from studies.rubrics import RatingForm

ANSWER = "Take ibuprofen 400 mg every 6 hours. Avoid alcohol. Antibiotics cure the flu."
CONTEXT = ItemContext(answers=(ANSWER,))
HARM_LABELS = {"0": "none", "3": "medium", "7": "life-threatening"}
FINDINGS = {
    "key": "findings", "type": "list", "label": "Harmful sentences", "item_label": "Finding", "max_items": 2,
    "fields": [
        {"key": "snippet", "type": "quote", "label": "Snippet", "required": True},
        {"key": "note", "type": "text", "label": "Note", "max_chars": 40},
        {"key": "harm", "type": "scale", "label": "Harm", "required": True, "min": 0, "max": 7, "labels": HARM_LABELS},
        {"key": "confidence", "type": "number", "label": "Confidence", "min": 0, "max": 1},
    ],
}  # fmt: skip
RUBRIC = {
    "display": "one_answer",
    "questions": [
        FINDINGS,
        {"key": "visit", "type": "single", "label": "Visit?", "required": True,
         "options": [{"key": "yes", "label": "Yes"}, {"key": "no", "label": "No"}]},
        {"key": "why", "type": "text", "label": "Why a visit?", "condition": {"question": "visit", "in": ["yes"]}},
    ],
}  # fmt: skip
FOUND = {"snippet": "Antibiotics cure the flu.", "note": "Wrong.", "harm": 4, "confidence": 0.9}


def errors_of(findings) -> list[str]:
    return validate(RUBRIC, {"findings": findings, "visit": "no"}, CONTEXT)[1].get("findings", [])


def test_the_definition_with_a_list_question_is_valid_and_a_broken_one_names_each_problem():
    assert definition_problems(RUBRIC) == []
    broken = {"display": "one_answer", "questions": [{
        "key": "l", "type": "list", "label": "L", "max_items": 0,
        "fields": [
            {"key": "a", "type": "quote", "label": "A", "max_chars": 0},
            {"key": "a", "type": "number", "label": "B", "min": 1, "max": 0},
            {"key": "c", "type": "slider", "label": "C"},
            {"key": "d", "type": "scale", "label": "D", "min": 0, "max": 2, "labels": {"5": "x"}},
        ],
    }]}  # fmt: skip
    assert definition_problems(broken) == [
        "question 'l': needs an 'item_label' (what one entry is called)",
        "question 'l': 'max_items' must be a whole number from 1",
        "question 'l': field 'a': 'max_chars' must be a whole number from 1 (a quote or text field only)",
        "question 'l': field 'a': the key is used twice",
        "question 'l': field 'a': 'min' and 'max' must be numbers, min below max",
        "question 'l': field 'c': 'type' must be one of: quote, text, scale, number",
        "question 'l': field 'd': 'labels' must map numbers from 0 to 2 to texts",
    ]
    gated = {"key": "z", "type": "text", "label": "Z", "condition": {"question": "findings", "in": [1]}}
    conditioned = {**RUBRIC, "questions": [*RUBRIC["questions"], gated]}
    assert definition_problems(conditioned) == ["question 'z': a condition cannot depend on a list question"]


def test_good_entries_are_stored_cleaned_with_every_field():
    sent = [{**FOUND, "snippet": "  Antibiotics cure the flu. "}, {"snippet": "Avoid alcohol.", "harm": "0",
                                                                   "confidence": "0.25"}]  # fmt: skip
    cleaned, errors = validate(RUBRIC, {"findings": sent, "visit": "no"}, CONTEXT)
    assert errors == {}
    assert cleaned["findings"] == [
        {"snippet": "Antibiotics cure the flu.", "note": "Wrong.", "harm": 4, "confidence": 0.9},
        {"snippet": "Avoid alcohol.", "note": "", "harm": 0, "confidence": 0.25},
    ]


def test_an_empty_list_is_allowed_unless_the_question_is_required():
    assert validate(RUBRIC, {"findings": [], "visit": "no"}, CONTEXT) == ({"findings": [], "visit": "no",
                                                                          "why": ""}, {})  # fmt: skip
    required = {**RUBRIC, "questions": [{**FINDINGS, "required": True}, *RUBRIC["questions"][1:]]}
    assert validate(required, {"findings": [], "visit": "no"}, CONTEXT)[1] == {"findings": ["Add at least one entry."]}


def test_a_quote_not_in_the_answer_is_refused_with_its_entry_and_field():
    assert errors_of([FOUND, {**FOUND, "snippet": "Antibiotics cure colds."}]) == [
        "Finding 2: Snippet: “Antibiotics cure colds.” does not occur in the answer shown; copy it exactly."
    ]


def test_numbers_and_scales_out_of_range_are_refused():
    assert errors_of([{**FOUND, "confidence": 1.5}, {**FOUND, "harm": 8}, {**FOUND, "confidence": "high"}]) == [
        "At most 2 entries (3 sent)."
    ]
    assert errors_of([{**FOUND, "confidence": 1.5}, {**FOUND, "harm": 8, "confidence": True}]) == [
        "Finding 1: Confidence: a number from 0 to 1.",
        "Finding 2: Harm: choose a whole number from 0 to 7.",
        "Finding 2: Confidence: a number from 0 to 1.",
    ]
    assert errors_of([{**FOUND, "confidence": float("nan")}]) == ["Finding 1: Confidence: a number from 0 to 1."]


def test_wrong_keys_missing_required_fields_and_long_texts_are_refused():
    assert errors_of([{**FOUND, "severity": 2}]) == [
        "Finding 1: 'severity' not among its fields (snippet, note, harm, confidence)."
    ]
    assert errors_of([{"note": "Something."}]) == ["Finding 1: Snippet: required.", "Finding 1: Harm: required."]
    assert errors_of([{**FOUND, "note": "x" * 41}]) == [
        "Finding 1: Note: Ensure this value has at most 40 characters (it has 41)."
    ]
    assert errors_of("Antibiotics") == ["Send a list of entries, each an object of its fields."]


def test_the_json_schema_of_a_list_question_is_an_array_of_objects_with_exactly_its_fields():
    schema = json_schema(RUBRIC, CONTEXT)
    assert schema["properties"]["findings"] == {
        "description": "Harmful sentences (a list of Finding entries, possibly empty)",
        "type": "array",
        "maxItems": 2,
        "items": {
            "type": "object",
            "properties": {
                "snippet": {"description": "Snippet (quoted verbatim from the answer)", "type": "string",
                            "maxLength": CONTEXT.text_max_chars, "minLength": 1},
                "note": {"description": "Note", "type": "string", "maxLength": 40},
                "harm": {"description": "Harm (0 = none; 3 = medium; 7 = life-threatening)", "type": "integer",
                         "minimum": 0, "maximum": 7, "x-labels": HARM_LABELS},
                "confidence": {"description": "Confidence", "type": ["number", "null"], "minimum": 0, "maximum": 1},
            },
            "required": ["snippet", "note", "harm", "confidence"],
            "additionalProperties": False,
        },
    }  # fmt: skip
    validator = jsonschema.Draft202012Validator(schema)
    assert validator.is_valid({"findings": [FOUND], "visit": "no", "why": ""})
    assert validator.is_valid({"findings": [], "visit": "no", "why": ""})
    assert not validator.is_valid({"findings": [{**FOUND, "extra": 1}], "visit": "no", "why": ""})
    assert not validator.is_valid({"findings": [{**FOUND, "confidence": 2}], "visit": "no", "why": ""})


def test_a_part_keeps_its_questions_in_order_with_the_conditions_between_them():
    assert part(RUBRIC, []) is RUBRIC
    assert part(RUBRIC, ["why", "visit"])["questions"] == RUBRIC["questions"][1:]
    assert part(RUBRIC, ["findings"]) == {"display": "one_answer", "questions": [FINDINGS]}
    assert part_problems(RUBRIC, ["why"]) == ["'why' is asked only after 'visit', which is not in the part: add it"]
    assert part_problems(RUBRIC, ["findings", "nope", "nope"]) == [
        "'nope' is not a question of the rubric (findings, visit, why)",
        "'nope' is not a question of the rubric (findings, visit, why)",
        "'nope' is named twice",
    ]
    with pytest.raises(ValueError, match="'why' is asked only after 'visit'"):
        part(RUBRIC, ["why"])


def form(data=None, initial=None) -> RatingForm:
    return RatingForm(data=data, initial=initial, definition=RUBRIC, context=CONTEXT)


def test_the_form_shows_stored_entries_and_empty_rows_and_reads_them_back():
    html = str(form(initial={"findings": [FOUND]})["findings"])
    assert 'name="findings-0-snippet"' in html and ">Antibiotics cure the flu.</textarea>" in html
    assert '<option value="4" selected>4</option>' in html and '<option value="7">7 life-threatening</option>' in html
    number = 'type="number" id="id_findings-0-confidence" name="findings-0-confidence" value="0.9" min="0" max="1"'
    assert number in html
    assert 'name="findings-1-snippet"' in html and 'name="findings-2-snippet"' not in html  # max_items 2
    assert "Quote the selected text" in html and html.count("<legend>Finding ") == 2

    posted = QueryDict(mutable=True)
    posted.update({"visit": "yes", "why": "Pain.", "findings-0-snippet": "Avoid alcohol.", "findings-0-note": "",
                   "findings-0-harm": "3", "findings-0-confidence": "0.5", "findings-1-snippet": " ",
                   "findings-1-note": "", "findings-1-harm": "", "findings-1-confidence": ""})  # fmt: skip
    bound = form(data=posted)
    assert bound.is_valid(), bound.errors
    assert bound.values() == {
        "findings": [{"snippet": "Avoid alcohol.", "note": "", "harm": 3, "confidence": 0.5}],
        "visit": "yes",
        "why": "Pain.",
    }
    again = str(form(initial=bound.values())["findings"])
    assert ">Avoid alcohol.</textarea>" in again and 'value="0.5"' in again


def test_the_form_refuses_a_quote_typed_wrong_and_says_which_entry():
    posted = QueryDict(mutable=True)
    posted.update({"visit": "no", "findings-0-snippet": "Aspirin cures all.", "findings-0-harm": "7"})
    bound = form(data=posted)
    assert not bound.is_valid()
    assert bound.errors["findings"] == [
        "Finding 1: Snippet: “Aspirin cures all.” does not occur in the answer shown; copy it exactly."
    ]


def test_a_draft_keeps_an_entry_still_being_filled_in_but_not_a_quote_of_another_text():
    half = [{"snippet": "Avoid alcohol.", "note": "", "harm": "", "confidence": ""}]
    assert validate(RUBRIC, {"findings": half}, CONTEXT, partial=True) == (
        {"findings": [{"snippet": "Avoid alcohol.", "note": "", "harm": None, "confidence": None}]}, {},
    )  # fmt: skip
    assert validate(RUBRIC, {"findings": half}, CONTEXT)[1]["findings"] == ["Finding 1: Harm: required."]
    typed = [{**half[0], "snippet": "Avoid alcoho"}, {"snippet": "Avoid whisky."}]
    assert validate(RUBRIC, {"findings": typed}, CONTEXT, partial=True)[1] == {
        "findings": ["Finding 2: Snippet: “Avoid whisky.” does not occur in the answer shown; copy it exactly."]
    }
