"""The one module that talks to language models: the OpenAI-compatible chat-completions and completions
protocols.

That protocol covers hosted APIs and local servers (vLLM, Ollama, llama.cpp server). Tests point it at a
local HTTP server that speaks the same protocol. Retries belong to the caller (a Celery task), which knows
its budget; this module only says whether an error is worth retrying.
"""

import functools
import http.client
import json
import os
import ssl
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from django.conf import settings

from config import key_hosts

RETRYABLE_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}


@dataclass
class Completion:
    text: str
    finish_reason: str
    model: str
    latency_ms: int
    usage: dict = field(default_factory=dict)
    logprobs: list | dict | None = None  # chat: the tokens' list; completions: the legacy object
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


class KeyNotAllowed(LLMError):
    """The source's key may not be sent to its URL (MODEL_KEY_HOSTS, plain http): nothing was sent."""


def check_key_destination(*, variable: str, url: str) -> None:
    """Raise KeyNotAllowed unless the key named `variable` may be sent to `url` (config/key_hosts.py)."""
    if not variable:
        return
    try:
        key_hosts.check_key_destination(variable=variable, url=url, bindings=settings.MODEL_KEY_HOSTS)
    except key_hosts.KeyNotAllowed as error:
        raise KeyNotAllowed(str(error)) from None


def api_key_for(*, variable: str, url: str) -> str | None:
    """The key to send to `url`, read from the environment only once it may go there."""
    if not variable:
        return None
    check_key_destination(variable=variable, url=url)
    value = os.environ.get(variable)
    if not value:
        raise MissingAPIKey(f"the environment variable {variable} (the source's API key) is not set")
    return value


class _RefuseRedirects(urllib.request.HTTPRedirectHandler):
    """urllib re-sends every header, Authorization included, to wherever a 301/302/303 points: never follow."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None  # urllib then raises HTTPError with the 3xx status


def chat_completion(
    *,
    base_url: str,
    model: str,
    messages: list[dict],
    temperature: float | None = 0.0,
    max_tokens: int = 1024,
    timeout: float = 120.0,
    api_key_env: str = "",
    logprobs: bool = False,
    top_logprobs: int | None = None,
    stop: list[str] | None = None,
    response_format: dict | None = None,
    seed: int | None = None,
) -> Completion:
    """POST {base_url}/chat/completions and return the first choice; raises LLMError.

    The key is read from the environment variable `api_key_env`, and only when MODEL_KEY_HOSTS lets it go to
    the URL: this is the one place keys leave the server, so a source saved before the setting changed (or
    by a script, without validation) cannot send one elsewhere.
    """
    body: dict = {"model": model, "messages": messages, **_temperature(temperature), "max_tokens": max_tokens}
    if stop:
        body["stop"] = list(stop)
    if response_format:
        body["response_format"] = response_format
    if seed is not None:  # the sampling seed (OpenAI, llama.cpp and vLLM honour it): each sample its own draw
        body["seed"] = seed
    if logprobs:
        body["logprobs"] = True
        if top_logprobs:
            body["top_logprobs"] = top_logprobs
    payload, latency_ms = _post(base_url, "/chat/completions", body, timeout=timeout, api_key_env=api_key_env)
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


def text_completion(
    *,
    base_url: str,
    model: str,
    prompt: str,
    temperature: float | None = 0.0,
    max_tokens: int = 1024,
    timeout: float = 120.0,
    api_key_env: str = "",
    logprobs: int | None = None,
    stop: list[str] | None = None,
    seed: int | None = None,
) -> Completion:
    """POST {base_url}/completions (one prompt text, no chat template) and return the first choice.

    For completion-mode recipes (e.g. Q-Pain's log-probabilities of the next token); same key rules, errors
    and retry advice as chat_completion. `logprobs` is the number of top tokens per position (legacy API).
    """
    body: dict = {"model": model, "prompt": prompt, **_temperature(temperature), "max_tokens": max_tokens}
    if stop:
        body["stop"] = list(stop)
    if logprobs:
        body["logprobs"] = logprobs
    if seed is not None:
        body["seed"] = seed
    payload, latency_ms = _post(base_url, "/completions", body, timeout=timeout, api_key_env=api_key_env)
    try:
        choice = payload["choices"][0]
        return Completion(
            text=choice.get("text") or "",
            finish_reason=choice.get("finish_reason") or "",
            model=payload.get("model") or model,
            latency_ms=latency_ms,
            usage=payload.get("usage") or {},
            logprobs=choice.get("logprobs"),
            response_id=payload.get("id") or "",
        )
    except (KeyError, IndexError, TypeError, AttributeError) as error:
        raise LLMError(f"unexpected response shape: {str(payload)[:300]}") from error


def _temperature(temperature: float | None) -> dict:
    """None leaves the temperature out of the request, so the server's default applies (as BiasMedQA's
    authors sent OpenAI models no temperature)."""
    return {} if temperature is None else {"temperature": temperature}


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One verifying TLS context for every request: build_opener would otherwise make a new one per request,
    loading the system's CA bundle each time (~25 ms of CPU, half a generation worker's time per request,
    benchmarks/qpain_requests.py). A context is safe to share between threads once configured."""
    return ssl.create_default_context()


def _post(base_url: str, path: str, body: dict, *, timeout: float, api_key_env: str) -> tuple[dict, int]:
    """POST the JSON body to base_url + path: (the decoded answer, milliseconds); raises LLMError."""
    url = base_url.rstrip("/") + path
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    request.add_header("Content-Type", "application/json")
    if api_key_env:
        # What urllib will connect to must be what was checked (no user part, no parser disagreement).
        if request.host.lower() != urlsplit(url).netloc.lower():
            raise KeyNotAllowed(f"{base_url!r} is not a URL an API key can be sent to")
        request.add_header("Authorization", f"Bearer {api_key_for(variable=api_key_env, url=url)}")
    handlers: list = [_RefuseRedirects(), urllib.request.HTTPSHandler(context=_tls_context())]
    if key_hosts.is_loopback(urlsplit(url).hostname or ""):
        handlers.append(urllib.request.ProxyHandler({}))  # a proxy cannot reach this machine's loopback
    start = time.monotonic()
    try:
        with urllib.request.build_opener(*handlers).open(request, timeout=timeout) as response:
            payload = json.loads(response.read().decode("utf-8"))
    except urllib.error.HTTPError as error:
        if 300 <= error.code < 400:
            raise LLMError(
                f"HTTP {error.code}: the server redirects to {error.headers.get('Location')!r}. Redirects are "
                "not followed, so that an API key never goes to another address: set the base URL to the "
                "endpoint's own address",
                status=error.code,
            ) from error
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
    if not isinstance(payload, dict):
        raise LLMError(f"unexpected response shape: {str(payload)[:300]}")
    return payload, round((time.monotonic() - start) * 1000)


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
