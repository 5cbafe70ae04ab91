"""Signing in with a token, the pagination every list shares, and the published OpenAPI schema."""

import json

import pytest
import yaml
from rest_framework.test import APIClient

from datasets.models import Question, text_fingerprint
from tests.factories import PASSWORD, AnalystFactory, DatasetFactory, StudyFactory

pytestmark = pytest.mark.django_db


def questions(count: int):
    dataset = DatasetFactory()
    texts = [f"Question number {n}?" for n in range(count)]
    Question.objects.bulk_create(
        Question(dataset=dataset, external_id=str(n), text=text, text_hash=text_fingerprint(text))
        for n, text in enumerate(texts)
    )


def test_a_token_from_the_token_endpoint_authenticates_requests():
    analyst = AnalystFactory()
    study = StudyFactory()
    client = APIClient()

    token = client.post("/api/auth/token/", {"username": analyst.username, "password": PASSWORD}, format="json")
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.json()['token']}")
    response = client.get("/api/studies/")

    assert token.status_code == 200
    assert response.status_code == 200
    assert [row["id"] for row in response.json()["results"]] == [study.id]


def test_a_wrong_password_gets_no_token_and_a_wrong_token_is_401():
    analyst = AnalystFactory()
    client = APIClient()

    token = client.post("/api/auth/token/", {"username": analyst.username, "password": "guess"}, format="json")
    client.credentials(HTTP_AUTHORIZATION="Token not-a-token")

    assert token.status_code == 400
    assert "token" not in token.json()
    assert client.get("/api/studies/").status_code == 401


def test_lists_are_paginated_50_to_a_page(coordinator):
    questions(55)
    client = APIClient()
    client.force_authenticate(coordinator)

    first = client.get("/api/questions/").json()
    second = client.get(first["next"]).json()

    assert set(first) == {"count", "next", "previous", "results"}
    assert (first["count"], len(first["results"]), first["previous"]) == (55, 50, None)
    assert first["next"] == "http://testserver/api/questions/?page=2"
    assert (len(second["results"]), second["next"]) == (5, None)
    assert second["previous"] == "http://testserver/api/questions/"


def test_page_size_can_be_chosen_up_to_500(coordinator):
    questions(501)
    client = APIClient()
    client.force_authenticate(coordinator)

    small = client.get("/api/questions/", {"page_size": 10}).json()
    capped = client.get("/api/questions/", {"page_size": 10_000}).json()

    assert len(small["results"]) == 10
    assert len(capped["results"]) == 500
    assert capped["next"] is not None


def test_the_schema_is_openapi_3_with_the_main_paths():
    client = APIClient()
    client.force_authenticate(AnalystFactory())

    as_yaml = client.get("/api/schema/")
    as_json = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")

    schema = yaml.safe_load(as_yaml.content)
    assert as_yaml.status_code == 200
    assert schema["openapi"].startswith("3.")
    assert schema["info"]["title"] == "EquityRate API"
    assert json.loads(as_json.content)["paths"].keys() == schema["paths"].keys()
    for path in [
        "/api/auth/token/",
        "/api/datasets/",
        "/api/datasets/import/",
        "/api/import-jobs/{id}/",
        "/api/questions/",
        "/api/pairs/",
        "/api/answer-sources/",
        "/api/answers/",
        "/api/studies/",
        "/api/studies/{study_id}/items/",
        "/api/assignments/",
        "/api/assignments/{id}/rating/",
        "/api/ratings/",
        "/api/raters/",
    ]:
        assert path in schema["paths"], path
    assert "tokenAuth" in schema["components"]["securitySchemes"]
