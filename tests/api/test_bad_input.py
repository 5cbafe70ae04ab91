"""Bad input to the API is a 400/404/409 with a message, never a 500, and nothing of it is stored
(issue 10, finding 8): ids that are not numbers, text PostgreSQL cannot store, JSON too deep, settings that
are not a JSON object, exports that cannot be written."""

import pytest

from datasets.models import AnswerSource
from studies.models import Rating
from studies.services import submit_rating
from tests.api.client import client_for
from tests.factories import AnswerSourceFactory, AssignmentFactory, OnboardedRaterFactory, PairwiseItemFactory

pytestmark = pytest.mark.django_db

NO_BIAS = {"bias_presence": "no_bias"}


def post_json(client, url, body: str):
    """A raw JSON body, as a client would send it (escapes such as \\u0000 and \\ud800 stay as written)."""
    return client.post(url, body, content_type="application/json")


@pytest.mark.parametrize(
    ("method", "url"),
    [
        ("post", "/api/assignments/abc/rating/"),
        ("get", "/api/studies/abc/export/"),
        ("get", "/api/studies/abc/"),
        ("get", "/api/assignments/1.5/"),
        ("post", "/api/generation-jobs/abc/cancel/"),
        ("patch", "/api/answer-sources/abc/"),
    ],
)
def test_an_id_that_is_not_a_number_is_404(coordinator, method, url):
    for user in (coordinator, AssignmentFactory().rater.user):
        response = getattr(client_for(user), method)(url, {}, format="json")
        assert response.status_code == 404, (user, url)


def test_a_nul_in_a_rating_comment_is_400_and_nothing_is_stored():
    assignment = AssignmentFactory()
    url = f"/api/assignments/{assignment.id}/rating/"

    response = post_json(
        client_for(assignment.rater.user), url, '{"values": {"bias_presence": "no_bias", "comment": "a\\u0000b"}}'
    )

    assert response.status_code == 400
    assert "values.comment contains a NUL character" in response.json()["detail"]
    assert not Rating.objects.exists()


def test_a_lone_surrogate_in_a_rating_comment_is_400_and_nothing_is_stored():
    assignment = AssignmentFactory()
    url = f"/api/assignments/{assignment.id}/rating/"

    response = post_json(
        client_for(assignment.rater.user), url, '{"values": {"bias_presence": "no_bias", "comment": "\\ud800"}}'
    )

    assert response.status_code == 400
    assert "values.comment contains an unpaired surrogate" in response.json()["detail"]
    assert not Rating.objects.exists()


def test_the_rating_form_itself_refuses_text_the_database_cannot_store():
    from studies.rubrics import rating_form
    from tests.factories import default_rubric_version

    form = rating_form(default_rubric_version("independent"), data={**NO_BIAS, "comment": "\ud800"})

    assert not form.is_valid()
    assert form.errors["comment"] == [
        "This text contains an unpaired surrogate (e.g. \\ud800), which is not valid Unicode."
    ]


def test_a_comment_over_the_text_cap_is_400_through_the_api(settings):
    settings.RATING_TEXT_MAX_CHARS = 50
    assignment = AssignmentFactory()

    response = client_for(assignment.rater.user).post(
        f"/api/assignments/{assignment.id}/rating/", {"values": {**NO_BIAS, "comment": "z" * 51}}, format="json"
    )

    assert response.status_code == 400
    assert response.json() == {"values": {"comment": ["Ensure this value has at most 50 characters (it has 51)."]}}
    assert not Rating.objects.exists()


def test_deeply_nested_json_is_400_not_a_crash():
    assignment = AssignmentFactory()
    url = f"/api/assignments/{assignment.id}/rating/"
    client = client_for(assignment.rater.user)

    very_deep = post_json(client, url, '{"values": {"comment": ' + "[" * 100_000 + "]" * 100_000 + "}}")
    deep = post_json(client, url, '{"values": {"comment": ' + "[" * 40 + "]" * 40 + "}}")

    assert (very_deep.status_code, deep.status_code) == (400, 400)
    assert "nested more than 32 levels deep" in very_deep.json()["detail"]
    assert "nested more than 32 levels deep" in deep.json()["detail"]


@pytest.mark.parametrize("seconds", ["nan", "inf", "-inf", "1e999"])
def test_active_seconds_that_are_not_finite_are_400(seconds):
    assignment = AssignmentFactory()

    response = client_for(assignment.rater.user).post(
        f"/api/assignments/{assignment.id}/rating/", {"values": NO_BIAS, "active_seconds": seconds}, format="json"
    )

    assert response.status_code == 400
    assert "active_seconds" in response.json()
    assert not Rating.objects.exists()


def test_answer_source_parameters_with_a_nul_are_400_as_json_and_as_form_data(coordinator):
    source = AnswerSourceFactory()
    client = client_for(coordinator)
    url = f"/api/answer-sources/{source.id}/"

    as_json = client.generic("PATCH", url, '{"parameters": {"top_p": "\\u0000"}}', content_type="application/json")
    as_form = client.patch(url, 'parameters={"top_p": "\\u0000"}', content_type="application/x-www-form-urlencoded")

    assert as_json.status_code == 400
    assert "parameters.top_p contains a NUL character" in as_json.json()["detail"]
    assert as_form.status_code == 400
    assert as_form.json() == {"parameters": ["Not storable: top_p contains a NUL character (\\u0000)."]}
    source.refresh_from_db()
    assert source.parameters == {}


@pytest.mark.parametrize("depth", [40, 100_000])
def test_answer_source_parameters_nested_too_deep_as_form_text_are_400(coordinator, depth):
    source = AnswerSourceFactory()

    response = client_for(coordinator).patch(
        f"/api/answer-sources/{source.id}/",
        "parameters=" + "%5B" * depth + "%5D" * depth,
        content_type="application/x-www-form-urlencoded",
    )

    assert response.status_code == 400
    assert "nested more than 32 levels deep" in response.json()["parameters"][0]


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        ("parameters=null", "application/x-www-form-urlencoded"),
        ('{"parameters": null}', "application/json"),
        ('{"parameters": [1, 2]}', "application/json"),
        ('{"parameters": "top_p=0.9"}', "application/json"),
    ],
)
def test_answer_source_parameters_must_be_a_json_object(coordinator, body, content_type):
    source = AnswerSourceFactory(parameters={"top_p": 0.9})

    response = client_for(coordinator).generic(
        "PATCH", f"/api/answer-sources/{source.id}/", body, content_type=content_type
    )

    assert response.status_code == 400
    assert "parameters" in response.json()
    source.refresh_from_db()
    assert source.parameters == {"top_p": 0.9}


def test_a_source_whose_export_name_another_source_has_is_refused(coordinator):
    AnswerSourceFactory(name="Src X")

    response = client_for(coordinator).post("/api/answer-sources/", {"name": "Src-X", "kind": "model"}, format="json")

    assert response.status_code == 400
    assert response.json() == {"name": ["The source 'Src X' has the same name in exports ('Src-X')."]}
    assert not AnswerSource.objects.filter(name="Src-X").exists()


def test_an_export_whose_sources_share_a_column_is_409_with_the_reason(coordinator):
    item = PairwiseItemFactory(answer_1__source__name="Src X", answer_2__source__name="Src-X")
    assignment = AssignmentFactory(item=item, rater=OnboardedRaterFactory().rater_profile)
    values = {"preference": "tie", "dimensions": [], "other_text": "", "comment": ""}
    submit_rating(assignment=assignment, values=values, active_seconds=1)

    response = client_for(coordinator).get(f"/api/studies/{item.study_id}/export/")

    assert response.status_code == 409
    assert "'Src X' and 'Src-X' would share the column" in response.json()["detail"]


@pytest.mark.parametrize("query", ["search=%00", "search=a%00b", "dataset=1&%00=x"])
def test_a_nul_in_the_query_string_is_400_with_a_message(coordinator, query):
    response = client_for(coordinator).get(f"/api/questions/?{query}")

    assert response.status_code == 400
    assert b"NUL character" in response.content


@pytest.mark.parametrize(
    "body",
    ['{"username": ' + "[" * 100_000 + "]" * 100_000 + "}", '{"username": "a\\u0000", "password": "x"}',
     '{"username": "\\ud800", "password": "x"}'],
)  # fmt: skip
def test_the_token_endpoint_refuses_bodies_the_database_cannot_take_with_400(body):
    response = post_json(client_for(), "/api/auth/token/", body)

    assert response.status_code == 400
