"""The one module that talks to language models: the OpenAI-compatible chat-completions protocol.

That protocol covers hosted APIs and local servers (vLLM, Ollama, llama.cpp server). Tests point it at a
local HTTP server that speaks the same protocol. Retries belong to the caller (a Celery task), which knows
its budget; this module only says whether an error is worth retrying.
"""

import http.client
import json
import os
import re
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field

RETRYABLE_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}


@dataclass
class Completion:
    text: str
    finish_reason: str
    model: str
    latency_ms: int
    usage: dict = field(default_factory=dict)
    logprobs: list | None = None
    response_id: str = ""

    @property
    def is_refusal(self) -> bool:
        """The server filtered the answer, or the model returned nothing: kept, but flagged."""
        return self.finish_reason == "content_filter" or not self.text.strip()


class LLMError(Exception):
    def __init__(
        self, message: str, *, status: int | None = None, retryable: bool = False, retry_after: float | None = None
    ):
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after  # seconds the server asked us to wait (Retry-After), if it said


class MissingAPIKey(LLMError):
    pass


def build_messages(*, question: str, prompt_template: str, system_prompt: str = "") -> list[dict]:
    messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
    messages.append({"role": "user", "content": prompt_template.replace("{question}", question)})
    return messages


# Only variables named like API keys may be read: a source can be edited by coordinators, and naming, say,
# SECRET_KEY or DATABASE_URL would send the server's own secrets to the source's URL as a bearer token.
API_KEY_VARIABLE = re.compile(r"^[A-Z][A-Z0-9_]*_API_(KEY|TOKEN)$")


def check_api_key_variable(variable: str) -> None:
    if variable and not API_KEY_VARIABLE.match(variable):
        raise MissingAPIKey(
            f"{variable!r} is not accepted as an API-key variable: the name must end in _API_KEY or _API_TOKEN "
            "(e.g. OPENAI_API_KEY), so that no other secret of the server can be sent to a model endpoint"
        )


def api_key_from_env(variable: str) -> str | None:
    if not variable:
        return None
    check_api_key_variable(variable)
    value = os.environ.get(variable)
    if not value:
        raise MissingAPIKey(f"the environment variable {variable} (the source's API key) is not set")
    return value


def chat_completion(
    *,
    base_url: str,
    model: str,
    messages: list[dict],
    temperature: float = 0.0,
    max_tokens: int = 1024,
    timeout: float = 120.0,
    api_key: str | None = None,
    logprobs: bool = False,
    top_logprobs: int | None = None,
) -> Completion:
    """POST {base_url}/chat/completions and return the first choice; raises LLMError."""
    body = {"model": model, "messages": messages, "temperature": temperature, "max_tokens": max_tokens}
    if logprobs:
        body["logprobs"] = True
        if top_logprobs:
            body["top_logprobs"] = top_logprobs
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    request = urllib.request.Request(
        base_url.rstrip("/") + "/chat/completions", data=json.dumps(body).encode(), headers=headers, method="POST"
    )
    start = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            payload = json.loads(response.read().decode("utf-8"))
    except urllib.error.HTTPError as error:
        detail = _error_message(error)
        retryable = error.code in RETRYABLE_STATUS
        retry_after = _retry_after_seconds(error.headers.get("Retry-After") if error.headers else None)
        raise LLMError(
            f"HTTP {error.code}: {detail}", status=error.code, retryable=retryable, retry_after=retry_after
        ) from error
    except TimeoutError as error:
        raise LLMError(f"no answer within {timeout:g} s", retryable=True) from error
    except urllib.error.URLError as error:
        raise LLMError(f"cannot reach {base_url}: {error.reason}", retryable=True) from error
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise LLMError(f"the server's answer is not JSON ({error})", retryable=True) from error
    except (http.client.HTTPException, ConnectionError) as error:
        # The connection broke mid-answer (closed without a response, reset, truncated body).
        raise LLMError(f"the connection to {base_url} broke: {error!r}", retryable=True) from error
    latency_ms = round((time.monotonic() - start) * 1000)
    try:
        choice = payload["choices"][0]
        message = choice.get("message") or {}
        return Completion(
            text=message.get("content") or "",
            finish_reason=choice.get("finish_reason") or "",
            model=payload.get("model") or model,
            latency_ms=latency_ms,
            usage=payload.get("usage") or {},
            logprobs=(choice.get("logprobs") or {}).get("content"),
            response_id=payload.get("id") or "",
        )
    except (KeyError, IndexError, TypeError, AttributeError) as error:
        raise LLMError(f"unexpected response shape: {str(payload)[:300]}") from error


def _error_message(error: urllib.error.HTTPError) -> str:
    """The server's own words: OpenAI-style {"error": {"message": ...}}, or the start of the body."""
    raw = error.read().decode("utf-8", "replace")
    try:
        return json.loads(raw)["error"]["message"]
    except (ValueError, KeyError, TypeError):
        return raw[:500] or error.reason


def _retry_after_seconds(value: str | None) -> float | None:
    """Retry-After in seconds; the HTTP-date form is rare from model APIs and is ignored."""
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None
