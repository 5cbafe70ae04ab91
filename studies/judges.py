"""Judges: models that answer a study's rubric like raters (DESIGN.md, "Judges").

The steps a judge's call goes through; the model-call engine's `judge` kind (`judge_kind.py`) is a thin wrapper
(`prepare(call)` = `build_judge_request`, `store(call, completion)` = `record_judge_reply`):

- `build_judge_request(judge, item, repeat)`: the chat-completions body, pure (no call, no write): the judge's
  instructions, the item as its recipe shows it (two answers in a balanced order, `judge_swap`), the rubric's
  own wording and the JSON Schema of the answers (`rubric_schema.json_schema`, what the model must return).
- `record_judge_reply(judge, item, repeat, request, raw_reply, latency_ms, model)`: the one path a reply takes.
  It is read as JSON (a fenced ```json block is fine), checked by `rubrics.check_answers`, the same form and
  validator a person's rating goes through (page and API), and stored as a `JudgeReply` (provenance, always)
  plus a `JudgeRating` when valid. An invalid reply is a failure with its errors, never a rating.
- `pending(judge, study)`: the item x repeat pairs without a stored reply, which `judge_kind.submit_judge`
  queues as calls.
"""

import json
import re

from django.db import IntegrityError, transaction

from . import rubric_schema
from .models import Judge, JudgeRating, JudgeReply, Study, StudyItem, StudyJudge
from .rubrics import check_answers, item_context
from .transitions import hold_study_open

REPLY_KEY = "reply"  # the errors' key for a reply that is not a JSON object at all
FENCED = re.compile(r"^```(?:json|JSON)?\s*\n(.*?)\n?```$", re.DOTALL)


class JudgeError(Exception):
    """A judge asked about an item it cannot judge (another rubric, a repeat it does not make)."""


# --- What the judge is asked ------------------------------------------------------------------------


def judge_swap(item: StudyItem, repeat: int) -> bool:
    """Two answers of one question: shown in both orders, alternating with item and repeat (a judge making
    two repeats sees each item both ways), as people's pairwise assignments alternate with their slot."""
    return item.study.display == "two_answers" and (item.pk + repeat) % 2 == 1


def shown_answers(item: StudyItem, swap: bool) -> list:
    if item.answer_id:
        return [item.answer]
    return [item.answer_2, item.answer_1] if swap else [item.answer_1, item.answer_2]


def judge_context(item: StudyItem, repeat: int) -> rubric_schema.ItemContext:
    """The item as the judge sees it, exactly as `assignment_context` gives it for a person."""
    swap = judge_swap(item, repeat)
    return item_context(item, shown_answers(item, swap) if item.answer_1_id else ())


def _check(judge: Judge, item: StudyItem, repeat: int) -> None:
    if judge.rubric_version_id != item.study.rubric_version_id:
        raise JudgeError(f"The judge {judge} answers {judge.rubric_version}, not the rubric of {item.study}.")
    if not 0 <= repeat < judge.repeats:
        raise JudgeError(f"The judge {judge} makes {judge.repeats} repeat(s): 0 to {judge.repeats - 1}.")


def check_held(judge: Judge, study: Study) -> None:
    """A judge answers a study only when the study holds it (its file's `judges`) and it answers its rubric."""
    if judge.rubric_version_id != study.rubric_version_id:
        raise JudgeError(f"The judge {judge} answers {judge.rubric_version}, not the rubric of {study}.")
    if not StudyJudge.objects.filter(study=study, judge=judge).exists():
        held = ", ".join(study.judges.order_by("name").values_list("name", flat=True)) or "none"
        raise JudgeError(f"The study {study} does not hold the judge {judge} (its judges: {held}): name it under "
                         "`judges` in the study's file and load it.")  # fmt: skip


def describe_item(judge: Judge, item: StudyItem, repeat: int) -> str:
    """The item as the judge's recipe shows it: its question(s), answer(s) and groups, in SHOWN_FIELDS order."""
    shown = set(judge.shown_fields)
    parts = []
    if "question" in shown:
        if item.pair_id:
            parts += [f"Question 1:\n{item.pair.question_1.text}", f"Question 2:\n{item.pair.question_2.text}"]
        else:
            parts.append(f"Question:\n{(item.question or item.answer.question).text}")
    if "answers" in shown:
        answers = shown_answers(item, judge_swap(item, repeat))
        if len(answers) == 1:
            parts.append(f"Answer:\n{answers[0].text}")
        else:
            parts += [f"Answer {n}:\n{answer.text}" for n, answer in enumerate(answers, start=1)]
    if "groups" in shown:
        groups = judge_context(item, repeat).groups
        if groups:
            parts.append("Groups: " + ", ".join(label for _, label in groups))
    return "\n\n".join(parts)


def describe_rubric(definition: dict, context: rubric_schema.ItemContext) -> str:
    """The rubric's own wording, as a rater reads it: its notes, each question with its options and rules."""
    lines = [f"{note['summary']}: {note['text']}" for note in definition.get("details") or []]
    for q in rubric_schema.questions(definition):
        lines.append(f"- {q['key']} ({q['type']}{', required' if q.get('required') else ''}): {q['label']}")
        if q.get("hint"):
            lines.append(f"  {q['hint']}")
        if condition := q.get("condition"):
            answers = ", ".join(json.dumps(value) for value in condition["in"])
            lines.append(f"  Only when {condition['question']} is one of {answers}; otherwise leave it empty.")
        descriptions = {o["key"]: o.get("description", "") for o in q.get("options") or []}
        for key, label in rubric_schema.options(q, context) if q["type"] in ("single", "multiple") else []:
            described = f" ({descriptions[key]})" if descriptions.get(key) else ""
            lines.append(f"  {json.dumps(key)}: {label}{described}")
        if q.get("exclusive"):
            lines.append(f"  {json.dumps(q['exclusive'])} may only be chosen alone.")
        scale = q.get("scale") if q["type"] == "span" else q if q["type"] == "scale" else None
        if scale is not None:
            labels = "; ".join(f"{value} = {text}" for value, text in (scale.get("labels") or {}).items())
            lines.append(f"  A whole number from {scale['min']} to {scale['max']}{f' ({labels})' if labels else ''}.")
        if q["type"] == "span":
            lines.append(f"  A list of {{quote, score}}: {q['quote_label']}, copied exactly from the answer.")
    return "\n".join(lines)


def build_judge_request(judge: Judge, item: StudyItem, repeat: int) -> dict:
    """The chat-completions body to send (model, messages, temperature, max_tokens): what is stored as sent."""
    _check(judge, item, repeat)
    definition = judge.rubric_version.definition
    context = judge_context(item, repeat)
    schema = rubric_schema.json_schema(definition, context)
    parts = [
        describe_item(judge, item, repeat),
        "Questions:\n" + describe_rubric(definition, context),
        "Reply with one JSON object only, keyed by the questions' keys, matching this JSON Schema:\n"
        + json.dumps(schema, ensure_ascii=False, sort_keys=True),
    ]
    for number, example in enumerate(judge.examples, start=1):
        reply = json.dumps(example["reply"], ensure_ascii=False, sort_keys=True)
        parts.append(f"Example {number}:\n{example['item']}\nReply: {reply}")
    source = judge.source
    messages = [{"role": "system", "content": judge.instructions}] if judge.instructions else []
    messages.append({"role": "user", "content": "\n\n".join(parts)})
    return {"model": source.model_name, "messages": messages, "temperature": source.temperature,
            "max_tokens": source.max_tokens}  # fmt: skip


# --- What the judge replied --------------------------------------------------------------------------


def parse_reply(text: str) -> tuple[dict | None, dict[str, list[str]]]:
    """(values, errors): the reply's JSON object, tolerating a fenced ```json block around it."""
    stripped = text.strip()
    fenced = FENCED.match(stripped)
    if fenced:
        stripped = fenced.group(1).strip()
    try:
        values = json.loads(stripped)
    except ValueError as error:
        return None, {REPLY_KEY: [f"The reply is not JSON: {error}."]}
    if not isinstance(values, dict):
        return None, {REPLY_KEY: [f"The reply must be a JSON object of answers, not {type(values).__name__}."]}
    return values, {}


def record_judge_reply(
    judge: Judge, item: StudyItem, repeat: int, *, request: dict, raw_reply: str, latency_ms: int | None,
    model: str = "",
) -> JudgeReply:  # fmt: skip
    """Store a judge's reply with its provenance, and its rating when the rubric's validator accepts it.

    The reply is checked by the same form and validator as a person's rating of the item, so a judge's stored
    values are what a person's would be for the same answers. Refused (StudyLocked) once the study is locked;
    a reply already stored for (judge, item, repeat), e.g. by a concurrent run, is kept and returned.
    """
    _check(judge, item, repeat)
    check_held(judge, item.study)
    values, errors = parse_reply(raw_reply)
    if values is not None:
        values, errors = check_answers(judge.rubric_version, values, judge_context(item, repeat))
    swap = judge_swap(item, repeat)
    try:
        with transaction.atomic():
            hold_study_open(item.study_id)
            reply = JudgeReply.objects.create(
                judge=judge, item=item, repeat=repeat, swap_answers=swap, request=request, raw_reply=raw_reply,
                model=model[:200], latency_ms=latency_ms, errors=errors,
            )  # fmt: skip
            if not errors:
                JudgeRating.objects.create(
                    reply=reply, judge=judge, item=item, repeat=repeat, rubric_version=judge.rubric_version,
                    values=values, swap_answers=swap, submitted_at=reply.received_at,
                )  # fmt: skip
    except IntegrityError:
        stored = JudgeReply.objects.filter(judge=judge, item=item, repeat=repeat).first()
        if stored is None:
            raise
        return stored
    return reply


# --- What is left to ask ---------------------------------------------------------------------------------


def pending(judge: Judge, study: Study) -> list[tuple[int, int]]:
    """(item id, repeat) of the study the judge has not replied to yet, in item order."""
    done = set(JudgeReply.objects.filter(judge=judge, item__study=study).values_list("item_id", "repeat"))
    item_ids = study.items.order_by("pk").values_list("pk", flat=True)
    repeats = range(judge.repeats)
    return [(item_id, repeat) for item_id in item_ids for repeat in repeats if (item_id, repeat) not in done]
