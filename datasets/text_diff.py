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


def diff_segments(first: str, second: str) -> tuple[list[tuple[str, bool]], list[tuple[str, bool]]]:
    """Each text as (chunk, changed) segments, to highlight what differs between two questions."""
    a, b = first.split(" "), second.split(" ")
    left: list[tuple[str, bool]] = []
    right: list[tuple[str, bool]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        changed = tag != "equal"
        if i2 > i1:
            left.append((" ".join(a[i1:i2]), changed))
        if j2 > j1:
            right.append((" ".join(b[j1:j2]), changed))
    return left, right
