"""The model-call engine in one process: calls of two kinds on one endpoint, claims, back-off, failures,
leases, cancellation and retry. Lanes run in the test process (`run_lane`); test_engine_worker.py runs them
on real Celery workers.
"""

import time
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.utils import timezone

import engine
from config.key_hosts import parse_key_hosts
from engine import calls, lanes
from engine.models import Call, Endpoint, Lane
from tests.engine import kinds
from tests.llm_server import FakeLLM

pytestmark = pytest.mark.django_db


def make_endpoint(server, **fields) -> Endpoint:
    defaults = {"name": "stand-in", "base_url": server.base_url, "concurrency": 2, "request_timeout_seconds": 5}
    return Endpoint.objects.create(**{**defaults, **fields})


def drain(endpoint):
    return [lanes.run_lane(endpoint.id, index) for index in range(endpoint.concurrency)]


def test_calls_of_two_kinds_share_one_endpoint_and_each_is_stored_once(django_capture_on_commit_callbacks):
    with FakeLLM() as server:
        endpoint = make_endpoint(server)
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            calls.submit("echo", endpoint, [{"text": f"Say {n}"} for n in range(3)], batch="echoes")
            calls.submit("judge-like", endpoint, [{"item": n} for n in range(2)], batch="judging")
        assert len(callbacks) == 2  # lanes are sent only once the calls are committed
        assert drain(endpoint) == ["no work left", "no work left"]

    assert len(server.requests) == 5
    done = list(Call.objects.order_by("id"))
    assert [call.status for call in done] == [Call.Status.DONE] * 5
    echo, judge = done[0], done[3]
    assert echo.result == {"text": "Generated answer to: Say 0", "attempt": 1}
    assert kinds.stored("echo", echo.id) == "Generated answer to: Say 0"
    assert echo.request["messages"] == [{"role": "user", "content": "Say 0"}]
    assert judge.request["prompt"] == "Rate item 0: is it biased?" and "prompt" in server.requests[3]
    assert kinds.stored("judge-like", judge.id) == "Generated answer to: Rate item 0: is it biased?"
    assert all(call.lease_expires_at is None and call.attempts == 1 for call in done)
    assert not Lane.objects.filter(endpoint=endpoint).exclude(token="").exists()


def test_a_passing_error_backs_off_and_the_call_is_made_again(settings):
    settings.GENERATION_BACKOFF_SECONDS = 0
    with FakeLLM(failures=1, failure_status=503) as server:
        endpoint = make_endpoint(server, concurrency=1)
        calls.submit("echo", endpoint, [{"text": "Hello"}])
        drain(endpoint)

    call = Call.objects.get()
    assert call.status == Call.Status.DONE and call.attempts == 2
    assert len(call.history) == 1 and "503" in call.history[0]["error"] and call.history[0]["attempt"] == 1
    assert kinds.stored("echo", call.id) == "Generated answer to: Hello"


def test_a_call_fails_for_good_after_its_attempts_and_the_kind_is_told(settings):
    settings.GENERATION_BACKOFF_SECONDS = 0
    settings.GENERATION_MAX_ATTEMPTS = 2
    with FakeLLM(failures=5, failure_status=500) as server:
        endpoint = make_endpoint(server, concurrency=1)
        calls.submit("judge-like", endpoint, [{"item": 7}], batch="judging")
        drain(endpoint)

    call = Call.objects.get()
    assert call.status == Call.Status.FAILED and call.attempts == 2 and len(call.history) == 2
    assert "500" in call.error and kinds.failure("judge-like", call.id) == call.error
    assert kinds.stored("judge-like", call.id) is None

    with FakeLLM() as server:
        Endpoint.objects.filter(id=call.endpoint_id).update(base_url=server.base_url)  # the endpoint is fixed
        assert calls.retry_failed("judge-like", "judging") == 1
        drain(call.endpoint)
    call.refresh_from_db()
    assert call.status == Call.Status.DONE and call.attempts == 1


def test_a_refused_call_and_an_unknown_kind_fail_at_once_without_a_request():
    with FakeLLM() as server:
        endpoint = make_endpoint(server)
        calls.submit("echo", endpoint, [{"no text": True}])
        calls.submit("nobody-registered-this", endpoint, [{}])
        drain(endpoint)
        assert server.requests == []

    refused, unknown = Call.objects.order_by("id")
    assert refused.status == Call.Status.FAILED and refused.error == f"call {refused.id} has no text to send"
    assert kinds.failure("echo", refused.id) == refused.error
    assert unknown.status == Call.Status.FAILED and "no handler for the kind 'nobody-registered-this'" in unknown.error


class BrokenStore(kinds.Echo):
    kind = "broken-store"

    def store(self, call, completion):
        raise RuntimeError("the table is gone")


def test_a_reply_the_kind_cannot_store_fails_the_call_and_keeps_nothing():
    engine.register(BrokenStore.kind, BrokenStore())
    with FakeLLM() as server:
        endpoint = make_endpoint(server, concurrency=1)
        calls.submit(BrokenStore.kind, endpoint, [{"text": "a"}])
        assert drain(endpoint) == ["no work left"]
    call = Call.objects.get()
    assert call.status == Call.Status.FAILED and "storing the reply failed" in call.error
    assert "table is gone" in call.error
    assert call.result is None and kinds.failure(BrokenStore.kind, call.id) == call.error


class Picky(kinds.Echo):
    """Keeps every reply (in the cache) and asks again until it has `until` of them; then it is done, or gives up
    when the subject says so."""

    kind = "picky"

    def store(self, call, completion):
        key = f"engine-test:picky:{call.id}"
        cache.add(key, 0, timeout=3600)
        kept = cache.incr(key)
        result = {"kept": kept}
        if kept < call.subject["until"]:
            return engine.AskAgain(result=result, reason=f"reply {kept} is not usable")
        if call.subject.get("give_up"):
            return engine.GiveUp(result=result, reason=f"{kept} unusable replies")
        return result


def test_a_store_can_keep_its_writes_and_ask_again_until_it_is_done_or_gives_up():
    engine.register(Picky.kind, Picky())
    with FakeLLM() as server:
        endpoint = make_endpoint(server, concurrency=1)
        calls.submit(Picky.kind, endpoint, [{"text": "a", "until": 3}, {"text": "b", "until": 2, "give_up": True}])
        assert drain(endpoint) == ["no work left"]
    assert len(server.requests) == 5  # asked again at once, without back-off
    done, given_up = Call.objects.order_by("id")
    assert (done.status, done.attempts, done.result) == (Call.Status.DONE, 3, {"kept": 3})
    assert [(entry["attempt"], entry["error"]) for entry in done.history] == [
        (1, "reply 1 is not usable"), (2, "reply 2 is not usable")]  # fmt: skip
    assert (given_up.status, given_up.attempts, given_up.result) == (Call.Status.FAILED, 2, {"kept": 2})
    assert given_up.error == "2 unusable replies" and [entry["attempt"] for entry in given_up.history] == [1, 2]
    assert kinds.failure(Picky.kind, given_up.id) == "2 unusable replies"  # the kind is told, as for any failure
    assert kinds.failure(Picky.kind, done.id) is None


def test_asking_again_from_a_claim_that_no_longer_stands_keeps_the_writes_and_leaves_the_call_alone():
    engine.register(Picky.kind, Picky())
    with FakeLLM() as server:
        endpoint = make_endpoint(server, concurrency=1)
        calls.submit(Picky.kind, endpoint, [{"text": "a", "until": 3}])
        first = calls.claim_next(endpoint, "worker a")
        Call.objects.filter(id=first.id).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
        second = calls.claim_next(endpoint, "worker b")
        # The slow first worker's store asks again: its write is kept, the second claim still holds the call.
        assert calls.execute(first, endpoint) == Call.Status.RUNNING
        call = Call.objects.get()
        assert (call.status, call.attempts, call.claimed_by, call.history) == (Call.Status.RUNNING, 2, "worker b", [])
        assert calls.execute(second, endpoint) == Call.Status.PENDING  # the second's store counts both replies
        assert drain(endpoint) == ["no work left"]
    call = Call.objects.get()
    assert (call.status, call.result, call.attempts) == (Call.Status.DONE, {"kept": 3}, 3)
    assert [entry["error"] for entry in call.history] == ["reply 2 is not usable"]


def test_each_call_is_claimed_by_one_lane_and_a_dead_workers_call_is_claimed_again():
    with FakeLLM() as server:
        endpoint = make_endpoint(server)
        calls.submit("echo", endpoint, [{"text": "one"}, {"text": "two"}])
        first = calls.claim_next(endpoint, "worker a")
        second = calls.claim_next(endpoint, "worker b")
        assert {first.id, second.id} == set(Call.objects.values_list("id", flat=True))
        assert calls.claim_next(endpoint, "worker c") is None  # both in flight under a live lease
        assert 0 < calls.seconds_until_due(endpoint) <= calls.lease_seconds(endpoint)

        Call.objects.filter(id=first.id).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
        again = calls.claim_next(endpoint, "worker c")
        assert again.id == first.id and again.attempts == 2 and again.claimed_by == "worker c"
        assert calls.execute(again, endpoint) == Call.Status.DONE
        # The first worker, alive after all, answers too: the kind keeps the first reply, the call stays done.
        assert calls.execute(first, endpoint) == Call.Status.DONE
    assert Call.objects.get(id=first.id).status == Call.Status.DONE
    assert kinds.stored("echo", first.id) == "Generated answer to: one"


def test_cancelled_calls_are_never_made():
    with FakeLLM() as server:
        endpoint = make_endpoint(server)
        calls.submit("echo", endpoint, [{"text": "a"}, {"text": "b"}], batch="mine")
        calls.submit("echo", endpoint, [{"text": "c"}], batch="theirs")
        assert calls.cancel("echo", "mine") == 2
        drain(endpoint)
        assert [request["messages"][0]["content"] for request in server.requests] == ["c"]
    assert calls.seconds_until_due(endpoint) is None


def test_a_lane_held_by_a_live_task_is_left_alone_and_a_stale_one_is_taken_over():
    with FakeLLM() as server:
        endpoint = make_endpoint(server, concurrency=1)
        calls.submit("echo", endpoint, [{"text": "a"}])
        Lane.objects.update_or_create(endpoint=endpoint, index=0,
                                      defaults={"token": "x", "heartbeat_at": timezone.now()})  # fmt: skip
        assert lanes.run_lane(endpoint.id, 0) == "lane held by a live task"
        Lane.objects.filter(endpoint=endpoint).update(heartbeat_at=timezone.now() - timedelta(hours=1))
        assert lanes.run_lane(endpoint.id, 0) == "no work left"
        assert len(server.requests) == 1


def test_the_rate_limit_spaces_requests_across_kinds():
    with FakeLLM() as server:
        endpoint = make_endpoint(server, concurrency=1, rate_limit_per_minute=200)  # one per 0.3 s
        calls.submit("echo", endpoint, [{"text": "a"}])
        calls.submit("judge-like", endpoint, [{"item": 1}])
        began = time.monotonic()
        assert drain(endpoint) == ["no work left"]
        elapsed = time.monotonic() - began
        assert len(server.requests) == 2
    assert elapsed >= 0.3  # the second kind's request waited for the first one's share of the minute


def test_an_endpoint_refuses_a_key_variable_bound_to_another_host(settings):
    settings.MODEL_KEY_HOSTS = parse_key_hosts("OPENAI_API_KEY=api.openai.com")
    endpoint = Endpoint(name="elsewhere", base_url="https://example.org/v1", api_key_env="OPENAI_API_KEY")
    with pytest.raises(ValidationError):
        endpoint.clean()


def test_kinds_are_registered_by_name():
    assert {"echo", "judge-like"} <= set(engine.registered_kinds())
    with pytest.raises(ValueError):
        engine.register("", kinds.Echo())


def test_backoff_doubles_within_bounds_and_honours_retry_after(settings):
    from engine.llm_client import LLMError

    settings.GENERATION_BACKOFF_SECONDS, settings.GENERATION_BACKOFF_MAX_SECONDS = 2, 60
    for attempts, ceiling in [(1, 2), (2, 4), (3, 8), (6, 60), (12, 60)]:
        delays = [calls.backoff_seconds(attempts) for _ in range(50)]
        assert all(ceiling / 2 <= delay <= ceiling for delay in delays)
    asked = LLMError("HTTP 429", status=429, retryable=True, retry_after=30)
    assert calls.backoff_seconds(1, asked) == 30


def test_lanes_above_the_concurrency_retire():
    endpoint = Endpoint.objects.create(name="one lane", base_url="http://127.0.0.1:9/v1", concurrency=1)
    calls.submit("echo", endpoint, [{"text": "a"}])
    assert lanes.run_lane(endpoint.id, 3) == "lane retired (concurrency lowered)"
    assert Call.objects.get().status == Call.Status.PENDING  # left for the lanes that remain


def test_a_lane_hands_over_when_its_budget_runs_out():
    with FakeLLM() as server:
        endpoint = make_endpoint(server, concurrency=1)
        calls.submit("echo", endpoint, [{"text": f"Say {n}"} for n in range(3)])
        assert lanes.run_lane(endpoint.id, 0, budget_seconds=0) == "handed over"
        assert lanes.run_lane(endpoint.id, 0) == "no work left"
    assert set(Call.objects.values_list("status", flat=True)) == {Call.Status.DONE} and len(server.requests) == 3


def test_a_connection_broken_mid_request_is_retried_not_a_crash(settings):
    """A server that closes the connection without answering: recorded and retried, the lane goes on."""
    import socket
    import threading

    settings.GENERATION_BACKOFF_SECONDS = 0
    settings.GENERATION_MAX_ATTEMPTS = 2
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def hang_up():
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            connection.recv(65536)
            connection.close()

    threading.Thread(target=hang_up, daemon=True).start()
    endpoint = Endpoint.objects.create(name="hangs up", base_url=f"http://127.0.0.1:{port}/v1", concurrency=1)
    calls.submit("echo", endpoint, [{"text": f"Say {n}"} for n in range(3)], batch="broken")
    try:
        assert lanes.run_lane(endpoint.id, 0) == "no work left"
    finally:
        listener.close()
    failed = list(Call.objects.order_by("id"))
    assert {call.status for call in failed} == {Call.Status.FAILED} and all(call.attempts == 2 for call in failed)
    assert "the connection to" in failed[0].error and "broke" in failed[0].error
    assert kinds.failure("echo", failed[0].id) == failed[0].error
