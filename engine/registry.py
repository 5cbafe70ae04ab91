"""Kinds of work: each registers a handler that turns a call into a request and keeps what comes back."""

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from .llm_client import Completion, LLMError
    from .models import Call


@dataclass(frozen=True)
class Request:
    """What to send: `chat` (body with `messages`) or `completion` (body with `prompt`); the body as sent,
    its `model`, `max_tokens`, `temperature`, `stop`, `logprobs`, `top_logprobs`, `response_format` included."""

    mode: Literal["chat", "completion"]
    body: dict[str, Any]


class CallRefused(Exception):
    """`prepare` cannot build this call's request, ever (its subject is gone, the recipe cannot render it)."""


@dataclass(frozen=True)
class AskAgain:
    """What `store` returns to keep what it wrote and have the call made again: the engine commits the store's
    writes, keeps `result` on the call and puts it back in the queue (its attempt counted, `reason` in its
    history), e.g. a reply the kind could not use but keeps as a record."""

    result: dict | None
    reason: str


@dataclass(frozen=True)
class GiveUp:
    """What `store` returns to keep what it wrote and end the call as failed for good: the engine commits the
    store's writes, keeps `result`, fails the call with `reason` as its error and calls the kind's `failed`."""

    result: dict | None
    reason: str


class Handler(Protocol):
    def prepare(self, call: "Call") -> Request: ...

    def store(self, call: "Call", completion: "Completion") -> "dict | None | AskAgain | GiveUp": ...

    def failed(self, call: "Call", error: "LLMError") -> None: ...


_handlers: dict[str, Handler] = {}


def register(kind: str, handler: Handler) -> None:
    """Make `kind` known to this process; registering the same kind again replaces its handler."""
    if not kind or len(kind) > 50:
        raise ValueError(f"a kind is a name of 1 to 50 characters, not {kind!r}")
    _handlers[kind] = handler


def handler_for(kind: str) -> Handler | None:
    return _handlers.get(kind)


def registered_kinds() -> list[str]:
    return sorted(_handlers)
