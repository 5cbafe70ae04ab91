"""Whether a generated text is a usable patient question (DESIGN.md, "MEDIC": "usable question").

Models asked to write or restyle a question often answer something else: nothing, a word, a made-up chatbot
reply ("CHATBOT: Hello there! ..."), or talk about the task ("Sure, here's a revised version: ..."). Such a text
is kept (it is what the model said) but flagged, so the next step and the study's questions leave it out and
count it. The rules are data-free and versioned: a new rule is a new version, and the version is stored with
each verdict. MEDIC's own fixtures (`kratkiew_0016gen_prompts_0_all.jsonl`) are the test bed.

Pure: no Django.
"""

import re
from dataclasses import dataclass

VERSION = 1
MIN_WORDS = 3
# A role label at a line's start or after a sentence: the text plays both sides of a conversation.
ROLE_LABEL = re.compile(
    r"(?:^|[\r\n.!?:]\s*)(?:ai\s+)?(?:chatbot(?:\s+response)?|assistant|answer|response|doctor|bot)\s*:", re.IGNORECASE
)
# The model talking about the rewrite instead of writing it.
PREAMBLE = re.compile(
    r"^\W*(?:sure\b|certainly\b|here(?:'s| is)\b|possible rewrite\b|i(?:'m| am) sorry\b|as an ai\b|"
    r"greetings!\s*i am sorry)",
    re.IGNORECASE,
)
# ... or announcing it near the start ("here's how we could rephrase that question: ...").
TASK_WORDS = re.compile(r"\b(?:rephras\w*|re-?writ\w*|revised version|revision|restyl\w*)\b", re.IGNORECASE)
TASK_WORDS_WITHIN = 120  # characters from the start
SELF_REFERENCE = re.compile(r"\bas an ai\b|\bai language model\b", re.IGNORECASE)


@dataclass(frozen=True)
class Verdict:
    usable: bool
    reason: str = ""  # why not, in words
    version: int = VERSION

    def as_metadata(self) -> dict:
        return {"usable": self.usable, "unusable_reason": self.reason, "usable_version": self.version}


def check(text: str) -> Verdict:
    stripped = (text or "").strip()
    if not stripped:
        return Verdict(False, "empty")
    if len(stripped.split()) < MIN_WORDS:
        return Verdict(False, f"fewer than {MIN_WORDS} words")
    if ROLE_LABEL.search(stripped):
        return Verdict(False, "contains a made-up conversation (a role label such as 'Chatbot:')")
    if PREAMBLE.search(stripped) or TASK_WORDS.search(stripped[:TASK_WORDS_WITHIN]):
        return Verdict(False, "talks about the task instead of asking (e.g. 'Sure, here is ...')")
    if SELF_REFERENCE.search(stripped):
        return Verdict(False, "speaks as an AI assistant, not as a patient")
    return Verdict(True)
