"""Kinds of work: each registers a handler that turns a call into a request and keeps what comes back."""

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from .llm_client import Completion, LLMError
    from .models import Call


@dataclass(frozen=True)
class Request:
    """What to send: `chat` (body with `messages`) or `completion` (body with `prompt`); the body as sent,
    its `model`, `max_tokens`, `temperature`, `stop`, `logprobs`, `top_logprobs` included."""

    mode: Literal["chat", "completion"]
    body: dict[str, Any]


class CallRefused(Exception):
    """`prepare` cannot build this call's request, ever (its subject is gone, the recipe cannot render it)."""


class Handler(Protocol):
    def prepare(self, call: "Call") -> Request: ...

    def store(self, call: "Call", completion: "Completion") -> dict | None: ...

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
