"""The engine's `judge` kind: one call asks a judge about one item of a study, once per repeat and display
order (studies/DESIGN.md, "Judges"; engine/DESIGN.md, "Kinds").

A call's subject is `{"judge", "study", "item", "repeat", "swap"}` and its batch `"judge:<judge id>:study:<study
id>"`; it goes to the judge's source's endpoint, so a judge shares the source's concurrency and rate limit with
the source's answer calls. `prepare` builds the request (`build_judge_request`), `store` keeps the reply
(`record_judge_reply`: every reply, at most one rating per question) and asks again after an invalid reply
(`engine.AskAgain`) until JUDGE_INVALID_REPLY_ATTEMPTS replies, then gives up (`engine.GiveUp`: the call
fails with the last reply's errors); `failed` adds nothing: the call keeps the error and its history, and the
question is asked again when the judge is submitted again (`submit_judge` puts the call back in the queue).
"""

import json

from django.db import transaction
from django.db.models import Count

import engine
from engine import calls as engine_calls
from engine.models import Call

from .judges import (
    JudgeError,
    attempts_left,
    build_judge_request,
    check_held,
    legacy_swap,
    pending,
    record_judge_reply,
)
from .models import Judge, Study, StudyItem, StudyJudge
from .transitions import StudyLocked

KIND = "judge"


def batch_of(judge_id: int, study_id: int) -> str:
    return f"judge:{judge_id}:study:{study_id}"


def subject_for(judge_id: int, study_id: int, item_id: int, repeat: int, swap: bool = False) -> dict:
    return {"judge": judge_id, "study": study_id, "item": item_id, "repeat": repeat, "swap": swap}


def _subject_rows(call) -> tuple[Judge, StudyItem, int, bool]:
    """The call's judge, item, repeat and display order as they are now; CallRefused when it can never be asked."""
    subject = call.subject
    judge = Judge.objects.select_related("source", "rubric_version").filter(pk=subject.get("judge")).first()
    if judge is None:
        raise engine.CallRefused(f"judge {subject.get('judge')} no longer exists")
    shown = ("study__rubric_version", "answer__question", "question", "pair__question_1", "pair__question_2",
             "answer_1", "answer_2")  # fmt: skip
    item = (
        StudyItem.objects.select_related(*shown).filter(pk=subject.get("item"), study_id=subject.get("study")).first()
    )
    if item is None:
        raise engine.CallRefused(f"item {subject.get('item')} is no longer in study {subject.get('study')}")
    repeat = int(subject.get("repeat", 0))
    swap = bool(subject["swap"]) if "swap" in subject else legacy_swap(item.study, item.pk, repeat)
    return judge, item, repeat, swap


class JudgeKind:
    def prepare(self, call) -> engine.Request:
        judge, item, repeat, swap = _subject_rows(call)
        if item.study.locked_at is not None:
            raise engine.CallRefused(f"the study {item.study} is locked: it takes no judge reply")
        try:
            check_held(judge, item.study)
            body = build_judge_request(judge, item, repeat, swap=swap)
        except JudgeError as error:
            raise engine.CallRefused(str(error)) from None
        return engine.Request(mode="chat", body=body)

    def store(self, call, completion) -> dict | engine.AskAgain | engine.GiveUp:
        """Keep the reply; after an invalid one ask again within its round, else fail with its errors. Decided
        from the reply's attempt number, numbered under the item's lock (held until the engine's transaction
        commits), so two stores of one call count each other's replies."""
        judge, item, repeat, swap = _subject_rows(call)
        reply = record_judge_reply(judge, item, repeat, swap=swap, request=call.request or {},
                                   raw_reply=completion.text, latency_ms=completion.latency_ms,
                                   model=completion.model)  # fmt: skip
        result = {"reply": reply.id}
        if not reply.errors:
            return result
        reason = f"invalid reply (attempt {reply.attempt}): {json.dumps(reply.errors, ensure_ascii=False)}"
        if attempts_left(reply):
            return engine.AskAgain(result=result, reason=reason)
        return engine.GiveUp(result=result, reason=reason)

    def failed(self, call, error) -> None:
        """Nothing to record: the call holds the error and the history of its attempts, and no reply is made
        up for it (a reply is what the judge said)."""


def submit_judge(judge: Judge, study: Study) -> int:
    """Queue a call for every (item, repeat) of the study the judge has no reply to and no call under way for;
    a failed or cancelled call of such a pair is put back in the queue (its history kept) rather than doubled.
    Returns how many calls were queued: submitting again while they run, or once all are replied, queues none.

    Refused (JudgeError) for a judge the study does not hold or one of another rubric, and when the judge's
    source has no endpoint to ask; StudyLocked once the study is locked.
    """
    check_held(judge, study)
    source = judge.source
    if not source.base_url or source.endpoint_id is None:
        raise JudgeError(f"The judge's source {source} has no endpoint (base URL) to ask: give it one first.")
    batch = batch_of(judge.pk, study.pk)
    with transaction.atomic():
        # One submit of a (judge, study) at a time: the second sees the first's calls.
        if StudyJudge.objects.select_for_update().filter(study=study, judge=judge).first() is None:
            raise JudgeError(f"The study {study} no longer holds the judge {judge}.")
        if Study.objects.filter(pk=study.pk, locked_at__isnull=False).exists():
            raise StudyLocked("This study is locked: its judges are not asked any more.")
        existing: dict[tuple[int, int, bool], tuple[int, str]] = {}
        for call_id, subject, status in Call.objects.filter(kind=KIND, batch=batch).values_list(
            "id", "subject", "status"
        ):
            item_id, repeat = subject.get("item"), subject.get("repeat")
            # A call queued before each repeat asked both orders has no `swap`: its order alternated.
            swap = bool(subject["swap"]) if "swap" in subject else legacy_swap(study, item_id, repeat)
            key = (item_id, repeat, swap)
            if key not in existing or status in engine_calls.UNFINISHED:
                existing[key] = (call_id, status)
        new, again = [], []
        for item_id, repeat, swap in pending(judge, study):
            call_id, status = existing.get((item_id, repeat, swap), (None, ""))
            if call_id is None:
                new.append(subject_for(judge.pk, study.pk, item_id, repeat, swap))
            elif status in (Call.Status.FAILED, Call.Status.CANCELLED):
                again.append(call_id)
        submitted = engine_calls.submit(KIND, source.endpoint, new, batch=batch)
        submitted += engine_calls.requeue(again)
    return submitted


def batch_counts(judge: Judge, study: Study) -> dict[str, int]:
    """The batch's calls by status (pending, running, done, failed, cancelled), zeros included."""
    counts = dict.fromkeys(Call.Status.values, 0)
    rows = Call.objects.filter(kind=KIND, batch=batch_of(judge.pk, study.pk)).values("status").annotate(n=Count("id"))
    counts.update({row["status"]: row["n"] for row in rows.order_by()})
    return counts


def register() -> None:
    engine.register(KIND, JudgeKind())
