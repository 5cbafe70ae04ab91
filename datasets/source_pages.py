"""A model source's connection test (datasets/DESIGN.md, "Source pages"): one request, as the source's settings
would send it, and what came back: the reply, the latency, and whether log-probabilities and structured output
did.

The request goes through the engine's client (engine/llm_client.py), so the key rules (MODEL_KEY_HOSTS, no
redirects) are the ones every job follows. A page request must not hang: the client's timeout bounds each socket
wait, and the whole call is also bounded here (a server that trickles bytes would otherwise hold the request).
"""

import json
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass

from engine import llm_client

from .models import AnswerSource

# At most this long for the whole test, whatever the source's own request timeout (a job's may be minutes).
TEST_TIMEOUT_SECONDS = 20.0
TEST_MAX_TOKENS = 64
TEST_PROMPT = 'Connection test: reply with the JSON object {"ok": true} and nothing else.'
TEST_SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}

# Threads for the pages' test calls: a call that overruns keeps running there (urllib cannot be stopped),
# bounded by its socket timeout, while the page answers at once.
_EXECUTOR = ThreadPoolExecutor(max_workers=4, thread_name_prefix="source-test")


@dataclass(frozen=True)
class ConnectionResult:
    ok: bool
    error: str = ""
    reply: str = ""
    model: str = ""
    latency_ms: int | None = None
    finish_reason: str = ""
    logprobs_asked: bool = False
    logprobs_returned: bool = False
    structured_asked: bool = False
    structured_returned: bool = False  # the reply's text is a JSON object (with "ok" when a schema was sent)


def response_format(structured_output: str) -> dict | None:
    """What a judge's request would send for this setting (studies/judges.py), with the test's small schema."""
    if structured_output == AnswerSource.StructuredOutput.JSON_OBJECT:
        return {"type": "json_object"}
    if structured_output == AnswerSource.StructuredOutput.JSON_SCHEMA:
        return {
            "type": "json_schema",
            "json_schema": {"name": "connection_test", "schema": TEST_SCHEMA, "strict": False},
        }
    return None


def is_structured(text: str, *, schema: bool) -> bool:
    """The reply is a JSON object (holding "ok" when the schema asked for it)."""
    try:
        value = json.loads(text)
    except ValueError:
        return False
    return isinstance(value, dict) and (not schema or "ok" in value)


def time_limit(source: AnswerSource, timeout: float = TEST_TIMEOUT_SECONDS) -> float:
    """The test waits for the source's own timeout, at most `timeout`."""
    return min(source.request_timeout_seconds, timeout)


def check_connection(source: AnswerSource, *, timeout: float = TEST_TIMEOUT_SECONDS) -> ConnectionResult:
    """Send one chat request with the source's model, key variable, temperature, system prompt, log-probability
    and structured-output settings; never raises for the server's faults (they are the result)."""
    if source.kind != AnswerSource.Kind.MODEL or not source.base_url:
        return ConnectionResult(ok=False, error="Only a model source with a base URL can be tested.")
    limit = time_limit(source, timeout)
    format_ = response_format(source.structured_output)
    messages = llm_client.build_messages(question=TEST_PROMPT, prompt_template="{question}",
                                         system_prompt=source.system_prompt)  # fmt: skip
    future = _EXECUTOR.submit(
        llm_client.chat_completion, base_url=source.base_url, model=source.model_name, messages=messages,
        temperature=source.temperature, max_tokens=min(source.max_tokens, TEST_MAX_TOKENS), timeout=limit,
        api_key_env=source.api_key_env, logprobs=source.logprobs, top_logprobs=source.top_logprobs,
        response_format=format_,
    )  # fmt: skip
    try:
        completion = future.result(timeout=limit + 1)
    except FutureTimeout:
        return ConnectionResult(ok=False, error=f"No answer within {limit:g} s: the server is slow or unreachable.")
    except llm_client.LLMError as error:
        return ConnectionResult(ok=False, error=str(error))
    return ConnectionResult(
        ok=True,
        reply=completion.text,
        model=completion.model,
        latency_ms=completion.latency_ms,
        finish_reason=completion.finish_reason,
        logprobs_asked=source.logprobs,
        logprobs_returned=bool(completion.logprobs),
        structured_asked=format_ is not None,
        structured_returned=format_ is not None
        and is_structured(
            completion.text, schema=source.structured_output == AnswerSource.StructuredOutput.JSON_SCHEMA
        ),
    )
