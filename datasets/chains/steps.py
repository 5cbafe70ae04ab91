"""What one call of a generation step asks and what its reply becomes (pure: plain values in and out).

- Expansions: the levels an input is asked under (`[{"style": "standard"}, {"style": "person with ..."}]`); an
  empty list asks each input once, adding no level.
- Phrases: named texts a template may use, chosen by an expansion's level, e.g. MEDIC's `extra_string`: ""
  for the style "standard", else ", who {style},". Filled over the expansion's levels.
- The output's external id: `<input id>~<expansion key>~s<sample>`; the expansion key is the first 8 hex digits
  of SHA-256 over the levels as sorted JSON, so it does not depend on the list's order. An input id long enough
  to push the id past 200 characters is replaced by its own hash.
- The generated text: the reply without surrounding whitespace and without the quotation marks models put
  around a rewritten sentence (MEDIC's restyling prompt ends `... is: `).
"""

import hashlib
import json
import re
from collections.abc import Mapping

PLACEHOLDER = re.compile(r"\{(\w+)\}")
MAX_EXTERNAL_ID = 200
# Requests one input makes (expansions x samples): MEDIC's largest is 95 styles x ~12 samples. The bound keeps one
# submission's memory and one study file's cost known.
MAX_CALLS_PER_INPUT = 10_000
QUOTES = {'"': '"', "“": "”", "'": "'"}


class StepError(ValueError):
    """A step definition that cannot be asked (a message for its author)."""


def expansions_of(expansions: list[dict] | None) -> list[dict[str, str]]:
    if not expansions:
        return [{}]
    return [{str(key): str(value) for key, value in levels.items()} for levels in expansions]


def expansion_key(levels: Mapping[str, str]) -> str:
    canonical = json.dumps(dict(levels), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:8]


def check_size(expansions: object, samples: int) -> None:
    count = len(expansions) if isinstance(expansions, list) else 0
    if max(count, 1) * samples > MAX_CALLS_PER_INPUT:
        raise StepError(f"{max(count, 1)} expansions x {samples} samples make more than {MAX_CALLS_PER_INPUT:,} "
                        "requests per input question: split the step")  # fmt: skip


def output_external_id(input_id: str, levels: Mapping[str, str], sample: int) -> str:
    return keyed_external_id(input_id, expansion_key(levels), sample)


def keyed_external_id(input_id: str, key: str, sample: int) -> str:
    """`output_external_id` with the expansion's key already made (one hash per expansion, not per input)."""
    suffix = f"~{key}~s{sample}"
    if len(input_id) + len(suffix) > MAX_EXTERNAL_ID:
        input_id = hashlib.sha256(input_id.encode("utf-8")).hexdigest()[:24]
    return f"{input_id}{suffix}"


def fill(template: str, values: Mapping[str, str], where: str) -> str:
    missing = sorted({name for name in PLACEHOLDER.findall(template) if name not in values})
    if missing:
        raise StepError(f"{where}: no value for {', '.join('{' + name + '}' for name in missing)}")
    return PLACEHOLDER.sub(lambda match: str(values[match.group(1)]), template)


def phrase_values(phrases: Mapping[str, dict], levels: Mapping[str, str]) -> dict[str, str]:
    """{name: text} of the step's phrases for one expansion."""
    values = {}
    for name, rule in phrases.items():
        level = levels.get(str(rule.get("factor", "")), "")
        cases = rule.get("cases") or {}
        text = cases[level] if level in cases else rule.get("default", "")
        values[name] = fill(str(text), levels, f"phrase {name}")
    return values


def check_phrases(phrases: object) -> None:
    if not isinstance(phrases, dict):
        raise StepError('phrases: an object {name: {"factor", "cases", "default"}}.')
    for name, rule in phrases.items():
        if not re.fullmatch(r"\w+", str(name)):
            raise StepError(f"phrases: {name!r} is not a placeholder name (letters, digits, _).")
        if not isinstance(rule, dict) or not isinstance(rule.get("factor"), str):
            raise StepError(f"phrases: {name}: an object with a factor, cases and a default.")
        cases = rule.get("cases", {})
        if not isinstance(cases, dict) or not all(isinstance(text, str) for text in cases.values()):
            raise StepError(f"phrases: {name}: cases map a level to a text.")
        if not isinstance(rule.get("default", ""), str):
            raise StepError(f"phrases: {name}: the default is a text.")


def template_fields(metadata: Mapping[str, object], levels: Mapping[str, str], phrases: Mapping[str, dict]) -> dict:
    """The fields the recipe's item template may name besides {question}: the input's plain metadata, the
    expansion's levels and the phrases (later ones win)."""
    plain = {key: value for key, value in metadata.items() if isinstance(value, str | int | float)}
    return {**plain, **levels, **phrase_values(phrases, levels)}


def generated_text(reply: str) -> str:
    text = (reply or "").strip()
    if len(text) >= 2 and text[0] in QUOTES and text[-1] == QUOTES[text[0]]:
        inner = text[1:-1]
        if text[0] not in inner and QUOTES[text[0]] not in inner:  # one quoted sentence, not two
            text = inner.strip()
    return text


def output_levels(input_levels: Mapping[str, object], expansion: Mapping[str, str], fixed: Mapping[str, object]):
    """The output question's levels: the input's, then the expansion's, then the step's own (later ones win)."""
    own = {str(key): str(value) for key, value in fixed.items()}
    return {**{str(key): str(value) for key, value in input_levels.items()}, **expansion, **own}
