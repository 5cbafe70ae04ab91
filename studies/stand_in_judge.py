"""The stand-in judge's own verdict on an item, before any error it is told to make: a value drawn by a hash of the
item as the judge's prompt shows it (`studies.judges.describe_item`). Django-free, so the stand-in server
(tests/llm_server.py, scripts/stand_in_llm.py) and the demo's simulated people (studies/demo_judges.py) read the
same draw: the demo's people rate around it, and a judge told to err is then seen to err (studies/DESIGN.md,
"Judges").
"""

import hashlib
from collections.abc import Sequence


def unit(text: str, label: str) -> float:
    """A number in [0, 1) fixed by the text and a label: deterministic, and different between texts."""
    return int(hashlib.sha256(f"{label}\0{text}".encode()).hexdigest(), 16) / 2**256


def drawn_choice(item: str, key: str, choices: Sequence):
    """The stand-in's own choice for question `key` of the item among `choices` (in the schema's order)."""
    return choices[int(unit(item, f"value:{key}") * len(choices))] if choices else None
