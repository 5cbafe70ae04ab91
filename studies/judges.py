"""Judges: models that answer a study's rubric like raters (DESIGN.md, "Judges").

The steps a judge's call goes through; the model-call engine's `judge` kind (`judge_kind.py`) is a thin wrapper
(`prepare(call)` = `build_judge_request`, `store(call, completion)` = `record_judge_reply`):

- `build_judge_request(judge, item, repeat, swap=)`: the chat-completions body, pure (no call, no write): the
  judge's instructions, the item as its recipe shows it (two answers in the order `swap` says: every repeat asks
  both, `display_orders`), the rubric's own wording and the JSON Schema of the answers
  (`rubric_schema.json_schema`, what the model must return), also sent as `response_format` when the source
  supports structured output (`AnswerSource.structured_output`).
- `record_judge_reply(judge, item, repeat, swap=, request, raw_reply, latency_ms, model)`: the one path a reply
  takes. It is read as JSON (a fenced ```json block is fine), checked by `rubrics.check_answers`, the same form
  and validator a person's rating goes through (page and API), and stored as a `JudgeReply` (provenance, always,
  numbered by `attempt` under the item's row lock) plus a `JudgeRating` when valid. An invalid reply is a
  failure with its errors, never a rating; the judge kind asks again (`attempts_left`).
- `pending(judge, study)`: the (item, repeat, order) of the study without a rating, which
  `judge_kind.submit_judge` queues as calls.
"""

import json
import re

from django.conf import settings
from django.db import transaction

from datasets.recipes import options_text

from . import rubric_schema
from .models import SCENARIO_FIELDS, Judge, JudgeRating, JudgeReply, Study, StudyItem, StudyJudge
from .rubrics import check_answers, item_context
from .transitions import hold_study_open

REPLY_KEY = "reply"  # the errors' key for a reply that is not a JSON object at all
FENCED = re.compile(r"^```(?:json|JSON)?\s*\n(.*?)\n?```$", re.DOTALL)


class JudgeError(Exception):
    """A judge asked about an item it cannot judge (another rubric, a repeat it does not make)."""


# --- What the judge is asked ------------------------------------------------------------------------


def display_orders(study: Study) -> tuple[bool, ...]:
    """The orders a judge is asked each item in, per repeat (`swap`: the item's answer 2 shown first): two
    answers of one question both ways, so every item has a verdict in each order (position consistency);
    one answer as it is."""
    return (False, True) if study.display == "two_answers" else (False,)


def legacy_swap(study: Study, item_id: int, repeat: int) -> bool:
    """The order calls queued before every repeat asked both orders showed an item in (alternating with item
    and repeat): such a call's subject has no `swap`, and its replies were stored with this order."""
    return study.display == "two_answers" and (item_id + repeat) % 2 == 1


def shown_answers(item: StudyItem, swap: bool) -> list:
    if item.answer_id:
        return [item.answer]
    return [item.answer_2, item.answer_1] if swap else [item.answer_1, item.answer_2]


def judge_context(item: StudyItem, swap: bool) -> rubric_schema.ItemContext:
    """The item as the judge sees it, exactly as `assignment_context` gives it for a person."""
    return item_context(item, shown_answers(item, swap) if item.answer_1_id else ())


def _check(judge: Judge, item: StudyItem, repeat: int, swap: bool) -> None:
    if judge.rubric_version_id != item.study.rubric_version_id:
        raise JudgeError(f"The judge {judge} answers {judge.rubric_version}, not the rubric of {item.study}.")
    if not 0 <= repeat < judge.repeats:
        raise JudgeError(f"The judge {judge} makes {judge.repeats} repeat(s): 0 to {judge.repeats - 1}.")
    if swap not in display_orders(item.study):
        raise JudgeError(f"The items of {item.study} show one answer: they have no other order to show.")


def check_held(judge: Judge, study: Study) -> None:
    """A judge answers a study only when the study holds it (its file's `judges`) and it answers its rubric."""
    if judge.rubric_version_id != study.rubric_version_id:
        raise JudgeError(f"The judge {judge} answers {judge.rubric_version}, not the rubric of {study}.")
    if not StudyJudge.objects.filter(study=study, judge=judge).exists():
        held = ", ".join(study.judges.order_by("name").values_list("name", flat=True)) or "none"
        raise JudgeError(f"The study {study} does not hold the judge {judge} (its judges: {held}): name it under "
                         "`judges` in the study's file and load it.")  # fmt: skip


def describe_item(judge: Judge, item: StudyItem, swap: bool) -> str:
    """The item as the judge's recipe shows it, in SHOWN_FIELDS order: its question(s), answer(s) and groups,
    then a multiple-choice scenario's lines (options, correct answer, response) one after another."""
    shown = set(judge.shown_fields)
    parts = []
    if "question" in shown:
        if item.pair_id:
            parts += [f"Question 1:\n{item.pair.question_1.text}", f"Question 2:\n{item.pair.question_2.text}"]
        else:
            parts.append(f"Question:\n{(item.question or item.answer.question).text}")
    answers = shown_answers(item, swap)
    if "answers" in shown:
        if len(answers) == 1:
            parts.append(f"Answer:\n{answers[0].text}")
        else:
            parts += [f"Answer {n}:\n{answer.text}" for n, answer in enumerate(answers, start=1)]
    if "groups" in shown:
        groups = judge_context(item, swap).groups
        if groups:
            parts.append("Groups: " + ", ".join(label for _, label in groups))
    scenario = [line for name in SCENARIO_FIELDS if name in shown for line in _scenario_lines(name, item, answers)]
    if scenario:
        parts.append("\n".join(scenario))
    return "\n\n".join(parts)


def _scenario_lines(name: str, item: StudyItem, answers: list) -> list[str]:
    """A multiple-choice question's lines as BiasMedQA's prompts write them; JudgeError when it has none."""
    if name == "response":
        if len(answers) == 1:
            return [f"RESPONSE: {answers[0].text}"]
        return [f"RESPONSE {n}: {answer.text}" for n, answer in enumerate(answers, start=1)]
    question = item.question or item.answer.question
    metadata = question.metadata if isinstance(question.metadata, dict) else {}
    options = metadata.get("options")
    if not isinstance(options, dict) or not options:
        raise JudgeError(f"The question of item {item.pk} has no options to show (shown field {name!r}).")
    if name == "options":
        return [f"### Options: {options_text(options, {})}"]
    letter = metadata.get("answer_idx")
    if letter not in options:
        raise JudgeError(f"The question of item {item.pk} names no correct option (shown field {name!r}).")
    return [f"CORRECT ANSWER: {letter}: {options[letter]}"]


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
        if q["type"] == "list":
            lines += _describe_list(q)
    return "\n".join(lines)


def _describe_list(q: dict) -> list[str]:
    """A list question's entries: none or several (up to max_items), each field with its rule."""
    most = q.get("max_items", rubric_schema.DEFAULT_MAX_ITEMS)
    lines = [f"  A list of {q['item_label']} entries (none, one or several, at most {most}), each with:"]
    for spec in q["fields"]:
        rule = {
            "quote": "text copied exactly from the answer",
            "text": "text",
            "scale": f"a whole number from {spec.get('min')} to {spec.get('max')}",
            "number": f"a number from {spec.get('min')} to {spec.get('max')}",
        }[spec["type"]]
        if spec.get("labels"):
            rule += " (" + "; ".join(f"{value} = {text}" for value, text in spec["labels"].items()) + ")"
        lines.append(f"    {spec['key']}{' (required)' if spec.get('required') else ''}: {spec['label']}: {rule}.")
    return lines


def build_judge_request(judge: Judge, item: StudyItem, repeat: int, *, swap: bool = False) -> dict:
    """The chat-completions body to send (model, messages, temperature, max_tokens and, when the source supports
    structured output, `response_format`): what is stored as sent."""
    _check(judge, item, repeat, swap)
    definition = judge.definition()  # the part of the rubric the judge answers (its `questions`), or all of it
    context = judge_context(item, swap)
    schema = rubric_schema.json_schema(definition, context)
    parts = [
        describe_item(judge, item, swap),
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
    body = {"model": source.model_name, "messages": messages, "temperature": source.temperature,
            "max_tokens": source.max_tokens}  # fmt: skip
    if source.structured_output == "json_object":
        body["response_format"] = {"type": "json_object"}
    elif source.structured_output == "json_schema":
        # strict: false, since OpenAI's strict mode refuses schemas with optional keys or bounds, which rubrics use.
        body["response_format"] = {"type": "json_schema", "json_schema": {"name": "rubric", "schema": schema,
                                                                          "strict": False}}  # fmt: skip
    return body


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
    judge: Judge, item: StudyItem, repeat: int, *, swap: bool = False, request: dict, raw_reply: str,
    latency_ms: int | None, model: str = "",
) -> JudgeReply:  # fmt: skip
    """Store a judge's reply with its provenance, and its rating when the rubric's validator accepts it.

    The reply is checked by the same form and validator as a person's rating of the item, so a judge's stored
    values are what a person's would be for the same answers. Every reply is kept, numbered by `attempt` (0, 1,
    ...) per (judge, item, repeat, order), decided under the item's row lock, so two stores at once (a lease ran
    out under a slow worker) number theirs apart and make at most one rating. Once the pair has a rating a later
    reply is a duplicate: it is not stored and the rating's reply is returned (as a second answer of a question
    finds the first). Refused (StudyLocked) once the study is locked.
    """
    _check(judge, item, repeat, swap)
    check_held(judge, item.study)
    values, errors = parse_reply(raw_reply)
    if values is not None:
        # A judge asking part of the rubric is checked on that part, and a key outside it is refused.
        part = judge.definition() if judge.questions else None
        values, errors = check_answers(judge.rubric_version, values, judge_context(item, swap), definition=part)
    pair = {"judge": judge, "item": item, "repeat": repeat, "swap_answers": swap}
    with transaction.atomic():
        hold_study_open(item.study_id)
        # The item's row only (its default ordering joins the study, which hold_study_open shares).
        list(StudyItem.objects.select_for_update(no_key=True, of=("self",)).filter(pk=item.pk).order_by().values("pk"))
        rated = JudgeRating.objects.select_related("reply").filter(**pair).first()
        if rated is not None:
            return rated.reply
        attempt = JudgeReply.objects.filter(**pair).count()  # attempts are 0..n-1 with no gaps (the lock)
        reply = JudgeReply.objects.create(
            **pair, attempt=attempt, request=request, raw_reply=raw_reply, model=model[:200], latency_ms=latency_ms,
            errors=errors,
        )  # fmt: skip
        if not errors:
            JudgeRating.objects.create(
                reply=reply, judge=judge, item=item, repeat=repeat, rubric_version=judge.rubric_version,
                values=values, swap_answers=swap, submitted_at=reply.received_at,
            )  # fmt: skip
    return reply


def attempts_left(reply: JudgeReply) -> int:
    """How many more times to ask after this reply: none after a valid one; after an invalid one, what is left
    of the round of JUDGE_INVALID_REPLY_ATTEMPTS replies it belongs to (all of a pair's replies before a rating
    are invalid, so its attempt number counts them). Submitting the judge again starts a new round."""
    if not reply.errors:
        return 0
    per_round = max(1, settings.JUDGE_INVALID_REPLY_ATTEMPTS)
    return (per_round - (reply.attempt + 1) % per_round) % per_round


# --- What is left to ask ---------------------------------------------------------------------------------


def pending(judge: Judge, study: Study) -> list[tuple[int, int, bool]]:
    """(item id, repeat, swap) of the study the judge has no rating for yet, in item order: never asked, or
    asked and every reply invalid (asked again when the judge is submitted again)."""
    rated = set(JudgeRating.objects.filter(judge=judge, item__study=study).values_list("item_id", "repeat",
                                                                                        "swap_answers"))  # fmt: skip
    item_ids = study.items.order_by("pk").values_list("pk", flat=True)
    orders, repeats = display_orders(study), range(judge.repeats)
    return [(item_id, repeat, swap) for item_id in item_ids for repeat in repeats for swap in orders
            if (item_id, repeat, swap) not in rated]  # fmt: skip
