"""A judge on the real local model (SmolLM2-135M behind llama-cpp-python's server, tests/local_model.py) rates the
50 items of a one-answer study through the model-call engine, eagerly (no broker: `judge_study`'s lanes run in
this process, as they do without a broker), asking for a JSON object (response_format json_object: the server
refuses json_schema). The run finishes: every (item, repeat) ends with one rating, or failed after
JUDGE_INVALID_REPLY_ATTEMPTS invalid replies, each kept with its raw reply and never a rating. Completion and
bookkeeping are asserted, not the model's judgement (a 135M model's is poor).

Slow: ~50-150 requests of a few hundred tokens, a second or so each on two cores. Skipped as the other local
model tests are (tests/datasets/test_local_model.py).
"""

import io

import pytest
from django.core.management import call_command
from django.test import TestCase

from studies.models import JudgeRating, JudgeReply
from tests.datasets.test_local_model import local_server  # noqa: F401 (the fixture: install rules, the server)
from tests.local_model import JUDGE_STRUCTURED_OUTPUT, judge_figures, judge_study

pytestmark = [pytest.mark.slow, pytest.mark.django_db]


def test_a_judge_on_the_local_model_rates_50_items_and_every_one_ends_rated_or_failed(local_server, settings):  # noqa: F811
    study, judge = judge_study(local_server.base_url, items=50)
    out, err = io.StringIO(), io.StringIO()
    with TestCase.captureOnCommitCallbacks(execute=True):  # eager Celery: the lanes run as the submit commits
        call_command("judge_study", "--study", str(study.pk), "--judge", judge.name, stdout=out, stderr=err)

    figures = judge_figures(judge, study)
    calls = figures["calls"]
    assert figures["pairs"] == 50 and f"{judge.name} on study {study.pk}: 50 calls queued" in out.getvalue()
    # Finished: no call left, each (item, repeat) ended as one call, done (rated) or failed.
    assert calls["pending"] == calls["running"] == calls["cancelled"] == 0
    assert calls["done"] + calls["failed"] == 50 and figures["failed_unanswered"] == 0, err.getvalue()
    assert figures["rated"] == figures["rated_pairs"] == calls["done"]
    assert figures["failed_invalid"] == calls["failed"]
    # Every reply kept; each pair's replies: invalid ones, then one valid (its rating), or exactly the bound.
    attempts = settings.JUDGE_INVALID_REPLY_ATTEMPTS
    replies = JudgeReply.objects.filter(judge=judge)
    assert figures["replies"] == replies.count() == figures["rated"] + figures["invalid"]
    assert figures["retries"] == figures["replies"] - 50
    for (item_id, repeat, swap), count in figures["replies_per_pair"].items():
        mine = replies.filter(item_id=item_id, repeat=repeat, swap_answers=swap).order_by("attempt")
        assert [reply.attempt for reply in mine] == list(range(count)) and count <= attempts
        rating = JudgeRating.objects.filter(judge=judge, item_id=item_id, repeat=repeat).first()
        if rating is None:
            assert count == attempts and all(reply.errors for reply in mine)
        else:
            assert rating.reply == mine.last() and not rating.reply.errors
            assert all(reply.errors for reply in mine[: count - 1])
    assert len(figures["replies_per_pair"]) == 50
    # Each reply was asked for as a JSON object and keeps the model's words and the seconds it took.
    for reply in replies:
        assert reply.request["response_format"] == {"type": JUDGE_STRUCTURED_OUTPUT}
        assert reply.model and reply.latency_ms is not None
    assert len(figures["seconds"]) == figures["replies"]
