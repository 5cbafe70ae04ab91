"""Real LLM-written texts from MEDIC's fixtures (/work/shared/datasets/medic/SOURCE.md): its restyled prompts
(4,556, each with its standard source prompt) and its answers."""

import json
from pathlib import Path

MEDIC = Path("/work/shared/datasets/medic/tests")


def _records(name: str) -> list[dict]:
    with (MEDIC / name).open() as lines:
        return [json.loads(line) for line in lines if line.strip()]


def answers() -> list[str]:
    return [r["text"] for r in _records("unit/io/sample_answers.jsonl") + _records("detection/sample_answers.jsonl")]


def restyled_pairs() -> list[tuple[str, str]]:
    """(standard prompt, one of its restyled variants), in file order."""
    standard = {r["id"]: r["text"] for r in _records("unit/io/kratkiew_0016gen_standard_prompts_00.jsonl")}
    restyled = _records("unit/io/kratkiew_0016gen_prompts_0_all.jsonl")
    return [(standard[r["metadata"]["Prompt_source_id"]], r["text"]) for r in restyled]
