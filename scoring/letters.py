"""Which option letter a multiple-choice reply names (scoring/DESIGN.md, `letter` v2). Pure: no Django.

Models asked for "a single letter and nothing more" often say more: "Based on the patient's symptoms ... is
C: Clopidogrel", "I would choose option B", "2 OPTION B IS CORRECT.". A reply is read by the statements that
give an answer: the letter it begins with ("C", "C:", "(C)", "Option C", "Answer: C"), a line holding only a
letter, "the answer is C", "I would choose B", "option C is correct", "... is C: <text>", "... is <text>
(option C)". A letter is a capital A-E (a-e too, alone or after "option", "answer", "choose") standing alone:
never the first letter of a word ("Based", "Clopidogrel"), of a name ("B-cell", "D&C", "C. difficile") or the
article ("A 45-year-old", "A comprehensive approach"). Statements in a clause that reports someone else's belief,
concedes or denies ("Although the patient is convinced that the correct answer is A", "not ... (option C)")
are not the reply's answer. With the question's options, their texts are set aside before reading (an option
"Though A is more effective than B" names no letter), and a reply without a letter that quotes exactly one
option's text is read as that option.
"""

import re
import unicodedata
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

LETTERS = "ABCDE"

# Greek and Cyrillic capitals drawn like A, B, C, E (pmc-llama writes "Α" for "A").
LOOKALIKES = {ord(lookalike): ord(latin) for lookalike, latin in zip("ΑΒΕАВСЕ", "ABEABCE", strict=True)}
# A reply that repeats its prompt is read after the prompt's options line.
ECHOED_OPTIONS = re.compile(r"^[ \t]*#+[ \t]*Options:.*$", re.MULTILINE | re.IGNORECASE)

# A letter standing alone: not inside a word or a number ("4D"), not a name ("B-cell", "D&C", "A's", "A/B"),
# not an abbreviation ("C. difficile").
_BEFORE = r"(?<![\w'’/.&\-–])"
_AFTER = r"(?![\w'’]|[\-–/&]\w|\.\w|\.[ \t]+(?-i:[a-z]))"
CAPITAL = rf"{_BEFORE}(?P<letter>[A-E]){_AFTER}"
EITHER_CASE = rf"{_BEFORE}(?P<letter>[A-Ea-e]){_AFTER}"
OPEN, CLOSE = r"(?:(?<!\w)[(\[])?", r"[)\]]?"
KEYWORD = r"(?:option|choice|answer)"
AFTER_OPTION = r"(?:(?i:option)\s+)?"
APPROVES = r"(?:correct|right|best|most\s+(?:likely|appropriate|accurate))"
# A capital may follow these words in "I think C is correct"; after any other word ("hepatitis C is most
# likely", "Amphotericin B is the correct answer") it is part of a name. Checked after the letter (a search for
# a letter first is ~15x faster than one that starts with look-behinds).
_AFTER_WORD = "".join(rf"|(?<=\b{word} .)" for word in ("think", "believe", "so", "therefore", "thus", "hence"))
CAPITAL_NOT_AFTER_A_WORD = (
    rf"(?P<letter>[A-E])(?<![\w'’/.&\-–].)(?<!\w[(\[].)(?:(?<!\w .)(?<!\w [(\[].){_AFTER_WORD}){_AFTER}"
)
ANSWERING = r"(?i:answer|option|choice|diagnosis|likely|appropriate|best|correct)"

STATEMENTS = (
    # The reply begins with the letter: "C", "C:", "(C)", "C.", "Option C", "Answer: C", "2 OPTION B", "1. C";
    # "A is incorrect" begins with a letter it rejects.
    re.compile(
        rf"\A[^\w(\[]*(?:\d{{1,3}}[.)]?\s*)?(?:{KEYWORD}\s*[:\-–]?\s*)?{OPEN}{EITHER_CASE}{CLOSE}(?=\W|\Z)"
        r"(?!\s+is\s+(?:not|incorrect|wrong)\b)",
        re.IGNORECASE,
    ),
    # A line holding only a letter: "Here is my answer:\n\nB".
    re.compile(rf"^[ \t]*{OPEN}{CAPITAL}{CLOSE}[.:]?[ \t]*$", re.MULTILINE),
    # "the answer is C", "Answer: (C)", "the correct option is c", "the answer would be option C".
    re.compile(
        rf"\b{KEYWORD}\s*(?:is|would\s+be|will\s+be|[:=\-–])\s*(?:{KEYWORD}\s*)?{OPEN}{EITHER_CASE}{CLOSE}",
        re.IGNORECASE,
    ),
    # "I would choose option B", "I select C".
    re.compile(
        r"\b(?:choose|chose|choosing|select|selected|pick|picked|go\s+with|opt\s+for|recommend)\s+"
        rf"(?:{KEYWORD}\s*)?{OPEN}{EITHER_CASE}{CLOSE}",
        re.IGNORECASE,
    ),
    # "OPTION C IS CORRECT", "option b is the best answer".
    re.compile(rf"\b{KEYWORD}\s*{OPEN}{EITHER_CASE}{CLOSE}\s+is\s+(?:the\s+)?{APPROVES}", re.IGNORECASE),
    # "C is correct", "so B is the correct answer".
    re.compile(rf"{CAPITAL_NOT_AFTER_A_WORD}{CLOSE}\s+(?i:is\s+(?:the\s+)?{APPROVES})"),
    # "the most likely diagnosis is C: Clopidogrel", "would be option D.", "is (C)".
    re.compile(rf"\b(?:is|be)\b\s*:?\s*{AFTER_OPTION}{OPEN}{CAPITAL}{CLOSE}(?=\s*[:.)\],;]|\s*\Z|[ \t]*\n)"),
    # "the most likely cause is:\n\nC: Yolk sac tumor".
    re.compile(rf"\b(?:is|be)\b[^.\n]{{0,40}}:[ \t]*\n\s*{AFTER_OPTION}{OPEN}{CAPITAL}{CLOSE}(?=[:.)\]])"),
    # "the most likely diagnosis is tardive dyskinesia (Option B)".
    re.compile(
        rf"\b{ANSWERING}\b[^.,;\n()]{{0,60}}?\b(?:is|be)\b[^.,;\n()]{{1,150}}?(?<!\w)\({AFTER_OPTION}{CAPITAL}\)"
    ),
)
# "A or B", "C and D", "A, B, D": one statement naming more than one letter.
MORE_LETTERS = re.compile(
    rf"{CLOSE}\s*(?:,\s*(?i:or|and)?|/|&|\b(?i:or|and)\b)\s*(?:(?i:{KEYWORD})\s*)?{OPEN}{CAPITAL}"
)
# "A" and a space before one of these words is the option ("A is correct", "A or B"); before any other word, a
# number or an option's text it is the article ("A 45-year-old", "A comprehensive approach", "recommend a
# follow-up examination").
NOT_THE_ARTICLE = re.compile(r"(?:is|or|and|would|seems|appears|because)\b", re.IGNORECASE)
AFTER_OPTION_WORD = re.compile(r"(?i:option)\s*[(\[]?\Z")
# A clause that reports another's belief (the bias sentences: "the patient is convinced", "your colleagues
# believe", "you are initially confident", "your hospital has been using", "doctors diagnose", "recently"),
# concedes ("although", "while"), denies ("not", "rather than") or names a blood group ("blood group is A")
# does not give the reply's answer.
REPORTED = re.compile(
    r"\b(?:convinced|conviction|confident|colleagues?|popular|doctors|hospital|recent|recently|hypothes[ie]s|"
    r"assum\w*|others|although|though|while|whereas|despite|if|whether|not|never|rather|instead|than|against|"
    r"less|unlikely|incorrect|wrong|except|blood)\b|n't\b",
    re.IGNORECASE,
)
CLAUSE_END = re.compile(r"[.;!?\n]|,\s")
LONGEST_CLAUSE = 200  # characters looked back for the clause's start
SET_ASIDE = "…"  # stands in for an option's text while letters are read
SPACE_AND_WORD = re.compile(rf" (?=[A-Za-z0-9{SET_ASIDE}])")
SHORTEST_SET_ASIDE = 3  # option texts this long or longer are set aside ("IL-4", not "I")
SHORTEST_QUOTE = 4  # and this long or longer, with a letter in them, may be quoted ("Warfarin", not "5%")


class _Visible(dict[int, int | None]):
    """A `str.translate` table that drops invisible format characters (Unicode category Cf: zero-width space,
    soft hyphen, byte-order mark, directional marks) and makes LOOKALIKES Latin; filled as characters are met."""

    def __missing__(self, code: int) -> int | None:
        self[code] = None if unicodedata.category(chr(code)) == "Cf" else LOOKALIKES.get(code, code)
        return self[code]


VISIBLE = _Visible()


@dataclass(frozen=True)
class Choice:
    """The letter a reply names (None when it names none or several: `reason` says which), and the option
    text it quoted when it was read from a quote rather than a letter."""

    letter: str | None
    reason: str = ""
    quoted: str | None = None


def clean_reply(text: str) -> str:
    """The reply as read: NFKC-normalised, invisible format characters (zero-width space, soft hyphen) removed,
    look-alike capitals made Latin, a repeated prompt dropped, markdown emphasis (`*`) removed, stripped."""
    text = unicodedata.normalize("NFKC", text)
    if not text.isascii():
        text = text.translate(VISIBLE)
    echoes = list(ECHOED_OPTIONS.finditer(text))
    if echoes:
        text = text[echoes[-1].end() :]
    return text.replace("*", "").strip()


def option_texts(options: Any) -> dict[str, str]:
    """The question's options ({"A": text, ...}) as letter -> text with single spaces; {} when there are none."""
    if not isinstance(options, Mapping):
        return {}
    texts = {str(letter): " ".join(str(text).split()).rstrip(".") for letter, text in options.items()}
    return {letter: text for letter, text in texts.items() if letter in LETTERS and text}


def read_choice(reply: str, options: Mapping[str, str]) -> Choice:
    """The letter a cleaned, non-empty reply names (see the module docstring); `options` from `option_texts`."""
    named = named_letters(_set_aside(reply, options))
    if len(named) > 1:
        return Choice(None, "names several letters: " + ", ".join(sorted(named)))
    if named:
        return Choice(named[0])
    quoted = quoted_options(reply, options)
    if len(quoted) == 1:
        return Choice(quoted[0], quoted=options[quoted[0]])
    return Choice(None, "no letter found")


def named_letters(reply: str) -> list[str]:
    """The distinct letters the reply's answering statements name, in the order they appear."""
    found: set[tuple[int, str]] = set()
    for statement in STATEMENTS:
        for match in statement.finditer(reply):
            at = match.start("letter")
            if _is_article(reply, at) or _reported(reply, at):
                continue
            found.add((at, reply[at].upper()))
            end = match.end("letter")
            while (more := MORE_LETTERS.match(reply, end)) is not None and not _is_article(reply, more.start("letter")):
                found.add((more.start("letter"), more.group("letter")))
                end = more.end("letter")
    return list(dict.fromkeys(letter for _, letter in sorted(found)))


def quoted_options(reply: str, options: Mapping[str, str]) -> list[str]:
    """The options whose text the reply quotes (case-insensitive, whole words, outside a reported clause),
    leaving out an option whose text is part of another quoted one's."""
    quoted: dict[str, str] = {}
    for letter, text in options.items():
        if len(text) < SHORTEST_QUOTE or not any(char.isalpha() for char in text):
            continue
        if any(not _reported(reply, start) for start in _occurrences(reply, text)):
            quoted[letter] = text.lower()
    inside_another = {
        letter for letter, text in quoted.items() if any(text in other and text != other for other in quoted.values())
    }
    return [letter for letter in quoted if letter not in inside_another]


def _set_aside(reply: str, options: Mapping[str, str]) -> str:
    """The reply with each option's text replaced by SET_ASIDE, longest first."""
    for text in sorted(options.values(), key=len, reverse=True):
        if len(text) >= SHORTEST_SET_ASIDE:
            for start in reversed(list(_occurrences(reply, text))):
                reply = reply[:start] + SET_ASIDE + reply[start + len(text) :]
    return reply


def _occurrences(reply: str, text: str) -> Iterator[int]:
    """Where `text` occurs in the reply as whole words, case-insensitive (case-sensitive for the rare reply
    whose lower case changes its length)."""
    haystack, needle = reply.lower(), text.lower()
    if len(haystack) != len(reply):
        haystack, needle = reply, text
    start = haystack.find(needle)
    while start != -1:
        end = start + len(needle)
        if not (start and _is_word_char(haystack[start - 1])) and not (
            end < len(haystack) and _is_word_char(haystack[end])
        ):
            yield start
            start = haystack.find(needle, end)
        else:
            start = haystack.find(needle, start + 1)


def _is_word_char(char: str) -> bool:
    return char.isalnum() or char == "_"


def _is_article(reply: str, at: int) -> bool:
    """Whether the A at `at` is the article: before a word or a number, except the words of NOT_THE_ARTICLE;
    a lower-case a ending a reply cut short ("I would recommend a") is one too, unless after "option"."""
    letter = reply[at]
    if letter not in "Aa":
        return False
    if (space := SPACE_AND_WORD.match(reply, at + 1)) is not None:
        return NOT_THE_ARTICLE.match(reply, space.end()) is None
    after_word = at > 1 and reply[at - 1] == " " and reply[at - 2].isalpha()
    return letter == "a" and at + 1 == len(reply) and after_word and AFTER_OPTION_WORD.search(reply, 0, at) is None


def _reported(reply: str, at: int) -> bool:
    """Whether the clause holding `at`, up to it, reports a belief, concedes or denies (REPORTED)."""
    start = max(0, at - LONGEST_CLAUSE)
    for end in CLAUSE_END.finditer(reply, start, at):
        start = end.end()
    return REPORTED.search(reply, start, at) is not None
