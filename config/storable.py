"""Text and JSON the database can store and query: the one check every input path uses.

PostgreSQL refuses a NUL character in text and in jsonb, and a lone UTF-16 surrogate ("\\ud800") is not
UTF-8 at all, so either would fail deep in a query as a server error. The API's JSON parser and JSON fields
(config.rest), the rating form's text fields (studies.rubrics) and the address check
(config.middleware) all ask this module, so bad input is refused up front with a message, the same way
everywhere.
"""

from django.core.exceptions import ValidationError

# Deeper than any body the API takes (a rating's values, a source's parameters); bounded so that neither
# the parser nor the walk below can exhaust the stack.
MAX_JSON_DEPTH = 32


def text_problem(text: str) -> str | None:
    """Why the database cannot store this text, or None."""
    if "\x00" in text:
        return "contains a NUL character (\\u0000)"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "contains an unpaired surrogate (e.g. \\ud800), which is not valid Unicode"
    return None


def validate_storable_text(value) -> None:
    """Django/DRF validator for free-text fields."""
    if isinstance(value, str) and (problem := text_problem(value)):
        raise ValidationError(f"This text {problem}.", code="unstorable")


def json_problem(data, *, max_depth: int = MAX_JSON_DEPTH) -> str | None:
    """Why a parsed JSON value cannot be stored (a bad string anywhere, keys included, or too deep), or None.

    Walks with an explicit stack: a deeply nested value must not recurse past Python's limit.
    """
    stack = [(data, 1, "")]
    while stack:
        value, depth, where = stack.pop()
        if isinstance(value, str):
            if problem := text_problem(value):
                return f"{where or 'the value'} {problem}"
        elif isinstance(value, dict | list):
            if depth > max_depth:
                return f"the JSON is nested more than {max_depth} levels deep"
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for key, item in items:
                if isinstance(key, str) and (problem := text_problem(key)):
                    return f"a key {problem}"
                step = f"[{key}]" if isinstance(value, list) else (f".{key}" if where else str(key))
                stack.append((item, depth + 1, f"{where}{step}"))
    return None
