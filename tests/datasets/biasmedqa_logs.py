"""How BiasMedQA's logs (and the tables parsed from them) escape text, to compare our prompts with theirs.

The authors' logs hold each prompt with its question passed through `json.dumps` (newlines and quotes
escaped) and each option the same, but with a trailing escaped quote lost (`.strip('"')`). Checked on the
20 logged self-diagnosis prompts of gpt-4-0613: 20 of 20 equal once the base question is escaped so.
"""

import json

SEPARATOR = "~" * 100


def log_escaped_text(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)[1:-1]


def log_escaped_option(option: str) -> str:
    return json.dumps(option, ensure_ascii=False).strip('"')


def log_escaped(metadata: dict, text: str) -> tuple[str, dict]:
    """A base question's text and metadata as the logs show them."""
    options = {letter: log_escaped_option(value) for letter, value in (metadata.get("options") or {}).items()}
    return log_escaped_text(text), {**metadata, "options": options}


def logged_prompts(path) -> list[str]:
    """The PROMPT blocks of a raw log: records separated by a line of 100 '~'."""
    prompts = []
    for record in path.read_text(encoding="utf-8").split(SEPARATOR + "\n"):
        if not record.strip():
            continue
        assert record.startswith("PROMPT:\n"), record[:80]
        prompts.append(record[len("PROMPT:\n") : record.index("\n\nCORRECT ANSWER:")])
    return prompts
