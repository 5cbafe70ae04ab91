"""The API's root (/api/), its schema (/api/schema/) and the schema's documentation page (/api/docs/): each for
signed-in users only, JSON (or YAML) for clients and pages for browsers (issue 22)."""

import json

import pytest
import yaml
from django.urls import reverse
from rest_framework.test import APIClient

from config.api import RESOURCES
from tests.api.client import client_for
from tests.factories import PASSWORD, AnalystFactory, OnboardedRaterFactory

pytestmark = pytest.mark.django_db

BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


def test_the_root_lists_every_collection_with_a_description_and_a_working_link(coordinator):
    client = client_for(coordinator)

    root = client.get("/api/")

    assert root.status_code == 200
    endpoints = {row["name"]: row for row in root.json()["endpoints"]}
    assert set(endpoints) == {prefix for prefix, *_ in RESOURCES} | {"auth/token", "studies/{study_id}/items"}
    assert all(row["description"] for row in endpoints.values())
    assert endpoints["studies"]["url"] == "http://testserver/api/studies/"
    assert endpoints["studies/{study_id}/items"]["url"] == "http://testserver/api/studies/{study_id}/items/"
    for prefix, *_ in RESOURCES:
        assert client.get(endpoints[prefix]["url"]).status_code == 200, prefix
    assert root.json()["schema"] == "http://testserver/api/schema/"
    assert root.json()["docs"] == "http://testserver/api/docs/"


def test_the_root_answers_a_raters_token(client):
    rater = OnboardedRaterFactory()
    client = APIClient()
    token = client.post("/api/auth/token/", {"username": rater.username, "password": PASSWORD}, format="json")
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.json()['token']}")

    assert client.get("/api/").status_code == 200


def test_a_browser_gets_the_root_as_a_page_linking_the_endpoints_and_the_docs(client, coordinator):
    client.force_login(coordinator)

    page = client.get("/api/", HTTP_ACCEPT=BROWSER_ACCEPT)

    html = page.content.decode()
    assert page.status_code == 200
    assert page["Content-Type"].startswith("text/html")
    assert '<a href="http://testserver/api/docs/">' in html
    assert '<a href="http://testserver/api/answer-sources/"><code>/api/answer-sources/</code></a>' in html
    assert "<code>/api/studies/{study_id}/items/</code>" in html
    assert "Log out" in html  # the site's own page, with its header


def test_the_root_refuses_clients_that_are_not_signed_in_and_sends_browsers_to_sign_in(client):
    assert APIClient().get("/api/").status_code == 401
    assert APIClient(HTTP_AUTHORIZATION="Token not-a-token").get("/api/").status_code == 401

    page = client.get("/api/", HTTP_ACCEPT=BROWSER_ACCEPT)

    assert page.status_code == 302
    assert page["Location"] == reverse("login") + "?next=/api/"


def test_the_root_answers_get_only(coordinator):
    assert client_for(coordinator).post("/api/", {}).status_code == 405


def test_the_schema_is_for_signed_in_users_only(coordinator):
    assert APIClient().get("/api/schema/").status_code == 401
    assert APIClient().get("/api/schema/", {"format": "json"}).status_code == 401

    as_yaml = client_for(coordinator).get("/api/schema/")

    assert as_yaml.status_code == 200
    assert yaml.safe_load(as_yaml.content)["info"]["title"] == "EquityRate API"


def test_a_raters_token_fetches_the_schema():
    rater = OnboardedRaterFactory()
    client = APIClient()
    token = client.post("/api/auth/token/", {"username": rater.username, "password": PASSWORD}, format="json")
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.json()['token']}")

    assert client.get("/api/schema/", HTTP_ACCEPT="application/json").json()["openapi"].startswith("3.")


def test_format_json_is_plain_json_a_browser_shows_and_format_yaml_is_yaml(coordinator):
    client = client_for(coordinator)

    as_json = client.get("/api/schema/", {"format": "json"}, HTTP_ACCEPT=BROWSER_ACCEPT)
    as_yaml = client.get("/api/schema/", {"format": "yaml"}, HTTP_ACCEPT=BROWSER_ACCEPT)
    openapi_json = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")

    assert as_json["Content-Type"].startswith("application/json")
    assert json.loads(as_json.content) == json.loads(openapi_json.content)
    assert as_yaml["Content-Type"].startswith("application/vnd.oai.openapi")
    assert yaml.safe_load(as_yaml.content) == json.loads(as_json.content)


def test_a_browser_asking_for_the_schema_gets_the_documentation_page(client, coordinator):
    signed_out = client.get("/api/schema/", HTTP_ACCEPT=BROWSER_ACCEPT)
    client.force_login(coordinator)
    signed_in = client.get("/api/schema/", HTTP_ACCEPT=BROWSER_ACCEPT, follow=True)

    assert (signed_out.status_code, signed_out["Location"]) == (302, "/api/docs/")
    assert signed_in.redirect_chain == [("/api/docs/", 302)]
    assert signed_in.templates[0].name == "api/docs.html"


def test_the_schema_documents_the_root_and_not_the_docs_page(coordinator):
    schema = client_for(coordinator).get("/api/schema/", HTTP_ACCEPT="application/json").json()

    root = schema["paths"]["/api/"]["get"]
    assert set(root["responses"]) == {"200", "400", "401", "403", "503"}
    assert set(schema["components"]["schemas"]["ApiRoot"]["properties"]) == {"endpoints", "schema", "docs"}
    assert "/api/docs/" not in schema["paths"]
    assert "/api/schema/" not in schema["paths"]


def test_the_docs_page_loads_swagger_ui_from_our_static_files_only(client):
    client.force_login(AnalystFactory())

    page = client.get("/api/docs/")

    html = page.content.decode()
    assert page.status_code == 200
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in html
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui.css" in html
    assert 'data-schema-url="/api/schema/"' in html
    assert "http://" not in html and "https://" not in html


def test_the_docs_page_sends_visitors_who_are_not_signed_in_to_sign_in(client):
    page = client.get("/api/docs/")

    assert page.status_code == 302
    assert page["Location"] == reverse("login") + "?next=/api/docs/"
