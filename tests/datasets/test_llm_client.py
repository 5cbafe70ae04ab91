"""The chat-completions client against a local server speaking the same protocol."""

import re

import pytest

from config.key_hosts import parse_key_hosts
from datasets.llm_client import KeyNotAllowed, LLMError, MissingAPIKey, api_key_for, build_messages, chat_completion
from tests.llm_server import FakeLLM


def ask(server_url: str, question: str, **options):
    messages = build_messages(question=question, prompt_template="{question}")
    return chat_completion(base_url=server_url, model="m", messages=messages, **options)


def test_a_completion_returns_text_usage_latency_and_the_prompt_sent():
    with FakeLLM(latency=0.05) as server:
        messages = build_messages(question="Is ibuprofen safe?", prompt_template="Q: {question}\nA:",
                                  system_prompt="You are a careful clinician.")  # fmt: skip
        completion = chat_completion(base_url=server.base_url, model="test-model", messages=messages,
                                     temperature=0, max_tokens=64)  # fmt: skip

    assert completion.text == "Generated answer to: Q: Is ibuprofen safe?\nA:"
    assert completion.finish_reason == "stop" and not completion.is_refusal
    assert completion.latency_ms >= 50
    assert completion.usage["completion_tokens"] == 6
    sent = server.requests[0]
    assert sent["messages"][0] == {"role": "system", "content": "You are a careful clinician."}
    assert (sent["model"], sent["temperature"], sent["max_tokens"]) == ("test-model", 0, 64)


def test_refusals_are_returned_and_flagged_not_raised():
    with FakeLLM() as server:
        completion = ask(server.base_url, "REFUSE this")
    assert completion.is_refusal and completion.finish_reason == "content_filter" and completion.text == ""


def test_log_probabilities_are_requested_and_returned():
    with FakeLLM() as server:
        completion = ask(server.base_url, "Yes or no?", logprobs=True, top_logprobs=2)
    assert server.requests[0]["logprobs"] is True and server.requests[0]["top_logprobs"] == 2
    assert completion.logprobs[0]["top_logprobs"][1] == {"token": "No", "logprob": -2.4}


@pytest.mark.parametrize("status, retryable", [(429, True), (503, True), (400, False), (401, False)])
def test_http_errors_carry_the_servers_message_and_whether_to_retry(status, retryable):
    with FakeLLM(failures=1, failure_status=status) as server, pytest.raises(LLMError) as error:
        ask(server.base_url, "q")
    assert error.value.status == status and error.value.retryable is retryable
    assert f"simulated failure ({status})" in str(error.value)


def test_time_outs_and_unreachable_servers_are_retryable():
    with FakeLLM(latency=1.0) as server, pytest.raises(LLMError, match="no answer within 0.2 s") as error:
        ask(server.base_url, "q", timeout=0.2)
    assert error.value.retryable
    with pytest.raises(LLMError, match="cannot reach") as error:
        ask("http://127.0.0.1:9/v1", "q", timeout=2)
    assert error.value.retryable


def test_api_keys_come_from_the_named_environment_variable(monkeypatch, settings):
    settings.MODEL_KEY_HOSTS = parse_key_hosts("TEST_MODEL_API_KEY=127.0.0.1")
    url = "http://127.0.0.1:8080/v1/chat/completions"
    monkeypatch.setenv("TEST_MODEL_API_KEY", "sk-test")
    assert api_key_for(variable="TEST_MODEL_API_KEY", url=url) == "sk-test"
    assert api_key_for(variable="", url=url) is None
    monkeypatch.delenv("TEST_MODEL_API_KEY")
    with pytest.raises(MissingAPIKey, match="TEST_MODEL_API_KEY"):
        api_key_for(variable="TEST_MODEL_API_KEY", url=url)


def test_the_key_is_sent_as_a_bearer_token_to_a_host_its_variable_is_bound_to(monkeypatch, settings):
    settings.MODEL_KEY_HOSTS = parse_key_hosts("TEST_MODEL_API_KEY=127.0.0.1")
    monkeypatch.setenv("TEST_MODEL_API_KEY", "sk-test")
    with FakeLLM() as server:
        ask(server.base_url, "q", api_key_env="TEST_MODEL_API_KEY")
    assert server.received[0][2]["Authorization"] == "Bearer sk-test"


@pytest.mark.parametrize(
    "bindings, message",
    [
        ("", "TEST_MODEL_API_KEY may not be sent anywhere: MODEL_KEY_HOSTS has no entry for it"),
        ("OTHER_API_KEY=127.0.0.1", "TEST_MODEL_API_KEY may not be sent anywhere"),
        ("TEST_MODEL_API_KEY=api.openai.com", "TEST_MODEL_API_KEY may be sent only to api.openai.com"),
        ("TEST_MODEL_API_KEY=127.0.0.1:1", "may be sent only to 127.0.0.1:1 (MODEL_KEY_HOSTS), not to 127.0.0.1:"),
        ("TEST_MODEL_API_KEY=localhost", "may be sent only to localhost"),
    ],
)
def test_a_key_is_never_sent_to_a_host_its_variable_is_not_bound_to(monkeypatch, settings, bindings, message):
    settings.MODEL_KEY_HOSTS = parse_key_hosts(bindings)
    monkeypatch.setenv("TEST_MODEL_API_KEY", "sk-test")
    with FakeLLM() as server, pytest.raises(KeyNotAllowed, match=re.escape(message)) as error:
        ask(server.base_url, "q", api_key_env="TEST_MODEL_API_KEY")
    assert not server.received  # nothing at all was sent
    assert not error.value.retryable


def test_a_redirect_is_not_followed_so_the_key_stays_with_the_host_it_was_bound_to(monkeypatch, settings):
    """urllib would re-send the Authorization header to the redirect's target (as a GET)."""
    settings.MODEL_KEY_HOSTS = parse_key_hosts("TEST_MODEL_API_KEY=127.0.0.1")
    monkeypatch.setenv("TEST_MODEL_API_KEY", "sk-test")
    with FakeLLM() as elsewhere:
        origin = elsewhere.base_url.removesuffix("/v1")
        with FakeLLM(redirect_to=origin) as server, pytest.raises(LLMError, match="redirects to") as error:
            ask(server.base_url, "q", api_key_env="TEST_MODEL_API_KEY")
    assert error.value.status == 302 and not error.value.retryable
    assert "Redirects are not followed" in str(error.value)
    assert len(server.received) == 1 and not elsewhere.received
