"""Reference rules: which answer a two-answer scorer reads beside an answer (scoring/DESIGN.md, "Scorers that
read several answers"). Each rule finds a whole batch's references in one query."""

from collections.abc import Callable, Sequence
from typing import NamedTuple

from datasets.models import Answer

from . import scorers


class Referring(NamedTuple):
    """What a rule knows of an answer that needs a reference."""

    answer_id: int
    base_question_id: int | None
    source_id: int
    settings_hash: str


class Reference(NamedTuple):
    answer_id: int
    reply: scorers.Reply


def same_source_condition_base(answers: Sequence[Referring]) -> dict[int, Reference]:
    """Per answer id: the answer to its question's base question by the same source with the same settings hash
    (the same generation settings but the question: the same condition). Answers whose question has no base,
    and answers whose base has no such answer, are left out."""
    wanted = {
        (answer.base_question_id, answer.source_id, answer.settings_hash)
        for answer in answers
        if answer.base_question_id is not None
    }
    if not wanted:
        return {}
    # One query for the batch: the product of the three sets may hold more than is wanted (a base answered by
    # another source of the batch), each kept only when its own triple is wanted. Served by the unique index
    # on (question, source, settings_hash).
    candidates = Answer.objects.filter(
        question_id__in={question for question, _, _ in wanted},
        source_id__in={source for _, source, _ in wanted},
        settings_hash__in={settings for _, _, settings in wanted},
    )
    # Unsorted: Answer's default ordering would join questions and datasets only to sort.
    rows = candidates.order_by().values_list("pk", "question_id", "source_id", "settings_hash", "text", "refusal")
    found = {
        (question, source, settings): Reference(pk, scorers.Reply(text, refusal))
        for pk, question, source, settings, text, refusal in rows
        if (question, source, settings) in wanted
    }
    references = {}
    for answer in answers:
        reference = found.get((answer.base_question_id, answer.source_id, answer.settings_hash))
        if reference is not None:
            references[answer.answer_id] = reference
    return references


# Rule name (scorers.REFERENCE_RULES) -> its lookup.
RULES: dict[str, Callable[[Sequence[Referring]], dict[int, Reference]]] = {
    scorers.SAME_SOURCE_CONDITION_BASE: same_source_condition_base,
}
