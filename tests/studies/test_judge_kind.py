"""The engine's `judge` kind without a worker: `submit_judge` queues one call per (item, repeat) left to ask,
once (submitting again, or two submits at once, add nothing), and refuses what cannot be asked; `prepare`
refuses a call whose judge, item or study no longer allows it; `store` keeps one reply per (judge, item, repeat).
"""

import importlib
import threading
import time

import pytest
from django.db import connection, transaction
from django.utils import timezone

import engine
from engine.llm_client import Completion
from engine.models import Call
from studies import judge_kind
from studies.judge_kind import JudgeKind, batch_of, submit_judge
from studies.judges import JudgeError, build_judge_request, legacy_swap, record_judge_reply
from studies.models import Judge, JudgeRating, JudgeReply, StudyItem
from studies.transitions import StudyLocked
from tests.factories import AnswerFactory, AnswerSourceFactory, PairwiseItemFactory, group_rubric_item

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _no_lanes(monkeypatch):
    """No lane runs here (Celery is eager in tests): the calls stay as `submit_judge` left them."""
    monkeypatch.setattr("engine.lanes.dispatch_lanes", lambda endpoint: 0)


def held_judge(item, *, repeats: int = 2, base_url: str = "http://127.0.0.1:9/v1") -> Judge:
    source = AnswerSourceFactory(name="Judge model", base_url=base_url, model_name="judge-model")
    judge = Judge.objects.create(name="Judge", source=source, rubric_version=item.study.rubric_version,
                                 instructions="Rate.", repeats=repeats)  # fmt: skip
    item.study.judges.add(judge)
    return judge


def batch_calls(judge, study):
    return Call.objects.filter(kind="judge", batch=batch_of(judge.pk, study.pk)).order_by("id")


def test_a_call_is_queued_for_every_item_and_repeat_without_a_reply_once():
    item = group_rubric_item()
    other = StudyItem.objects.create(study=item.study, answer=AnswerFactory(question=item.answer.question))
    judge = held_judge(item)
    record_judge_reply(judge, item, 1, request={}, raw_reply='{"on_topic": "no"}', latency_ms=3)

    assert submit_judge(judge, item.study) == 3
    assert submit_judge(judge, item.study) == 0  # the calls are under way: nothing is added

    made = batch_calls(judge, item.study)
    assert [call.subject for call in made] == [
        {"judge": judge.pk, "study": item.study.pk, "item": item.pk, "repeat": 0, "swap": False},
        {"judge": judge.pk, "study": item.study.pk, "item": other.pk, "repeat": 0, "swap": False},
        {"judge": judge.pk, "study": item.study.pk, "item": other.pk, "repeat": 1, "swap": False},
    ]
    assert {(call.endpoint_id, call.status) for call in made} == {(judge.source.endpoint_id, Call.Status.PENDING)}
    assert made[0].batch == f"judge:{judge.pk}:study:{item.study.pk}"


def test_a_failed_or_cancelled_call_is_queued_again_not_doubled_and_a_done_one_never():
    item = group_rubric_item()
    judge = held_judge(item, repeats=3)
    submit_judge(judge, item.study)
    failed, cancelled, running = batch_calls(judge, item.study)
    history = [{"at": timezone.now().isoformat(), "attempt": 5, "error": "HTTP 500: down"}]
    Call.objects.filter(id=failed.id).update(status=Call.Status.FAILED, attempts=5, error="HTTP 500: down",
                                             history=history)  # fmt: skip
    Call.objects.filter(id=cancelled.id).update(status=Call.Status.CANCELLED)
    Call.objects.filter(id=running.id).update(status=Call.Status.RUNNING, attempts=1)

    assert submit_judge(judge, item.study) == 2

    again = {call.id: call for call in batch_calls(judge, item.study)}
    assert len(again) == 3
    assert (again[failed.id].status, again[failed.id].attempts, again[failed.id].history) == ("pending", 0, history)
    assert again[cancelled.id].status == Call.Status.PENDING and again[running.id].status == Call.Status.RUNNING


def test_a_rated_question_is_not_asked_again_even_with_a_failed_call_and_an_unrated_one_is():
    item = group_rubric_item()
    other = StudyItem.objects.create(study=item.study, answer=AnswerFactory(question=item.answer.question))
    judge = held_judge(item, repeats=1)
    submit_judge(judge, item.study)
    batch_calls(judge, item.study).update(status=Call.Status.FAILED)
    record_judge_reply(judge, item, 0, request={}, raw_reply='{"on_topic": "no"}', latency_ms=3)  # an earlier run's
    record_judge_reply(judge, other, 0, request={}, raw_reply="not json", latency_ms=3)  # invalid: no rating

    assert submit_judge(judge, item.study) == 1
    statuses = {call.subject["item"]: call.status for call in batch_calls(judge, item.study)}
    assert statuses == {item.pk: Call.Status.FAILED, other.pk: Call.Status.PENDING}


def test_a_two_answer_item_is_asked_in_both_orders_and_a_call_from_before_keeps_its_order():
    item = PairwiseItemFactory()
    judge = held_judge(item, repeats=1)
    # A call queued before every repeat asked both orders: no `swap` in its subject, its order alternated.
    old_order = legacy_swap(item.study, item.pk, 0)
    old = Call.objects.create(kind="judge", endpoint=judge.source.endpoint, batch=batch_of(judge.pk, item.study.pk),
                              subject={"judge": judge.pk, "study": item.study.pk, "item": item.pk, "repeat": 0},
                              status=Call.Status.FAILED)  # fmt: skip

    assert submit_judge(judge, item.study) == 2  # the old call queued again, a call for the other order
    new = batch_calls(judge, item.study).exclude(id=old.id).get()
    assert new.subject["swap"] is (not old_order) and Call.objects.get(id=old.id).status == Call.Status.PENDING
    assert JudgeKind().prepare(old).body == build_judge_request(judge, item, 0, swap=old_order)


def test_what_cannot_be_asked_is_refused_with_nothing_queued():
    item = group_rubric_item()
    judge = held_judge(item, base_url="")
    with pytest.raises(JudgeError, match="has no endpoint \\(base URL\\) to ask"):
        submit_judge(judge, item.study)
    stranger = Judge.objects.create(name="Stranger", source=AnswerSourceFactory(base_url="http://127.0.0.1:9/v1"),
                                    rubric_version=item.study.rubric_version, instructions="Rate.")  # fmt: skip
    with pytest.raises(JudgeError, match="does not hold the judge Stranger"):
        submit_judge(stranger, item.study)
    item.study.judges.add(stranger)
    item.study.locked_at = timezone.now()
    item.study.save()
    with pytest.raises(StudyLocked):
        submit_judge(stranger, item.study)
    assert not Call.objects.exists()


def test_prepare_refuses_a_call_that_can_no_longer_be_asked_and_store_keeps_one_reply():
    item = group_rubric_item()
    judge = held_judge(item, repeats=1)
    submit_judge(judge, item.study)
    call = batch_calls(judge, item.study).get()
    kind = JudgeKind()

    request = kind.prepare(call)
    assert (request.mode, request.body) == ("chat", build_judge_request(judge, item, 0))
    call.request = request.body
    reply = Completion(text='{"on_topic": "no"}', finish_reason="stop", model="judge-model-v2", latency_ms=12)
    first = kind.store(call, reply)
    second = kind.store(call, Completion(text="changed my mind", finish_reason="stop", model="x", latency_ms=1))
    stored = JudgeReply.objects.get()
    assert first == second == {"reply": stored.id}
    assert (stored.raw_reply, stored.model, stored.latency_ms, stored.request) == (
        '{"on_topic": "no"}', "judge-model-v2", 12, request.body,
    )  # fmt: skip

    for subject, refusal in [
        ({**call.subject, "repeat": 1}, "makes 1 repeat"),
        ({**call.subject, "judge": 0}, "judge 0 no longer exists"),
        ({**call.subject, "item": 0}, f"item 0 is no longer in study {item.study.pk}"),
        ({**call.subject, "study": 0}, f"item {item.pk} is no longer in study 0"),
    ]:
        with pytest.raises(engine.CallRefused, match=refusal):
            kind.prepare(Call(kind="judge", subject=subject))
    item.study.judges.remove(judge)
    with pytest.raises(engine.CallRefused, match="does not hold the judge Judge"):
        kind.prepare(call)
    item.study.judges.add(judge)
    item.study.locked_at = timezone.now()
    item.study.save()
    with pytest.raises(engine.CallRefused, match="is locked"):
        kind.prepare(call)


def test_the_kind_is_registered_by_the_studies_app():
    assert isinstance(engine.handler_for("judge"), judge_kind.JudgeKind)


@pytest.mark.django_db(transaction=True)
def test_two_submits_at_once_queue_each_pair_once():
    """The second submit waits for the first's lock on the (judge, study), then sees its calls."""
    if connection.vendor != "postgresql":
        pytest.skip("row locks: PostgreSQL (SQLite runs write transactions one at a time)")
    item = group_rubric_item()
    judge = held_judge(item, repeats=2)
    second: list = []

    def submit_again():
        try:
            second.append(submit_judge(judge, item.study))
        finally:
            connection.close()

    with transaction.atomic():
        first = submit_judge(judge, item.study)
        thread = threading.Thread(target=submit_again)
        thread.start()
        time.sleep(0.5)
        assert thread.is_alive()  # waiting for the first submit's lock
    thread.join(timeout=10)

    assert (first, second) == (2, [0])
    assert batch_calls(judge, item.study).count() == 2


@pytest.mark.django_db(transaction=True)
def test_two_stores_of_one_call_at_once_number_their_replies_apart_and_make_one_rating(settings):
    """A lease ran out under a slow worker: its store and the new claim's meet. The second waits for the first's
    lock on the item (held until the engine's transaction commits), then sees its reply."""
    if connection.vendor != "postgresql":
        pytest.skip("row locks: PostgreSQL (SQLite runs write transactions one at a time)")
    settings.JUDGE_INVALID_REPLY_ATTEMPTS = 2
    item = group_rubric_item()
    judge = held_judge(item, repeats=1)
    submit_judge(judge, item.study)
    call = batch_calls(judge, item.study).get()
    call.request = {}
    kind = JudgeKind()
    outcomes: list = []

    def store(text: str) -> None:
        try:
            outcomes.append(kind.store(call, Completion(text=text, finish_reason="stop", model="m", latency_ms=1)))
        finally:
            connection.close()

    with transaction.atomic():
        first = kind.store(call, Completion(text="not json", finish_reason="stop", model="m", latency_ms=1))
        threads = [threading.Thread(target=store, args=(text,)) for text in ("not json either", "{]")]
        for thread in threads:
            thread.start()
        time.sleep(0.5)
        assert all(thread.is_alive() for thread in threads)  # waiting for this store's lock on the item
    for thread in threads:
        thread.join(timeout=10)

    replies = list(JudgeReply.objects.order_by("attempt"))
    assert [reply.attempt for reply in replies] == [0, 1, 2]  # no attempt number twice, none skipped
    assert isinstance(first, engine.AskAgain) and first.result == {"reply": replies[0].id}
    # Of a round of 2, the second reply gives up and the third starts a new round.
    by_reply = {outcome.result["reply"]: type(outcome) for outcome in outcomes}
    assert by_reply == {replies[1].id: engine.GiveUp, replies[2].id: engine.AskAgain}

    texts = ['{"on_topic": "no"}', '{"on_topic": "no", "comment": "Off topic."}']
    threads = [threading.Thread(target=store, args=(text,)) for text in texts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    rating = JudgeRating.objects.get()  # one rating; the later valid reply is a duplicate, not stored
    assert rating.reply.attempt == 3 and JudgeReply.objects.count() == 4
    assert outcomes[-2:] == [{"reply": rating.reply_id}] * 2


def test_the_migration_fails_the_calls_that_ended_on_an_invalid_reply_so_a_submit_asks_them_again():
    from django.apps import apps

    migration = importlib.import_module("studies.migrations.0010_judge_reply_attempts")
    item = group_rubric_item()
    other = StudyItem.objects.create(study=item.study, answer=AnswerFactory(question=item.answer.question))
    judge = held_judge(item, repeats=1)
    submit_judge(judge, item.study)
    invalid = record_judge_reply(judge, item, 0, request={}, raw_reply="not json", latency_ms=3)
    valid = record_judge_reply(judge, other, 0, request={}, raw_reply='{"on_topic": "no"}', latency_ms=3)
    for reply in (invalid, valid):  # as the kind left them before replies were asked again: done
        batch_calls(judge, item.study).filter(subject__item=reply.item_id).update(
            status=Call.Status.DONE, result={"reply": reply.id}
        )

    migration.fail_calls_of_invalid_replies(apps, None)

    statuses = {call.subject["item"]: call.status for call in batch_calls(judge, item.study)}
    assert statuses == {item.pk: Call.Status.FAILED, other.pk: Call.Status.DONE}
    assert submit_judge(judge, item.study) == 1  # the failed one, queued again
    migration.done_again(apps, None)  # the reverse leaves a queued call alone
    assert batch_calls(judge, item.study).get(subject__item=item.pk).status == Call.Status.PENDING
