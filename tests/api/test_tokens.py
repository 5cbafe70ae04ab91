"""API tokens expire after API_TOKEN_TTL_HOURS, are revoked at logout, and the token endpoint is rate-limited."""

from datetime import timedelta

import pytest
import yaml
from django.test import Client
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient
from rest_framework.throttling import ScopedRateThrottle

from tests.factories import PASSWORD, AnalystFactory

pytestmark = pytest.mark.django_db


def obtain_token(user, client=None, **extra):
    client = client or APIClient()
    return client.post("/api/auth/token/", {"username": user.username, "password": PASSWORD}, format="json", **extra)


def with_token(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def test_a_token_older_than_its_lifetime_is_refused_and_the_endpoint_issues_a_new_one(settings):
    settings.API_TOKEN_TTL_HOURS = 24
    user = AnalystFactory()
    old = obtain_token(user).json()["token"]
    assert with_token(old).get("/api/studies/").status_code == 200
    Token.objects.filter(key=old).update(created=timezone.now() - timedelta(hours=24, seconds=1))

    expired = with_token(old).get("/api/studies/")
    fresh = obtain_token(user, client=with_token(old))  # still sending the expired token: no matter

    assert expired.status_code == 401
    assert expired.json()["detail"] == "Token expired: ask for a new one with POST /api/auth/token/."
    assert fresh.status_code == 200 and fresh.json()["token"] != old
    assert with_token(fresh.json()["token"]).get("/api/studies/").status_code == 200
    assert with_token(old).get("/api/studies/").status_code == 401


def test_a_token_within_its_lifetime_is_returned_again(settings):
    settings.API_TOKEN_TTL_HOURS = 24
    user = AnalystFactory()
    first = obtain_token(user).json()["token"]
    Token.objects.filter(key=first).update(created=timezone.now() - timedelta(hours=23))
    assert obtain_token(user).json()["token"] == first


def test_logging_out_revokes_the_api_token():
    user = AnalystFactory()
    key = obtain_token(user).json()["token"]
    browser = Client()
    browser.force_login(user)

    response = browser.post("/accounts/logout/")

    assert response.status_code == 302
    assert not Token.objects.filter(user=user).exists()
    assert with_token(key).get("/api/studies/").status_code == 401


def test_logging_out_of_the_admin_revokes_the_api_token():
    from django.contrib.auth import get_user_model

    admin = get_user_model().objects.create_superuser("root", "root@example.org", PASSWORD)
    key = obtain_token(admin).json()["token"]
    browser = Client()
    browser.force_login(admin)

    response = browser.post("/admin/logout/")

    assert response.status_code == 302 and response["Location"] == "/admin/login/"
    assert with_token(key).get("/api/studies/").status_code == 401


def test_the_token_endpoint_takes_a_limited_number_of_requests_per_address(monkeypatch):
    monkeypatch.setattr(ScopedRateThrottle, "THROTTLE_RATES", {"auth-token": "3/minute"})
    user = AnalystFactory()

    answers = [obtain_token(user) for _ in range(4)]
    elsewhere = obtain_token(user, REMOTE_ADDR="198.51.100.8")

    assert [answer.status_code for answer in answers] == [200, 200, 200, 429]
    assert int(answers[3]["Retry-After"]) > 0
    assert elsewhere.status_code == 200


def test_the_schema_documents_the_token_endpoints_answers():
    client = APIClient()
    client.force_authenticate(AnalystFactory())
    schema = yaml.safe_load(client.get("/api/schema/").content)
    operation = schema["paths"]["/api/auth/token/"]["post"]
    assert set(operation["responses"]) == {"200", "400", "429", "503"}
    token = schema["components"]["schemas"]["AuthToken"]
    assert token["properties"]["token"]["type"] == "string"
