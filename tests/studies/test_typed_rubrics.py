"""EquityMedQA's three rubrics as typed questions: the same wording as the legacy definitions, and the typed
validator accepts, stores and refuses exactly as the three form classes it replaced (tests/studies/
legacy_rating_forms.py) on a corpus of submissions, valid ones and each rule broken once."""

import pytest
from django.apps import apps
from django.test import override_settings

from studies import rubric_defaults, rubric_legacy
from studies.models import RubricVersion
from studies.rubric_schema import definition_problems
from studies.rubrics import rating_form
from tests.factories import AssignmentFactory, default_rubric_version
from tests.studies.legacy_rating_forms import FORMS

KINDS = ["independent", "pairwise", "counterfactual"]
TYPED = {"independent": rubric_defaults.INDEPENDENT, "pairwise": rubric_defaults.PAIRWISE,
         "counterfactual": rubric_defaults.COUNTERFACTUAL}  # fmt: skip


@pytest.mark.parametrize("kind", KINDS)
def test_the_typed_defaults_say_word_for_word_what_the_legacy_definitions_said(kind):
    legacy = rubric_legacy.LEGACY[kind]
    assert rubric_legacy.from_legacy(kind, legacy) == TYPED[kind]
    assert rubric_legacy.to_legacy(kind, TYPED[kind]) == legacy
    assert definition_problems(TYPED[kind]) == []


def test_a_legacy_definition_without_its_optional_label_gets_the_label_the_form_showed():
    legacy = {k: v for k, v in rubric_legacy.COUNTERFACTUAL.items() if k != "ideal_comment_label"}
    typed = rubric_legacy.from_legacy("counterfactual", legacy)
    assert typed["questions"][1] == {"key": "ideal_comment", "type": "text", "label": "Comments (optional)",
                                     "required": False, "rows": 2}  # fmt: skip


@pytest.mark.django_db
def test_the_migration_rewrites_stored_legacy_definitions_in_place_even_with_ratings():
    assignment = AssignmentFactory()
    version = assignment.item.study.rubric_version
    from studies.services import submit_rating

    submit_rating(assignment=assignment, values={"bias_presence": "no_bias"}, active_seconds=1)
    RubricVersion.objects.filter(pk=version.pk).update(definition=rubric_legacy.INDEPENDENT)  # as stored before

    assert rubric_legacy.convert_stored(apps.get_model("studies", "RubricVersion")) == 1

    version.refresh_from_db()
    assert version.definition == rubric_defaults.INDEPENDENT
    assert rubric_legacy.convert_stored(RubricVersion) == 0  # typed definitions are left alone
    rubric_legacy.restore_stored(RubricVersion)  # the migration's reverse
    version.refresh_from_db()
    assert version.definition == rubric_legacy.INDEPENDENT


def test_converting_refuses_a_definition_whose_wording_would_change():
    class Versions:  # a stand-in manager: one legacy row whose wording the typed form cannot hold
        class objects:  # noqa: N801
            @staticmethod
            def select_related(*_):
                return Versions.objects

            @staticmethod
            def order_by(*_):
                legacy = {**rubric_legacy.INDEPENDENT, "unknown_text": "lost on conversion"}
                row = type("Row", (), {"pk": 7, "definition": legacy, "rubric": type("R", (), {"kind": "independent"})})
                return [row]

    with pytest.raises(ValueError, match="rubric version 7: converting would change its wording"):
        rubric_legacy.convert_stored(Versions)


DIMS = ["failure_to_challenge", "stereotypical_language_characterization"]
LONG = "x" * 21  # over the cap set below


def broken_rules(gate: str, bias: str, no_bias: str, base: dict) -> list[dict]:
    """Each rule of the kinds of bias broken once, given the gate question and its answers."""
    with_bias = {**base, gate: bias}
    without = {**base, gate: no_bias}
    return [
        {**base},  # the gate missing
        {**base, gate: "made_up"},
        {**base, gate: ["a", "list"]},
        with_bias,  # bias without a kind
        {**with_bias, "dimensions": ["made_up"]},
        {**with_bias, "dimensions": "failure_to_challenge"},  # not a list
        {**with_bias, "dimensions": ["other_bias"]},  # Other without a description
        {**with_bias, "dimensions": ["other_bias"], "other_text": "   "},
        {**with_bias, "dimensions": DIMS, "other_text": "described but not chosen"},
        {**without, "dimensions": DIMS},
        {**without, "other_text": "no bias, yet described"},
        {**without, "dimensions": ["other_bias"], "other_text": "both"},
        {**without, "comment": LONG},
        {**without, "comment": "nul\x00inside"},
        {**with_bias, "dimensions": ["other_bias"], "other_text": LONG},
    ]


def valid(gate: str, bias: str, no_bias: str, base: dict) -> list[dict]:
    return [
        {**base, gate: no_bias},
        {**base, gate: no_bias, "comment": "  fine  "},
        {**base, gate: bias, "dimensions": DIMS},
        {**base, gate: bias, "dimensions": list(reversed(DIMS)), "comment": "order as shown"},
        {**base, gate: bias, "dimensions": [*DIMS, "other_bias"], "other_text": "  ageism  "},
        {**base, gate: no_bias, "unknown_key": "ignored"},
    ]


COUNTERFACTUAL_BASE = {"ideal_answers_differ": "no", "answers_differ_how": "content"}
CORPUS = {
    "independent": valid("bias_presence", "severe_bias", "no_bias", {})
    + valid("bias_presence", "minor_bias", "no_bias", {})
    + broken_rules("bias_presence", "minor_bias", "no_bias", {}),
    "pairwise": valid("preference", "answer_1", "tie", {})
    + valid("preference", "answer_2", "tie", {})
    + broken_rules("preference", "answer_2", "tie", {}),
    "counterfactual": valid("bias_presence", "yes", "no", COUNTERFACTUAL_BASE)
    + valid("bias_presence", "yes", "no", {**COUNTERFACTUAL_BASE, "ideal_comment": "same really"})
    + broken_rules("bias_presence", "yes", "no", COUNTERFACTUAL_BASE)
    + [
        {"bias_presence": "no"},  # the two other questions missing
        {**COUNTERFACTUAL_BASE, "ideal_answers_differ": "maybe", "bias_presence": "no"},
        {**COUNTERFACTUAL_BASE, "answers_differ_how": "", "bias_presence": "no"},
        {**COUNTERFACTUAL_BASE, "bias_presence": "no", "ideal_comment": LONG},
    ],
}


@pytest.mark.django_db
@override_settings(RATING_TEXT_MAX_CHARS=20)
@pytest.mark.parametrize("kind", KINDS)
def test_the_typed_validator_accepts_stores_and_refuses_as_the_legacy_forms(kind):
    version = default_rubric_version(kind)
    legacy_definition = rubric_legacy.LEGACY[kind]
    accepted = refused = 0
    for data in CORPUS[kind]:
        old = FORMS[kind](data=data, definition=legacy_definition)
        new = rating_form(version, data=data)
        assert new.is_valid() == old.is_valid(), (data, old.errors, new.errors)
        if old.is_valid():
            accepted += 1
            assert new.values() == old.values(), data
            assert list(new.values()) == list(old.values())  # the same keys in the same order
        else:
            refused += 1
            assert set(new.errors) == set(old.errors), (data, old.errors, new.errors)
            for key, messages in new.errors.items():
                # The same first message, and nothing the old form did not say. (The old form also said "Select
                # at least one kind of bias." after "Select a valid choice ..." for an unknown kind of bias.)
                assert messages[0] == old.errors[key][0], (data, key, old.errors[key], messages)
                assert set(messages) <= set(old.errors[key]), (data, key, old.errors[key], messages)
    assert accepted >= 10 and refused >= 15
