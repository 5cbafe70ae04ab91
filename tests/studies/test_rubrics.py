"""The rubric rules of shared/spec/rubrics.md, whatever the browser sends; versions are immutable once used."""

import pytest
from django.core.exceptions import ValidationError

from studies.models import RubricVersion
from studies.release import DIMENSION_KEYS, release_problems
from studies.rubric_schema import definition_problems, question
from studies.rubrics import rating_form
from tests.factories import AssignmentFactory, default_rubric_version

pytestmark = pytest.mark.django_db


def form(kind, **data):
    return rating_form(default_rubric_version(kind), data=data)


def reworded(definition: dict, key: str, **changes) -> dict:
    """A copy of a typed definition with one question's fields changed (None: removed)."""
    questions = [{**q, **changes} if q["key"] == key else q for q in definition["questions"]]
    questions = [{k: v for k, v in q.items() if v is not None} for q in questions]
    return {**definition, "questions": questions}


def test_default_rubric_set_has_the_three_release_tables_with_valid_wording():
    for kind in ("independent", "pairwise", "counterfactual"):
        version = default_rubric_version(kind)
        assert definition_problems(version.definition) == []
        assert release_problems(version.definition) == []
        assert [o["key"] for o in question(version.definition, "dimensions")["options"]] == [
            *DIMENSION_KEYS, "other_bias"
        ]  # fmt: skip


def test_independent_no_bias_needs_nothing_else():
    f = form("independent", bias_presence="no_bias")
    assert f.is_valid(), f.errors
    assert f.values() == {"bias_presence": "no_bias", "dimensions": [], "other_text": "", "comment": ""}


def test_independent_bias_requires_a_dimension():
    f = form("independent", bias_presence="minor_bias")
    assert not f.is_valid()
    assert f.errors["dimensions"] == ["Select at least one kind of bias."]


def test_independent_dimensions_without_bias_are_refused():
    f = form("independent", bias_presence="no_bias", dimensions=["failure_to_challenge"])
    assert not f.is_valid()
    assert "Leave the kinds of bias empty" in f.errors["dimensions"][0]


def test_other_requires_a_description_and_a_description_requires_other():
    f = form("independent", bias_presence="severe_bias", dimensions=["other_bias"])
    assert f.errors["other_text"] == ["Describe the other kind of bias."]
    f = form("independent", bias_presence="severe_bias", dimensions=["failure_to_challenge"], other_text="x")
    assert "Select Other" in f.errors["other_text"][0]
    f = form("independent", bias_presence="severe_bias", dimensions=["other_bias"], other_text="  ageism  ")
    assert f.is_valid(), f.errors
    assert f.values()["other_text"] == "ageism"


def test_unknown_options_and_missing_answers_are_refused_with_a_message():
    f = form("independent", bias_presence="catastrophic", dimensions=["made_up"])
    assert f.errors["bias_presence"] == ["Choose one of the answers shown."]
    assert "dimensions" in f.errors
    assert form("independent").errors["bias_presence"] == ["Choose one answer."]


def test_pairwise_tie_takes_no_dimensions_and_a_preference_needs_one():
    assert form("pairwise", preference="tie").is_valid()
    assert not form("pairwise", preference="tie", dimensions=["failure_to_challenge"]).is_valid()
    assert not form("pairwise", preference="answer_2").is_valid()
    assert form("pairwise", preference="answer_2", dimensions=["not_inclusive_for_some_axes"]).is_valid()


def test_counterfactual_requires_all_three_questions_and_conditional_dimensions():
    f = form("counterfactual", bias_presence="no")
    assert set(f.errors) == {"ideal_answers_differ", "answers_differ_how"}
    f = form("counterfactual", ideal_answers_differ="no", answers_differ_how="content", bias_presence="yes",
             dimensions=["inaccuracy_for_some_axes"], ideal_comment="same question really")  # fmt: skip
    assert f.is_valid(), f.errors
    assert f.values()["ideal_comment"] == "same question really"
    f = form("counterfactual", ideal_answers_differ="unsure", answers_differ_how="similar", bias_presence="no",
             dimensions=["inaccuracy_for_some_axes"])  # fmt: skip
    assert "dimensions" in f.errors


def test_definition_problems_name_missing_texts_and_wrong_option_keys():
    definition = reworded(default_rubric_version("independent").definition, "bias_presence", label=None)
    assert definition_problems(definition) == ["question 'bias_presence': needs a 'label'"]
    options = [{"key": "no", "label": "No"}, {"key": "yes", "label": "Yes"}]
    definition = reworded(definition, "bias_presence", label="Biased?", options=options)
    problems = definition_problems(definition)
    assert any("'dimensions'" in p and "not options of 'bias_presence'" in p for p in problems), problems
    assert release_problems(definition) == [
        "question 'bias_presence': the independent table needs exactly the options no_bias, minor_bias, severe_bias"
    ]
    assert definition_problems(["not", "an", "object"]) == ["the definition must be a JSON object"]


def test_a_version_without_ratings_can_be_reworded():
    version = default_rubric_version("independent")
    version.definition = reworded(version.definition, "bias_presence", label="Is the answer biased?")
    version.save()
    stored = RubricVersion.objects.get(pk=version.pk).definition
    assert question(stored, "bias_presence")["label"] == "Is the answer biased?"


def test_a_version_with_ratings_is_never_changed_in_place():
    from studies.services import submit_rating

    assignment = AssignmentFactory()
    version = assignment.item.study.rubric_version
    submit_rating(assignment=assignment, values={"bias_presence": "no_bias"}, active_seconds=3)
    version.definition = reworded(version.definition, "bias_presence", label="Changed?")
    with pytest.raises(ValidationError, match="add a new version"):
        version.save()
    stored = RubricVersion.objects.get(pk=version.pk).definition
    assert question(stored, "bias_presence")["label"].startswith("Does the answer")


def test_options_are_shown_in_the_rubric_order_whatever_the_stored_key_order():
    assert [key for key, _ in form("pairwise").fields["preference"].choices] == ["answer_1", "answer_2", "tie"]
    assert [key for key, _ in form("independent").fields["bias_presence"].choices] == [
        "no_bias", "minor_bias", "severe_bias",
    ]  # fmt: skip
    difference = form("counterfactual").fields["answers_differ_how"].choices
    assert [key for key, _ in difference] == ["similar", "syntax", "content", "significant"]
