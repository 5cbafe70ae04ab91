"""A judge rates a study's items through the model-call engine on a real Celery worker over Redis, against the
stand-in model server, while a generation job's answer calls go to the same model source: every (item, repeat)
gets one rating, a reply the rubric refuses is a failure and not a rating and is asked again up to three replies
before the call fails, submitting while the calls run adds no call, and the
server never has more requests in flight than the source's concurrency, judge and answer calls together.
"""

import json
import threading
import time

import pytest
from django.db import transaction

from datasets.generation import answer_kind, jobs
from datasets.models import Answer, GenerationJob, settings_fingerprint
from engine import calls
from engine.models import Call, Lane
from studies.judge_kind import batch_of, submit_judge
from studies.judge_progress import judge_progress
from studies.models import Judge, JudgeRating, JudgeReply, StudyItem
from tests.factories import AnswerFactory, AnswerSourceFactory, DatasetFactory, QuestionFactory, group_rubric_item
from tests.llm_server import FakeLLM

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

JUDGED = "Reply with one JSON object only"  # in every judge request (build_judge_request), in no answer request


class JudgeAndAnswerLLM(FakeLLM):
    """Answers a judge's request with a valid rating, or prose (not JSON) for an item whose answer says BAD; and
    records the most requests in flight at once and whether a judge and an answer call were in flight together."""

    def __init__(self, **options):
        super().__init__(**options)
        self.in_flight: list[str] = []
        self.peak_in_flight = 0
        self.kinds_together = False
        self._counter = threading.Lock()

    def answer_for(self, question: str) -> str:
        if JUDGED not in question:
            return super().answer_for(question)
        return "It looks fine to me." if "BAD" in question else json.dumps({"on_topic": "no"})

    def _respond(self, body: dict) -> tuple[int, dict]:
        kind = "judge" if JUDGED in body["messages"][-1]["content"] else "answer"
        with self._counter:
            self.in_flight.append(kind)
            self.peak_in_flight = max(self.peak_in_flight, len(self.in_flight))
            self.kinds_together |= len(set(self.in_flight)) == 2
        try:
            return super()._respond(body)
        finally:
            with self._counter:
                self.in_flight.remove(kind)


def wait_until_finished(endpoint, worker, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if calls.seconds_until_due(endpoint) is None and not Lane.objects.filter(endpoint=endpoint).exclude(token=""):
            return
        time.sleep(0.2)
    statuses = list(Call.objects.filter(endpoint=endpoint).values_list("kind", "status", "error"))
    pytest.fail(f"the calls did not finish within {seconds} s: {statuses}\n{worker.log_tail()}")


def test_a_judge_rates_a_studys_items_through_the_engine_sharing_the_sources_lanes_with_answers(celery_worker):
    item = group_rubric_item()
    study = item.study
    items = [item] + [
        StudyItem.objects.create(study=study, answer=AnswerFactory(question=item.answer.question, text=text))
        for text in ("Second answer.", "A BAD answer.", "Fourth answer.", "Fifth answer.", "Sixth answer.")
    ]
    dataset = DatasetFactory(name="To answer")
    for n in range(8):
        QuestionFactory(dataset=dataset, external_id=f"q{n}", text=f"Question {n}?")

    with JudgeAndAnswerLLM(latency=0.15) as server:
        source = AnswerSourceFactory(name="Shared model", base_url=server.base_url, model_name="fake-model",
                                     concurrency=2, request_timeout_seconds=10)  # fmt: skip
        judge = Judge.objects.create(name="Engine judge", source=source, rubric_version=study.rubric_version,
                                     instructions="Rate the answer.", repeats=2)  # fmt: skip
        study.judges.add(judge)
        parameters = jobs.job_parameters(source)
        job = GenerationJob.objects.create(dataset=dataset, source=source, parameters=parameters,
                                           settings_hash=settings_fingerprint(parameters))  # fmt: skip
        endpoint = source.endpoint
        questions = list(dataset.questions.order_by("id"))
        with transaction.atomic():
            # Lanes take the oldest call first: answers on both sides of the judge's calls, an odd number before,
            # so two lanes working in step still meet an answer and a judge call at once.
            answer = [answer_kind.subject_for(job.id, q.id) for q in questions]
            calls.submit("answer", endpoint, answer[:3], batch=answer_kind.batch_of(job.id))
            queued = submit_judge(judge, study)
            calls.submit("answer", endpoint, answer[3:], batch=answer_kind.batch_of(job.id))
        again = submit_judge(judge, study)  # while the first calls are under way

        wait_until_finished(endpoint, celery_worker, seconds=120)

    assert (queued, again) == (12, 0)
    judged = Call.objects.filter(kind="judge", batch=batch_of(judge.pk, study.pk))
    # The BAD item's two calls asked again after each invalid reply, then failed with the last one's errors.
    statuses = {call.subject["item"]: call.status for call in judged}
    assert judged.count() == 12 and statuses == {i.pk: "failed" if i == items[2] else "done" for i in items}
    assert Call.objects.filter(kind="answer", status=Call.Status.DONE).count() == 8
    # One reply per (item, repeat), three for the BAD item's; each call's result its last reply.
    replies = {reply.id: reply for reply in JudgeReply.objects.filter(judge=judge)}
    assert sorted((r.item_id, r.repeat, r.attempt) for r in replies.values()) == sorted(
        (i.pk, repeat, attempt) for i in items for repeat in (0, 1) for attempt in range(3 if i == items[2] else 1)
    )
    for call in judged:
        reply = replies[call.result["reply"]]
        assert (reply.item_id, reply.repeat) == (call.subject["item"], call.subject["repeat"])
        assert reply.request == call.request and reply.model == "fake-model"
    assert len(server.requests) == 24 and Answer.objects.filter(source=source).count() == 8
    # The BAD item's six replies are failures with their errors, never ratings.
    bad = items[2]
    failures = [reply for reply in replies.values() if reply.is_failure]
    assert {reply.item_id for reply in failures} == {bad.pk} and len(failures) == 6
    assert all(reply.raw_reply == "It looks fine to me." and "reply" in reply.errors for reply in failures)
    assert JudgeRating.objects.filter(judge=judge).count() == 10
    assert not JudgeRating.objects.filter(item=bad).exists()
    # The source's two lanes carried both kinds, side by side, never more than two requests at once.
    assert server.peak_in_flight == 2 and server.kinds_together
    [progress] = judge_progress([study], {study.pk: len(items)})[study.pk]
    assert (progress.replied, progress.rated, progress.failed, progress.needed) == (16, 10, 2, 12)
    assert (progress.calls_pending, progress.calls_running, progress.calls_failed) == (0, 0, 0)
