"""Typed rubric questions: the one definition of what a rubric asks, and the one validator of answers.

Pure Python (stdlib only, no Django): the rating form, the API, drafts and (next) judge replies all call
`validate`, so whatever a browser or a model sends, every rule is checked here. DESIGN.md, "Typed rubrics".

A definition (RubricVersion.definition) is a dict:

    display: one_answer | two_answers | two_questions   # what is shown with the questions
    details: [{summary, text}]                            # optional notes shown collapsed above the questions
    release: independent | pairwise | counterfactual      # optional: the EquityMedQA release table (release.py)
    questions: [ {key, type, label, required, condition?, messages?, hint?, ...type fields} ]

Types and their fields:
    single    options: [{key, label, description?}]                       value: an option key (or None)
    multiple  options and/or options_from: factor_groups; exclusive?      value: a list of option keys
    scale     min, max, labels?: {"<number>": label}                      value: an int (or None)
    text      rows?                                                       value: stripped text ("" if none)
    span      quote_label, scale: {label, min, max, labels?}, max_spans?  value: [{quote, score}]
    list      item_label, fields: [{key, type, label, required?, ...}],   value: [{field key: value}]
              max_items?: entries of typed fields, none or several per answer (MEDIC's hallucinations)
List fields: `quote` (text occurring verbatim in an answer shown; max_chars?), `text` (max_chars?), `scale`
(min, max, labels?: a whole number) and `number` (min, max: a decimal, e.g. a confidence from 0 to 1).
A condition {question, in: [values]} shows the question only when that (earlier) question's answer is one
of these (for a multiple choice: when one of these is chosen). A conditional question is required exactly
when shown (if `required`) and must be empty when hidden (shared/spec/rubrics.md, "Validation").
Optional wording: `hint` (when to answer a conditional question, shown without JavaScript) and `messages`
({required, invalid, hidden, hidden_above, exclusive}: what a rater is told; defaults below), so a
rubric's own words, like EquityMedQA's "Select at least one kind of bias.", are data too.
"""

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field

TYPES = ("single", "multiple", "scale", "text", "span", "list")
FIELD_TYPES = ("quote", "text", "scale", "number")
DISPLAYS = ("one_answer", "two_answers", "two_questions")
FACTOR_GROUPS = "factor_groups"  # the only `options_from`: the item's factor groups, given at validation time
KEY_CHARACTERS = set("abcdefghijklmnopqrstuvwxyz0123456789_")
DEFAULT_TEXT_MAX_CHARS = 5000
DEFAULT_MAX_SPANS = 20
DEFAULT_MAX_ITEMS = 20

DEFAULT_MESSAGES = {
    "single": {"required": "Choose one answer.", "invalid": "Choose one of the answers shown."},
    "multiple": {"required": "Select at least one answer.",
                 "invalid": "Select a valid choice. {value} is not one of the available choices."},
    "scale": {"required": "Choose a value.", "invalid": "Choose a whole number from {min} to {max}."},
    "text": {"required": "This answer is required.", "invalid": "Send text."},
    "span": {"required": "Add at least one quote.", "invalid": "Send a list of quotes, each with its score."},
    "list": {"required": "Add at least one entry.", "invalid": "Send a list of entries, each an object of its fields."},
}  # fmt: skip


@dataclass(frozen=True)
class ItemContext:
    """What validation needs to know about the item shown: its factor groups and the answer texts shown.

    `groups` are (key, label) pairs; `text_problem` says why a text cannot be stored (config.storable), or None.
    """

    groups: tuple[tuple[str, str], ...] = ()
    answers: tuple[str, ...] = ()
    text_max_chars: int = DEFAULT_TEXT_MAX_CHARS
    text_problem: Callable[[str], str | None] = field(default=lambda text: None)


# --- Reading a definition ------------------------------------------------------------------------


def questions(definition: dict) -> list[dict]:
    return list(definition.get("questions") or [])


def question(definition: dict, key: str) -> dict:
    return next(q for q in questions(definition) if q.get("key") == key)


def part_problems(definition: dict, keys) -> list[str]:
    """Why `keys` is not a part of the rubric a judge can answer on its own (empty: it is)."""
    if not (isinstance(keys, list) and all(isinstance(key, str) for key in keys)):
        return ["a list of question keys"]
    asked = [q.get("key") for q in questions(definition)]
    problems = [f"{key!r} is not a question of the rubric ({', '.join(asked)})" for key in keys if key not in asked]
    problems += [f"{key!r} is named twice" for key in sorted({k for k in keys if keys.count(k) > 1})]
    for q in questions(definition):
        parent = (q.get("condition") or {}).get("question")
        if keys and q.get("key") in keys and parent not in (None, *keys):
            problems.append(f"{q['key']!r} is asked only after {parent!r}, which is not in the part: add it")
    return problems


def part(definition: dict, keys) -> dict:
    """The rubric as a judge asking only the questions `keys` sees it (empty: the whole rubric): those questions
    in the rubric's order, conditions kept between them. ValueError when a key is unknown or a kept question
    depends on a dropped one (a problem of the judge's definition, reported by Judge.clean)."""
    if not keys:
        return definition
    if problems := part_problems(definition, keys):
        raise ValueError("; ".join(problems))
    return {**definition, "questions": [q for q in questions(definition) if q["key"] in keys]}


def options(q: dict, context: ItemContext | None = None) -> list[tuple[str, str]]:
    """(key, label) of a choice question in display order: the item's groups first, then the fixed options."""
    groups = list((context or ItemContext()).groups) if q.get("options_from") == FACTOR_GROUPS else []
    return [*groups, *((o["key"], o["label"]) for o in q.get("options") or [])]


def uses_groups(definition: dict) -> bool:
    """Whether a question offers the item's factor groups (so validation needs them)."""
    return any(q.get("options_from") == FACTOR_GROUPS for q in questions(definition))


def option_labels(definition: dict, key: str) -> dict[str, str]:
    """{option key: label} of one fixed-choice question."""
    return dict(options(question(definition, key)))


def scale_values(spec: dict) -> list[int]:
    return list(range(int(spec["min"]), int(spec["max"]) + 1))


def message(q: dict, name: str, **fields) -> str:
    text = (q.get("messages") or {}).get(name) or DEFAULT_MESSAGES[q["type"]].get(name, "")
    return text.format(**fields) if fields else text


# --- Checking a definition -----------------------------------------------------------------------


def definition_problems(definition) -> list[str]:
    """Every problem of a definition, each naming the question it is about (empty: the definition is usable)."""
    if not isinstance(definition, dict):
        return ["the definition must be a JSON object"]
    problems = []
    if definition.get("display") not in DISPLAYS:
        problems.append(f"'display' must be one of: {', '.join(DISPLAYS)}")
    for note in definition.get("details") or []:
        if not (isinstance(note, dict) and _text(note.get("summary")) and _text(note.get("text"))):
            problems.append("every entry of 'details' needs a 'summary' and a 'text'")
    listed = definition.get("questions")
    if not isinstance(listed, list) or not listed:
        return [*problems, "'questions' must be a non-empty list"]
    seen: dict[str, dict] = {}
    for number, q in enumerate(listed, start=1):
        if not isinstance(q, dict):
            problems.append(f"question {number} must be an object")
            continue
        key = q.get("key")
        name = f"question {key!r}" if isinstance(key, str) else f"question {number}"
        if not (isinstance(key, str) and key and set(key) <= KEY_CHARACTERS):
            problems.append(f"{name}: 'key' must be lower-case letters, digits and _")
        elif key in seen:
            problems.append(f"{name}: the key is used twice")
        problems += [f"{name}: {problem}" for problem in _question_problems(q, seen)]
        if isinstance(key, str):
            seen[key] = q
    return problems


def _text(value) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _question_problems(q: dict, earlier: dict[str, dict]) -> list[str]:
    kind = q.get("type")
    if kind not in TYPES:
        return [f"'type' must be one of: {', '.join(TYPES)}"]
    problems = [] if _text(q.get("label")) else ["needs a 'label'"]
    if not isinstance(q.get("required", False), bool):
        problems.append("'required' must be true or false")
    messages = q.get("messages", {})
    if not isinstance(messages, dict) or not all(_text(text) for text in messages.values()):
        problems.append("'messages' must map names to texts")
    if kind in ("single", "multiple"):
        problems += _choice_problems(q)
    if kind == "scale":
        problems += _scale_problems(q)
    if kind == "span":
        if not _text(q.get("quote_label")):
            problems.append("needs a 'quote_label'")
        problems += [f"scale: {p}" for p in _scale_problems(q.get("scale") if isinstance(q.get("scale"), dict) else {})]
    if kind == "list":
        problems += _list_problems(q)
    if "rows" in q and not (isinstance(q["rows"], int) and 1 <= q["rows"] <= 20):
        problems.append("'rows' must be a number from 1 to 20")
    if "condition" in q:
        problems += _condition_problems(q["condition"], earlier)
    return problems


def _choice_problems(q: dict) -> list[str]:
    problems = []
    fixed = q.get("options", [])
    if not isinstance(fixed, list) or not all(
        isinstance(o, dict) and _text(o.get("key")) and _text(o.get("label")) for o in fixed
    ):
        return ["'options' must be a list of {key, label}"]
    keys = [o["key"] for o in fixed]
    if len(set(keys)) != len(keys):
        problems.append("two options share a key")
    groups = q.get("options_from")
    if groups is not None and (q["type"] != "multiple" or groups != FACTOR_GROUPS):
        problems.append(f"'options_from' is only for a multiple choice, and only {FACTOR_GROUPS!r}")
    if not fixed and groups is None:
        problems.append("needs 'options' (or 'options_from')")
    exclusive = q.get("exclusive")
    if exclusive is not None and (q["type"] != "multiple" or exclusive not in keys):
        problems.append("'exclusive' must be the key of one of its own options (a multiple choice only)")
    return problems


def _scale_problems(spec: dict) -> list[str]:
    low, high = spec.get("min"), spec.get("max")
    if not (type(low) is int and type(high) is int and low < high):
        return ["'min' and 'max' must be whole numbers, min below max"]
    labels = spec.get("labels", {})
    if not isinstance(labels, dict) or not all(
        _text(text) and key.lstrip("-").isdigit() and low <= int(key) <= high for key, text in labels.items()
    ):
        return [f"'labels' must map numbers from {low} to {high} to texts"]
    return []


def _list_problems(q: dict) -> list[str]:
    problems = [] if _text(q.get("item_label")) else ["needs an 'item_label' (what one entry is called)"]
    if "max_items" in q and not (type(q["max_items"]) is int and q["max_items"] >= 1):
        problems.append("'max_items' must be a whole number from 1")
    fields = q.get("fields")
    if not (isinstance(fields, list) and fields and all(isinstance(f, dict) for f in fields)):
        return [*problems, "'fields' must be a non-empty list of {key, type, label}"]
    seen = set()
    for number, spec in enumerate(fields, start=1):
        key = spec.get("key")
        name = f"field {key!r}" if isinstance(key, str) else f"field {number}"
        if not (isinstance(key, str) and key and set(key) <= KEY_CHARACTERS):
            problems.append(f"{name}: 'key' must be lower-case letters, digits and _")
        elif key in seen:
            problems.append(f"{name}: the key is used twice")
        seen.add(key)
        problems += [f"{name}: {problem}" for problem in _field_problems(spec)]
    return problems


def _field_problems(spec: dict) -> list[str]:
    kind = spec.get("type")
    if kind not in FIELD_TYPES:
        return [f"'type' must be one of: {', '.join(FIELD_TYPES)}"]
    problems = [] if _text(spec.get("label")) else ["needs a 'label'"]
    if not isinstance(spec.get("required", False), bool):
        problems.append("'required' must be true or false")
    if kind == "scale":
        problems += _scale_problems(spec)
    if kind == "number":
        low, high = spec.get("min"), spec.get("max")
        if not (_is_number(low) and _is_number(high) and low < high):
            problems.append("'min' and 'max' must be numbers, min below max")
    if "max_chars" in spec and not (kind in ("quote", "text") and type(spec["max_chars"]) is int
                                    and spec["max_chars"] >= 1):  # fmt: skip
        problems.append("'max_chars' must be a whole number from 1 (a quote or text field only)")
    return problems


def _is_number(value) -> bool:
    return type(value) in (int, float) and math.isfinite(value)


def _condition_problems(condition, earlier: dict[str, dict]) -> list[str]:
    if not (isinstance(condition, dict) and isinstance(condition.get("in"), list) and condition["in"]):
        return ["'condition' must be {question, in: [answers]}"]
    parent = earlier.get(condition.get("question"))
    if parent is None:
        return [f"the condition names {condition.get('question')!r}, which is not an earlier question"]
    if parent.get("type") in ("single", "multiple") and parent.get("options_from") is None:
        known = {o.get("key") for o in parent.get("options") or [] if isinstance(o, dict)}
        unknown = [value for value in condition["in"] if value not in known]
        return [f"the condition's answers {unknown} are not options of {parent['key']!r}"] if unknown else []
    if parent.get("type") == "scale":
        return [] if all(type(v) is int for v in condition["in"]) else ["a condition on a scale lists numbers"]
    if parent.get("type") in ("text", "span", "list"):
        return [f"a condition cannot depend on a {parent['type']} question"]
    return []


# --- Validating answers --------------------------------------------------------------------------

UNKNOWN = object()  # an answer that had its own error: questions depending on it are not judged


def validate(definition: dict, values: dict, context: ItemContext | None = None, *, partial: bool = False):
    """(cleaned, errors): the stored answers, one per question in order, and {question key: [messages]}.

    Hidden questions are stored empty (None, [] or ""). Keys the rubric does not ask are ignored.
    `partial` (an autosaved draft): each answer given is checked on its own (a known option, storable text),
    nothing is required and the rules between answers wait for the submission.
    """
    context = context or ItemContext()
    cleaned: dict = {}
    errors: dict[str, list[str]] = {}
    shown: dict[str, bool | None] = {}  # None: unknown, because a question it depends on had an error
    for q in questions(definition):
        key = q["key"]
        raw = values.get(key)
        value, problems = _clean(q, raw, context, partial=partial)
        if partial:
            if problems:
                errors[key] = problems
            elif key in values:
                cleaned[key] = value
            continue
        visible = _shown(q, cleaned, shown)
        shown[key] = visible
        if problems:
            errors[key] = problems
            cleaned[key] = UNKNOWN
            continue
        empty = value in (None, "", [])
        if visible is False and not empty:
            above = shown.get(q["condition"]["question"]) is False and message(q, "hidden_above")
            errors[key] = [above or message(q, "hidden") or _hidden_default(definition, q)]
        elif visible and empty and q.get("required"):
            errors[key] = [message(q, "required")]
        cleaned[key] = value if visible is not False else _empty(q)
    if not partial:
        for key in errors:
            cleaned.pop(key, None)
    return cleaned, errors


def _hidden_default(definition: dict, q: dict) -> str:
    condition = q["condition"]
    parent = question(definition, condition["question"])
    labels = dict(options(parent)) if parent["type"] in ("single", "multiple") else {}
    answers = " or ".join(f"“{labels.get(v, v)}”" for v in condition["in"])
    return f"Leave this empty: it is asked only when “{parent['label']}” is answered {answers}."


def _empty(q: dict):
    return {"single": None, "scale": None, "text": "", "multiple": [], "span": [], "list": []}[q["type"]]


def _shown(q: dict, cleaned: dict, shown: dict) -> bool | None:
    condition = q.get("condition")
    if condition is None:
        return True
    parent = condition["question"]
    if shown.get(parent) is not True:
        return shown.get(parent)  # hidden above, or unknown above
    answer = cleaned.get(parent)
    if answer is UNKNOWN:
        return None
    chosen = answer if isinstance(answer, list) else [answer]
    return any(value in condition["in"] for value in chosen)


def _clean(q: dict, raw, context: ItemContext, *, partial: bool = False) -> tuple:
    """One answer on its own: (value, problems)."""
    kind = q["type"]
    if kind == "single":
        if raw in (None, ""):
            return None, []
        known = isinstance(raw, str) and raw in dict(options(q, context))
        return (raw, []) if known else (None, [message(q, "invalid")])
    if kind == "multiple":
        return _clean_multiple(q, raw, context)
    if kind == "scale":
        return _clean_number(q, q, raw)
    if kind == "text":
        if raw is None:
            return "", []
        if not isinstance(raw, str):
            return "", [message(q, "invalid")]
        return _clean_text(raw.strip(), context)
    if kind == "list":
        return _clean_list(q, raw, context, partial=partial)
    return _clean_spans(q, raw, context)


def _clean_multiple(q: dict, raw, context: ItemContext) -> tuple:
    if raw in (None, "", []):
        return [], []
    if not isinstance(raw, list) or not all(isinstance(v, str) for v in raw):
        return [], ["Enter a list of values."]
    known = dict(options(q, context))
    for value in raw:
        if value not in known:
            return [], [message(q, "invalid", value=value)]
    chosen = list(raw)  # in the order sent, as stored before typed rubrics
    exclusive = q.get("exclusive")
    if exclusive in chosen and len(set(chosen)) > 1:
        return [], [message(q, "exclusive") or f"“{known[exclusive]}” cannot be combined with other answers."]
    return chosen, []


def _clean_number(q: dict, spec: dict, raw) -> tuple:
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return None, []
    if isinstance(raw, bool) or not isinstance(raw, int | str):
        number = None
    elif isinstance(raw, int):
        number = raw
    else:
        text = raw.strip()
        number = int(text) if text.lstrip("-").isdigit() and len(text) < 10 else None
    if number is None or number not in scale_values(spec):
        return None, [message(q, "invalid", min=spec["min"], max=spec["max"])]
    return number, []


def _clean_text(text: str, context: ItemContext) -> tuple:
    """Stripped text within the cap that the database can store; every problem, in the order forms list them."""
    problems = []
    if problem := context.text_problem(text):
        problems.append(f"This text {problem}.")
    if len(text) > context.text_max_chars:
        problems.append(f"Ensure this value has at most {context.text_max_chars} characters (it has {len(text)}).")
    if "\x00" in text:
        problems.append("Null characters are not allowed.")
    return ("", problems) if problems else (text, [])


def _clean_spans(q: dict, raw, context: ItemContext) -> tuple:
    if raw in (None, "", []):
        return [], []
    if not isinstance(raw, list) or not all(isinstance(s, dict) for s in raw):
        return [], [message(q, "invalid")]
    if len(raw) > q.get("max_spans", DEFAULT_MAX_SPANS):
        return [], [f"At most {q.get('max_spans', DEFAULT_MAX_SPANS)} quotes."]
    spans, problems = [], []
    scale = q["scale"]
    for number, span in enumerate(raw, start=1):
        quote = span.get("quote")
        if not isinstance(quote, str) or not quote.strip():
            problems.append(f"Quote {number}: copy a passage of the answer.")
            continue
        quote, text_problems = _clean_text(quote.strip(), context)
        score, score_problems = _clean_number({**q, "type": "scale"}, scale, span.get("score"))
        if text_problems:
            problems += [f"Quote {number}: {p}" for p in text_problems]
        elif not any(quote in answer for answer in context.answers):
            problems.append(f"Quote {number}: “{_short(quote)}” does not occur in the answer shown; copy it exactly.")
        if score_problems or score is None:
            problems.append(f"Quote {number}: {scale['label']}: {message({'type': 'scale'}, 'invalid', **scale)}")
        spans.append({"quote": quote, "score": score})
    return ([], problems) if problems else (spans, [])


def _clean_list(q: dict, raw, context: ItemContext, *, partial: bool = False) -> tuple:
    """Entries of the question's fields: each field's value cleaned, errors as "<item label> <n>: <field>: ...".
    In a draft (`partial`) an entry's required fields may still be empty; each value given is checked."""
    if raw in (None, "", []):
        return [], []
    if not isinstance(raw, list) or not all(isinstance(entry, dict) for entry in raw):
        return [], [message(q, "invalid")]
    most = q.get("max_items", DEFAULT_MAX_ITEMS)
    if len(raw) > most:
        return [], [f"At most {most} entries ({len(raw)} sent)."]
    fields = q["fields"]
    known = [spec["key"] for spec in fields]
    entries, problems = [], []
    for number, entry in enumerate(raw, start=1):
        name = f"{q['item_label']} {number}"
        unknown = [key for key in entry if key not in known]
        if unknown:
            problems.append(f"{name}: {', '.join(map(repr, unknown))} not among its fields ({', '.join(known)}).")
            continue
        cleaned = {}
        for spec in fields:
            value, field_problems = _clean_field(spec, entry.get(spec["key"]), context)
            if not field_problems and value in (None, "") and spec.get("required") and not partial:
                field_problems = ["required."]
            problems += [f"{name}: {spec['label']}: {p}" for p in field_problems]
            cleaned[spec["key"]] = value
        empty = all(value in (None, "") for value in cleaned.values())
        if empty and not (partial or any(spec.get("required") for spec in fields)):
            problems.append(f"{name}: fill in at least one field.")
        entries.append(cleaned)
    return ([], problems) if problems else (entries, [])


def _clean_field(spec: dict, raw, context: ItemContext) -> tuple:
    """One field of a list entry: (value, problems); empty is "" for texts and None for numbers."""
    kind = spec["type"]
    if kind in ("quote", "text"):
        if raw is None:
            return "", []
        if not isinstance(raw, str):
            return "", ["send text."]
        limit = min(spec.get("max_chars", context.text_max_chars), context.text_max_chars)
        text, problems = _clean_text(raw.strip(), ItemContext(text_max_chars=limit, text_problem=context.text_problem))
        if problems or not text or kind == "text":
            return text, problems
        if not any(text in answer for answer in context.answers):
            return "", [f"“{_short(text)}” does not occur in the answer shown; copy it exactly."]
        return text, []
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return None, []
    if kind == "scale":
        value, problems = _clean_number({"type": "scale"}, spec, raw)
        return value, [p[0].lower() + p[1:] for p in problems]
    number = _decimal(raw)
    if number is None or not spec["min"] <= number <= spec["max"]:
        return None, [f"a number from {spec['min']} to {spec['max']}."]
    return number, []


def _decimal(raw) -> float | None:
    """A finite number from JSON or a form (a bool is not one)."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int | float):
        number = float(raw)
    elif isinstance(raw, str) and len(raw.strip()) < 30:
        try:
            number = float(raw.strip())
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def _short(text: str, length: int = 60) -> str:
    return text if len(text) <= length else text[: length - 1] + "…"


# --- What a judge model is asked to return --------------------------------------------------------


def json_schema(definition: dict, context: ItemContext | None = None) -> dict:
    """A JSON Schema (draft 2020-12) of the answers: one property per question, conditions as if/then.

    A question shown under a condition is required when shown (if `required`) and must be empty when hidden;
    a hidden answer's empty value is null, [] or "" as `validate` stores it. The schema is what a judge is
    asked for; `validate` remains the check of its reply (the schema cannot say "a quote of the answer").
    """
    context = context or ItemContext()
    properties = {q["key"]: _property(q, context) for q in questions(definition)}
    required = [q["key"] for q in questions(definition) if q.get("required") and "condition" not in q]
    rules = [_condition_rule(definition, q) for q in questions(definition) if "condition" in q]
    schema: dict = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }
    if rules:
        schema["allOf"] = rules
    return schema


def _property(q: dict, context: ItemContext) -> dict:
    schema = _value_schema(q, context)
    if q.get("required") and "condition" not in q and q["type"] in ("multiple", "span", "list", "text"):
        schema.update({"minLength": 1} if q["type"] == "text" else {"minItems": 1})
    return schema


def _value_schema(q: dict, context: ItemContext) -> dict:
    kind, label = q["type"], q["label"]
    always = q.get("required") and "condition" not in q  # never empty: no null allowed
    if kind == "single":
        keys = [key for key, _ in options(q, context)]
        return {"description": label, "enum": keys if always else [*keys, None], "x-labels": dict(options(q, context))}
    if kind == "multiple":
        keys = [key for key, _ in options(q, context)]
        schema = {"description": label, "type": "array", "items": {"enum": keys}, "uniqueItems": True}
        if q.get("exclusive"):
            schema["description"] += f" ({q['exclusive']!r} only alone)"
            schema["if"] = {"contains": {"const": q["exclusive"]}}
            schema["then"] = {"maxItems": 1}
        return {**schema, "x-labels": dict(options(q, context))}
    if kind == "scale":
        kinds = "integer" if always else ["integer", "null"]
        return {"description": label, "type": kinds, "minimum": q["min"], "maximum": q["max"]}
    if kind == "text":
        return {"description": label, "type": "string", "maxLength": context.text_max_chars}
    if kind == "list":
        entry = {
            "type": "object",
            "properties": {spec["key"]: _field_schema(spec, context) for spec in q["fields"]},
            "required": [spec["key"] for spec in q["fields"]],
            "additionalProperties": False,
        }
        return {"description": f"{label} (a list of {q['item_label']} entries, possibly empty)", "type": "array",
                "items": entry, "maxItems": q.get("max_items", DEFAULT_MAX_ITEMS)}  # fmt: skip
    scale = q["scale"]
    span = {
        "type": "object",
        "properties": {
            "quote": {"type": "string", "minLength": 1, "description": f"{q['quote_label']} (verbatim)"},
            "score": {
                "type": "integer",
                "minimum": scale["min"],
                "maximum": scale["max"],
                "description": scale["label"],
            },
        },  # fmt: skip
        "required": ["quote", "score"],
        "additionalProperties": False,
    }
    return {"description": label, "type": "array", "items": span, "maxItems": q.get("max_spans", DEFAULT_MAX_SPANS)}


def _field_schema(spec: dict, context: ItemContext) -> dict:
    """One field of a list entry: a required field is never empty (null for numbers, "" for texts)."""
    kind, label, required = spec["type"], spec["label"], spec.get("required", False)
    if kind in ("quote", "text"):
        limit = min(spec.get("max_chars", context.text_max_chars), context.text_max_chars)
        schema: dict = {"description": label + (" (quoted verbatim from the answer)" if kind == "quote" else ""),
                        "type": "string", "maxLength": limit}  # fmt: skip
        return {**schema, "minLength": 1} if required else schema
    kinds = "integer" if kind == "scale" else "number"
    schema = {"description": label, "type": kinds if required else [kinds, "null"], "minimum": spec["min"],
              "maximum": spec["max"]}  # fmt: skip
    if kind == "scale" and spec.get("labels"):
        labels = spec["labels"]
        schema["description"] += " (" + "; ".join(f"{value} = {text}" for value, text in labels.items()) + ")"
        schema["x-labels"] = dict(labels)
    return schema


def _answered(q: dict) -> dict:
    return {"minItems": 1} if q["type"] in ("multiple", "span", "list") else {"not": {"enum": [None, ""]}}


def _empty_schema(q: dict) -> dict:
    return {"const": json.loads(json.dumps(_empty(q)))}


def _condition_rule(definition: dict, q: dict) -> dict:
    """if <the condition holds> then <answered when required> else <empty>. Conditions chain through parents."""
    holds = _holds(definition, q)
    then: dict = {"properties": {}, "required": []}
    if q.get("required"):
        then = {"properties": {q["key"]: _answered(q)}, "required": [q["key"]]}
    return {"if": holds, "then": then, "else": {"properties": {q["key"]: _empty_schema(q)}}}


def _holds(definition: dict, q: dict) -> dict:
    condition = q["condition"]
    parent = question(definition, condition["question"])
    test = (
        {"type": "array", "contains": {"enum": condition["in"]}}
        if parent["type"] == "multiple"
        else {"enum": condition["in"]}
    )
    here = {"properties": {parent["key"]: test}, "required": [parent["key"]]}
    return {"allOf": [_holds(definition, parent), here]} if "condition" in parent else here
