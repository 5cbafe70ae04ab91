"""The model-source pages (datasets/DESIGN.md, "Source pages"): list, create, edit and the connection test, against
a local chat-completions server (tests/llm_server.FakeLLM)."""

import socket
import threading
import time

import pytest
from django.urls import reverse

from datasets import source_pages
from datasets.models import AnswerSource
from engine.models import Endpoint
from tests.factories import AnalystFactory, AnswerSourceFactory
from tests.llm_server import FakeLLM

pytestmark = pytest.mark.django_db


def form_data(**fields):
    data = {"name": "Local Llama", "kind": "model", "description": "", "base_url": "http://127.0.0.1:9/v1",
            "model_name": "llama", "api_key_env": "", "request_timeout_seconds": "30", "concurrency": "2",
            "rate_limit_per_minute": "", "temperature": "0.2", "max_tokens": "256", "system_prompt": "",
            "prompt_template": "{question}", "top_logprobs": "", "structured_output": "none"}  # fmt: skip
    return {**data, **fields}


def test_the_list_links_each_source_and_the_new_source_page(client, coordinator):
    source = AnswerSourceFactory(name="Stand-in", base_url="http://127.0.0.1:9/v1", model_name="m")
    client.force_login(coordinator)

    page = client.get(reverse("datasets:sources")).content.decode()

    assert reverse("datasets:source", args=[source.pk]) in page and "Stand-in" in page
    assert reverse("datasets:source_create") in page


def test_only_coordinators_see_or_change_sources(client, physician):
    source = AnswerSourceFactory()
    for user in (physician, AnalystFactory()):
        client.force_login(user)
        assert client.get(reverse("datasets:sources")).status_code == 403
        assert client.post(reverse("datasets:source", args=[source.pk]), form_data()).status_code == 403
        assert client.post(reverse("datasets:source_test", args=[source.pk])).status_code == 403
    client.logout()
    assert client.get(reverse("datasets:source_create")).status_code == 302  # to the login page


def test_wrong_methods_are_refused(client, coordinator):
    source = AnswerSourceFactory()
    client.force_login(coordinator)
    assert client.post(reverse("datasets:sources")).status_code == 405
    assert client.get(reverse("datasets:source_test", args=[source.pk])).status_code == 405


def test_creating_a_source_saves_it_with_its_endpoint_and_opens_its_page(client, coordinator):
    client.force_login(coordinator)

    response = client.post(reverse("datasets:source_create"), form_data())

    source = AnswerSource.objects.get(name="Local Llama")
    assert response.status_code == 302 and response.url == reverse("datasets:source", args=[source.pk])
    assert (source.temperature, source.max_tokens, source.concurrency) == (0.2, 256, 2)
    assert Endpoint.objects.get(pk=source.endpoint_id).base_url == "http://127.0.0.1:9/v1"


def test_the_form_has_no_free_parameters_and_editing_keeps_stored_ones_read_only(client, coordinator):
    source = AnswerSourceFactory(name="Old", base_url="http://127.0.0.1:9/v1", parameters={"temperature": 0.9})
    client.force_login(coordinator)

    page = client.get(reverse("datasets:source", args=[source.pk])).content.decode()
    assert 'name="parameters"' not in page
    assert "Other parameters (not sent)" in page and "which win" in page

    response = client.post(reverse("datasets:source", args=[source.pk]), form_data(name="Old", temperature="0.4"))

    source.refresh_from_db()
    assert response.status_code == 302 and source.temperature == 0.4 and source.parameters == {"temperature": 0.9}


def test_a_key_variable_that_may_not_go_to_the_url_is_refused_and_no_key_is_ever_shown(
    client, coordinator, monkeypatch
):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-value")
    client.force_login(coordinator)

    response = client.post(reverse("datasets:source_create"), form_data(api_key_env="OPENAI_API_KEY"))

    assert response.status_code == 400 and "base_url" in response.context["form"].errors
    assert not AnswerSource.objects.exists()
    assert "sk-secret-value" not in response.content.decode()


def test_the_connection_test_shows_the_reply_latency_logprobs_and_structured_output(client, coordinator):
    with FakeLLM() as server:
        source = AnswerSourceFactory(name="Fake", base_url=server.base_url, model_name="fake", logprobs=True,
                                     top_logprobs=2, structured_output="json_schema")  # fmt: skip
        client.force_login(coordinator)

        response = client.post(reverse("datasets:source_test", args=[source.pk]))

    result = response.context["result"]
    assert response.status_code == 200 and result.ok
    assert result.latency_ms is not None and result.logprobs_returned and result.structured_returned
    page = response.content.decode()
    assert 'data-connection-result="ok"' in page and "yes, returned" in page and "the JSON asked for" in page
    sent = server.requests[-1]
    assert sent["logprobs"] is True and sent["response_format"]["type"] == "json_schema"
    assert sent["max_tokens"] == source_pages.TEST_MAX_TOKENS


def test_a_server_that_ignores_response_format_is_said_so(client, coordinator):
    with FakeLLM() as server:
        source = AnswerSourceFactory(base_url=server.base_url, model_name="fake", structured_output="json_object")
        result = source_pages.check_connection(source)

    assert result.ok and result.structured_asked and not result.structured_returned and not result.logprobs_asked


def test_an_unreachable_server_is_a_clear_failure(client, coordinator):
    source = AnswerSourceFactory(base_url="http://127.0.0.1:9/v1", model_name="m")
    client.force_login(coordinator)

    response = client.post(reverse("datasets:source_test", args=[source.pk]))

    page = response.content.decode()
    assert 'data-connection-result="failed"' in page and "cannot reach http://127.0.0.1:9/v1" in page


def test_a_server_that_never_answers_is_given_up_on_within_the_bound():
    """A server that accepts the connection and then says nothing: the test returns after its bound."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    accepted = []
    threading.Thread(target=lambda: accepted.append(listener.accept()), daemon=True).start()
    source = AnswerSource(kind="model", base_url=f"http://127.0.0.1:{listener.getsockname()[1]}/v1",
                          model_name="m", request_timeout_seconds=120)  # fmt: skip
    try:
        start = time.monotonic()
        result = source_pages.check_connection(source, timeout=0.5)
        elapsed = time.monotonic() - start
    finally:
        listener.close()

    assert not result.ok and "within 0.5 s" in result.error and elapsed < 3


def test_a_source_without_a_url_is_not_tested():
    result = source_pages.check_connection(AnswerSource(kind="physician"))
    assert not result.ok and "base URL" in result.error
