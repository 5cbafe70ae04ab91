"""The chat-completions client against a local server speaking the same protocol."""

import pytest

from datasets.llm_client import LLMError, MissingAPIKey, api_key_from_env, build_messages, chat_completion
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


def test_api_keys_come_from_the_named_environment_variable(monkeypatch):
    monkeypatch.setenv("TEST_MODEL_API_KEY", "sk-test")
    assert api_key_from_env("TEST_MODEL_API_KEY") == "sk-test"
    assert api_key_from_env("") is None
    monkeypatch.delenv("TEST_MODEL_API_KEY")
    with pytest.raises(MissingAPIKey, match="TEST_MODEL_API_KEY"):
        api_key_from_env("TEST_MODEL_API_KEY")
