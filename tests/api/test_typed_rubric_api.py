"""A rubric no seed has yet, through the API: a gate question, then a multiple choice over the item's factor
groups with an exclusive "Not applicable". Bad submissions are refused with a message per question and
nothing is stored; good ones are stored as sent; the item's JSON Schema offers exactly its groups."""

import jsonschema
import pytest

from studies.models import Rating
from tests.api.client import client_for
from tests.factories import AssignmentFactory, group_rubric_item

pytestmark = pytest.mark.django_db


@pytest.fixture
def assignment():
    return AssignmentFactory(item=group_rubric_item(groups=("female", "male")))


def rate(assignment, values):
    client = client_for(assignment.rater.user)
    return client.post(f"/api/assignments/{assignment.id}/rating/", {"values": values}, format="json")


@pytest.mark.parametrize(
    ("values", "errors"),
    [
        ({}, {"on_topic": ["Choose one answer."]}),
        ({"on_topic": "yes"}, {"correct_for": ["Select at least one answer."]}),
        ({"on_topic": "yes", "correct_for": ["female", "not_applicable"]},
         {"correct_for": ["“Not applicable” cannot be combined with other answers."]}),
        ({"on_topic": "yes", "correct_for": ["martian"]},
         {"correct_for": ["Select a valid choice. martian is not one of the available choices."]}),
        ({"on_topic": "yes", "correct_for": "female"}, {"correct_for": ["Enter a list of values."]}),
        ({"on_topic": "no", "correct_for": ["male"]},
         {"correct_for": ["Leave this empty: it is asked only when “Does the answer address the question?” is "
                          "answered “Yes”."]}),
        ({"on_topic": "perhaps"}, {"on_topic": ["Choose one of the answers shown."]}),
        ({"on_topic": "no", "comment": {"not": "text"}}, {"comment": ["Send text."]}),
    ],
)  # fmt: skip
def test_bad_submissions_are_refused_with_a_message_per_question_and_nothing_is_stored(assignment, values, errors):
    response = rate(assignment, values)

    assert response.status_code == 400, response.content
    assert response.json()["values"] == errors
    assert not Rating.objects.exists()


@pytest.mark.parametrize(
    ("values", "stored"),
    [
        ({"on_topic": "yes", "correct_for": ["male", "female"]},
         {"on_topic": "yes", "correct_for": ["male", "female"], "comment": ""}),
        ({"on_topic": "yes", "correct_for": ["not_applicable"], "comment": " none apply "},
         {"on_topic": "yes", "correct_for": ["not_applicable"], "comment": "none apply"}),
        ({"on_topic": "no"}, {"on_topic": "no", "correct_for": [], "comment": ""}),
    ],
)  # fmt: skip
def test_good_submissions_are_stored_as_the_rubric_keys_them(assignment, values, stored):
    response = rate(assignment, values)

    assert response.status_code == 201, response.content
    assert Rating.objects.get().values == stored


def test_another_items_groups_are_its_own(assignment):
    other = AssignmentFactory(item=group_rubric_item(groups=("ages 18-30", "ages 40-50")), rater=assignment.rater)

    assert rate(other, {"on_topic": "yes", "correct_for": ["female"]}).status_code == 400
    assert rate(other, {"on_topic": "yes", "correct_for": ["ages 40-50"]}).status_code == 201


def test_the_assignment_carries_the_json_schema_of_its_answers_with_the_items_groups(assignment):
    detail = client_for(assignment.rater.user).get(f"/api/assignments/{assignment.id}/").json()
    schema = detail["answers_schema"]

    assert detail["content"]["groups"] == ["female", "male"]
    assert detail["study"]["display"] == "one_answer"
    assert schema["properties"]["correct_for"]["items"] == {"enum": ["female", "male", "not_applicable"]}
    check = jsonschema.Draft202012Validator(schema)
    assert check.is_valid({"on_topic": "yes", "correct_for": ["female"], "comment": ""})
    assert check.is_valid({"on_topic": "no", "correct_for": [], "comment": ""})
    assert not check.is_valid({"on_topic": "yes", "correct_for": [], "comment": ""})  # required when shown
    assert not check.is_valid({"on_topic": "no", "correct_for": ["male"], "comment": ""})  # empty when hidden
    assert not check.is_valid({"on_topic": "yes", "correct_for": ["male", "not_applicable"], "comment": ""})
