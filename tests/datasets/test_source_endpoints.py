"""A model source's engine endpoint: created with the source, kept in step on every save (form, API, admin)."""

import importlib

import pytest
from django.apps import apps

from datasets.models import AnswerSource
from engine.models import Endpoint
from tests.api.client import client_for

pytestmark = pytest.mark.django_db

migration = importlib.import_module("datasets.migrations.0010_source_endpoints")


def model_source(name="GPT", **fields):
    values = {"kind": AnswerSource.Kind.MODEL, "model_name": "m", "base_url": "http://127.0.0.1:9/v1", **fields}
    return AnswerSource.objects.create(name=name, **values)


def mirrored(endpoint: Endpoint) -> dict:
    return {field: getattr(endpoint, field) for field in migration.MIRRORED}


def test_a_model_source_gets_an_endpoint_with_its_url_key_variable_timeout_and_limits():
    source = model_source(concurrency=3, rate_limit_per_minute=90, request_timeout_seconds=15, api_key_env="")

    assert mirrored(source.endpoint) == {
        "base_url": "http://127.0.0.1:9/v1", "api_key_env": "", "request_timeout_seconds": 15,
        "concurrency": 3, "rate_limit_per_minute": 90,
    }  # fmt: skip
    assert source.endpoint.name == "GPT"
    assert AnswerSource.objects.get(pk=source.pk).endpoint_id == source.endpoint_id


def test_sources_without_a_model_url_have_none_until_they_get_one():
    physicians = AnswerSource.objects.create(name="Physicians", kind=AnswerSource.Kind.PHYSICIAN)
    unset = model_source(name="Later", base_url="")

    assert physicians.endpoint is None and unset.endpoint is None
    unset.base_url = "http://127.0.0.1:8/v1"
    unset.save()
    assert AnswerSource.objects.get(pk=unset.pk).endpoint.base_url == "http://127.0.0.1:8/v1"


def test_every_save_writes_the_same_endpoint_and_a_rename_renames_it():
    source = model_source()
    endpoint_id = source.endpoint_id

    source.name, source.concurrency, source.rate_limit_per_minute = "GPT 2", 7, None
    source.save(update_fields=["name", "concurrency", "rate_limit_per_minute"])

    endpoint = Endpoint.objects.get()
    assert endpoint.id == endpoint_id
    assert (endpoint.name, endpoint.concurrency, endpoint.rate_limit_per_minute) == ("GPT 2", 7, None)


def test_an_unrelated_endpoint_of_the_same_name_is_left_alone():
    other = Endpoint.objects.create(name="GPT", base_url="http://127.0.0.1:7/v1", concurrency=1)

    source = model_source()

    assert source.endpoint.name == f"GPT (source {source.pk})"
    other.refresh_from_db()
    assert (other.base_url, other.concurrency) == ("http://127.0.0.1:7/v1", 1)


def test_the_api_edits_the_endpoint_through_the_source_and_shows_no_new_field(coordinator):
    source = model_source()
    client = client_for(coordinator)

    response = client.patch(f"/api/answer-sources/{source.id}/", {"concurrency": 9, "rate_limit_per_minute": 30},
                            format="json")  # fmt: skip

    assert response.status_code == 200, response.content
    assert "endpoint" not in response.json()
    assert (Endpoint.objects.get().concurrency, Endpoint.objects.get().rate_limit_per_minute) == (9, 30)


def test_the_admin_form_edits_the_endpoint_through_the_source(admin_client):
    source = model_source()
    form = {
        "name": "GPT", "kind": "model", "description": "", "parameters": "{}", "base_url": "http://127.0.0.1:6/v1",
        "model_name": "m", "api_key_env": "", "temperature": "0", "max_tokens": "10", "system_prompt": "",
        "prompt_template": "{question}", "request_timeout_seconds": "20", "concurrency": "2",
        "rate_limit_per_minute": "", "top_logprobs": "", "structured_output": "json_schema",
    }  # fmt: skip
    page = admin_client.get(f"/admin/datasets/answersource/{source.id}/change/").content.decode()
    assert 'name="structured_output"' in page and "answer generation never sends it" in page

    response = admin_client.post(f"/admin/datasets/answersource/{source.id}/change/", form)

    assert response.status_code == 302, response.content.decode()[:2000]
    assert AnswerSource.objects.get(pk=source.pk).structured_output == "json_schema"
    assert mirrored(Endpoint.objects.get()) == {
        "base_url": "http://127.0.0.1:6/v1", "api_key_env": "", "request_timeout_seconds": 20, "concurrency": 2,
        "rate_limit_per_minute": None,
    }  # fmt: skip


def test_the_migration_creates_one_endpoint_per_model_source_and_its_reverse_removes_them():
    first, second = model_source(concurrency=2), model_source(name="Local", base_url="http://127.0.0.1:5/v1")
    AnswerSource.objects.create(name="Physicians", kind=AnswerSource.Kind.PHYSICIAN)
    # As before the migration: the sources without endpoints, and a hand-made endpoint holding one's name.
    AnswerSource.objects.update(endpoint=None)
    Endpoint.objects.all().delete()
    kept = Endpoint.objects.create(name="Local", base_url="http://127.0.0.1:4/v1")

    migration.create_endpoints(apps, None)

    first.refresh_from_db(), second.refresh_from_db()
    assert mirrored(first.endpoint) == {field: getattr(first, field) for field in migration.MIRRORED}
    assert first.endpoint.concurrency == 2
    assert second.endpoint.name == f"Local (source {second.pk})"
    assert second.endpoint.base_url == "http://127.0.0.1:5/v1"
    assert AnswerSource.objects.filter(endpoint__isnull=False).count() == 2

    migration.delete_endpoints(apps, None)

    assert list(Endpoint.objects.all()) == [kept]
    assert not AnswerSource.objects.filter(endpoint__isnull=False).exists()
