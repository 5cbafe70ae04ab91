"""Word-level differences between two question texts (what a counterfactual pair varies)."""

import difflib
import re

_TOKEN = re.compile(r"\S+")


def describe_difference(first: str, second: str) -> str:
    """E.g. 'Black men → White men'; several changes are joined by '; '."""
    a, b = _TOKEN.findall(first), _TOKEN.findall(second)
    changes = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag != "equal":
            changes.append(f"{' '.join(a[i1:i2]) or '(nothing)'} → {' '.join(b[j1:j2]) or '(nothing)'}")
    return "; ".join(changes)
