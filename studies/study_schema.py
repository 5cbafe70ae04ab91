"""The study file's schema (`study_file_schema.json`, a JSON Schema) and a small checker for the keywords it uses.
Pure: no Django.

The checker knows exactly the keywords below; a schema using any other is refused when it is read, so a keyword
added to the schema can never be silently ignored. It reports every problem with its path (the caller adds the
line), and `complete` fills the defaults and puts the keys in the schema's order: the stored form of a definition.
"""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path as FilePath
from typing import Any

from .study_yaml import Path

SCHEMA_FILE = FilePath(__file__).with_name("study_file_schema.json")
ANNOTATIONS = {"$schema", "title", "description", "default"}
# Top-level keys added after files were committed: kept only when not empty.
OMITTED_WHEN_EMPTY = ("steps", "judges", "references")
KEYWORDS = {"type", "properties", "required", "additionalProperties", "items", "enum", "minimum", "maximum",
            "minLength", "maxLength"}  # fmt: skip
TYPE_NAMES = {
    "object": "a mapping",
    "array": "a list",
    "string": "text",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "true or false",
    "null": "null",
}


@cache
def study_schema() -> dict[str, Any]:
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    _check_keywords(schema, "#")
    return schema


def _check_keywords(schema: dict[str, Any], where: str) -> None:
    unknown = set(schema) - KEYWORDS - ANNOTATIONS
    if unknown:
        raise ValueError(f"{SCHEMA_FILE.name} {where}: keywords the checker does not know: {sorted(unknown)}")
    for name, child in schema.get("properties", {}).items():
        _check_keywords(child, f"{where}/properties/{name}")
    for keyword in ("items", "additionalProperties"):
        if isinstance(schema.get(keyword), dict):
            _check_keywords(schema[keyword], f"{where}/{keyword}")


def type_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _shown(value: Any) -> str:
    kind = type_of(value)
    if kind in ("object", "array"):
        return TYPE_NAMES[kind]
    return json.dumps(value, ensure_ascii=False)[:60]


def check(value: Any, schema: dict[str, Any] | None = None, path: Path = ()) -> list[tuple[Path, str]]:
    """Every (path, message) where `value` breaks the schema (the study schema unless given)."""
    schema = study_schema() if schema is None else schema
    problems: list[tuple[Path, str]] = []
    allowed = schema.get("type")
    if allowed is not None:
        allowed = [allowed] if isinstance(allowed, str) else allowed
        actual = type_of(value)
        fits = actual in allowed or (actual == "integer" and "number" in allowed)
        if not fits:
            expected = " or ".join(TYPE_NAMES[name] for name in allowed)
            hint = " (put it in quotes)" if "string" in allowed and actual in ("boolean", "number", "integer") else ""
            return [(path, f"expected {expected}, not {_shown(value)}{hint}")]
    if "enum" in schema and value not in schema["enum"]:
        problems.append((path, f"must be one of {', '.join(json.dumps(v) for v in schema['enum'])}"))
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            problems.append((path, "must not be empty" if schema["minLength"] == 1 else "is too short"))
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            problems.append((path, f"must be at most {schema['maxLength']} characters"))
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            problems.append((path, f"must be at least {schema['minimum']}"))
        if "maximum" in schema and value > schema["maximum"]:
            problems.append((path, f"must be at most {schema['maximum']}"))
    if isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            problems += check(item, schema["items"], (*path, index))
    if isinstance(value, dict):
        problems += _check_object(value, schema, path)
    return problems


def _check_object(value: dict[str, Any], schema: dict[str, Any], path: Path) -> list[tuple[Path, str]]:
    problems: list[tuple[Path, str]] = []
    properties = schema.get("properties", {})
    for name in schema.get("required", []):
        if name not in value:
            problems.append((path, f"the key {name!r} is missing"))
    extra = schema.get("additionalProperties", True)
    for name, item in value.items():
        if name in properties:
            problems += check(item, properties[name], (*path, name))
        elif extra is False:
            known = ", ".join(properties)
            problems.append(((*path, name), f"unknown key {name!r} (known here: {known})"))
        elif isinstance(extra, dict):
            problems += check(item, extra, (*path, name))
    return problems


def _keys_sorted(value: Any) -> Any:
    """A copy with the keys of every map the schema does not order (levels, `where`, a reference's `values`,
    a plan's parameters) sorted: PostgreSQL's jsonb keeps no key order, so a written file must not depend on it."""
    if isinstance(value, dict):
        return {key: _keys_sorted(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_keys_sorted(item) for item in value]
    return value


def complete(value: Any, schema: dict[str, Any] | None = None) -> Any:
    """A valid `value` with every missing key given its default, and its keys in the schema's order (a key of
    OMITTED_WHEN_EMPTY has no default: it is kept only when not empty, so files without it read as before)."""
    if schema is None:
        completed = complete(value, study_schema())
        if isinstance(completed, dict):
            for name in OMITTED_WHEN_EMPTY:
                if completed.get(name) == []:
                    del completed[name]
        return completed
    if isinstance(value, list) and "items" in schema:
        return [complete(item, schema["items"]) for item in value]
    if not isinstance(value, dict) or "properties" not in schema:
        return _keys_sorted(value)
    result: dict[str, Any] = {}
    for name, child in schema["properties"].items():
        if name in value:
            result[name] = complete(value[name], child)
        elif "default" in child:
            result[name] = complete(copy.deepcopy(child["default"]), child)
    return result
