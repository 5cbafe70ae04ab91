"""The chat- and text-completions client moved to the model-call engine (engine/llm_client.py); these names
stay importable from here for the code and scripts that ask a model directly."""

from engine.llm_client import (  # noqa: F401
    RETRYABLE_STATUS,
    Completion,
    KeyNotAllowed,
    LLMError,
    MissingAPIKey,
    api_key_for,
    build_messages,
    chat_completion,
    check_key_destination,
    text_completion,
)
