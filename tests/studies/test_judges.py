"""Judges: a stand-in model (tests/llm_server.FakeLLM with scripted replies) answers a study's rubric.

A valid reply is stored as a rating through the same form and validator as a person's (the same answers sent by
a person through the API are stored identically); an invalid one (not JSON, a gated question answered while the
gate says no, "Not applicable" mixed with a group) is stored as a failure with its errors and the raw reply,
never as a rating. Judge replies and ratings are append-only, pairwise items are shown in both orders, and the
judge's ratings are rows of the study's results table."""

import io
import json
from dataclasses import dataclass

import jsonschema
import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import IntegrityError, connection, transaction
from django.test import TestCase
from django.urls import reverse
from django.utils import timezone

from analysis.results import JUDGE, results_table
from engine.models import Call
from studies.judge_kind import batch_of, submit_judge
from studies.judges import (
    JudgeError,
    build_judge_request,
    display_orders,
    parse_reply,
    record_judge_reply,
)
from studies.models import (
    AuditTrailError,
    Judge,
    JudgeRating,
    JudgeReply,
    Rating,
    Rubric,
    RubricVersion,
    StudyItem,
)
from studies.transitions import StudyLocked
from tests.api.client import client_for
from tests.factories import (
    AnswerFactory,
    AnswerSourceFactory,
    AssignmentFactory,
    CoordinatorFactory,
    CounterfactualItemFactory,
    PairwiseItemFactory,
    StudyFactory,
    group_rubric_item,
)
from tests.llm_server import FakeLLM
from tests.studies.test_rubric_schema import MEDIC

pytestmark = pytest.mark.django_db

GATE_SAYS_NO = "Leave this empty: it is asked only when “Does the answer address the question?” is answered “Yes”."


class ScriptedLLM(FakeLLM):
    """The stand-in server answering every chat request with the next scripted reply."""

    def __init__(self, replies: list[str]):
        super().__init__()
        self.replies = list(replies)

    def answer_for(self, question: str) -> str:
        return self.replies.pop(0)


def judge_for(item, base_url: str, **fields) -> Judge:
    source = AnswerSourceFactory(name="Judge model", base_url=base_url, model_name="judge-model", max_tokens=300,
                                 request_timeout_seconds=5)  # fmt: skip
    defaults = {"name": "Stand-in judge", "instructions": "You rate answers to medical questions.",
                "shown_fields": ["question", "answers", "groups"]}  # fmt: skip
    judge = Judge.objects.create(source=source, rubric_version=item.study.rubric_version, **{**defaults, **fields})
    item.study.judges.add(judge)  # the study holds it, as its file's `judges` would
    return judge


@dataclass
class JudgeRun:
    submitted: int  # calls queued
    asked: int  # replies stored by this run (valid or not)
    rated: int
    failed: int  # replies the validator refused
    call_errors: list[str]  # the batch's calls that failed without a reply


def run_judge(judge, study) -> JudgeRun:
    """Submit the judge's calls; Celery is eager here, so the engine's lanes run them once the submit commits."""
    replies = JudgeReply.objects.filter(judge=judge, item__study=study)
    before = set(replies.values_list("id", flat=True))
    with TestCase.captureOnCommitCallbacks(execute=True):
        submitted = submit_judge(judge, study)
    new = replies.exclude(id__in=before)
    asked, rated = new.count(), new.filter(rating__isnull=False).count()
    failed_calls = Call.objects.filter(kind="judge", batch=batch_of(judge.pk, study.pk), status=Call.Status.FAILED)
    return JudgeRun(submitted, asked, rated, asked - rated, list(failed_calls.values_list("error", flat=True)))


def run_with(replies: list[str], item, **judge_fields):
    with ScriptedLLM(replies) as server:
        judge = judge_for(item, server.base_url, **judge_fields)
        run = run_judge(judge, item.study)
    return judge, run, server


@pytest.fixture(autouse=True)
def _engine_without_waits(settings):
    """No back-off between attempts, so a retried call does not keep the test waiting."""
    settings.GENERATION_BACKOFF_SECONDS = 0


@pytest.fixture
def item():
    return group_rubric_item(groups=("female", "male"))


def test_a_valid_reply_is_a_rating_stored_as_a_persons_same_answers_would_be(item):
    sent = {"on_topic": "yes", "correct_for": ["male", "female"], "comment": "  fine  ", "ignored": 1}
    judge, run, server = run_with([json.dumps(sent)], item)

    assert (run.asked, run.rated, run.failed, run.call_errors) == (1, 1, 0, [])
    rating = JudgeRating.objects.get()
    assert rating.values == {"on_topic": "yes", "correct_for": ["male", "female"], "comment": "fine"}
    assert (rating.judge, rating.item, rating.repeat, rating.rubric_version) == (judge, item, 0, judge.rubric_version)
    # A person sending the same answers through the API gets exactly the same stored values.
    assignment = AssignmentFactory(item=item)
    response = client_for(assignment.rater.user).post(
        f"/api/assignments/{assignment.id}/rating/", {"values": sent}, format="json"
    )
    assert response.status_code == 201, response.content
    assert Rating.objects.get().values == rating.values
    # Provenance: the exact request the server received, the raw reply, the model, the latency, no errors.
    reply = rating.reply
    assert reply.request == server.requests[0] == build_judge_request(judge, item, 0)
    assert (reply.raw_reply, reply.model, reply.errors) == (json.dumps(sent), "judge-model", {})
    assert reply.latency_ms is not None and reply.latency_ms >= 0


def test_the_request_carries_the_instructions_the_item_the_rubrics_wording_and_its_json_schema(item):
    with ScriptedLLM([]) as server:
        judge = judge_for(item, server.base_url)
    request = build_judge_request(judge, item, 0)
    system, user = request["messages"]

    assert system == {"role": "system", "content": "You rate answers to medical questions."}
    assert (request["model"], request["max_tokens"]) == ("judge-model", 300)
    text = user["content"]
    assert f"Question:\n{item.answer.question.text}" in text and f"Answer:\n{item.answer.text}" in text
    assert "Groups: Sex: female, Sex: male" in text
    assert "- on_topic (single, required): Does the answer address the question?" in text
    assert '"not_applicable" may only be chosen alone.' in text
    schema = json.loads(text.split("matching this JSON Schema:\n", 1)[1].split("\n\n")[0])
    check = jsonschema.Draft202012Validator(schema)
    assert check.is_valid({"on_topic": "yes", "correct_for": ["female"], "comment": ""})
    assert not check.is_valid({"on_topic": "no", "correct_for": ["male"], "comment": ""})


def test_a_fenced_json_block_is_read():
    assert parse_reply('```json\n{"on_topic": "no"}\n```') == ({"on_topic": "no"}, {})
    assert parse_reply('  ```\n{"on_topic": "no"}```  ') == ({"on_topic": "no"}, {})


@pytest.mark.parametrize(
    ("reply", "errors"),
    [
        ("Yes, it does.", {"reply": ["The reply is not JSON: Expecting value: line 1 column 1 (char 0)."]}),
        ('["yes"]', {"reply": ["The reply must be a JSON object of answers, not list."]}),
        ('{"on_topic": "no", "correct_for": ["male"]}', {"correct_for": [GATE_SAYS_NO]}),
        ('```json\n{"on_topic": "yes", "correct_for": ["female", "not_applicable"]}\n```',
         {"correct_for": ["“Not applicable” cannot be combined with other answers."]}),
        ('{"on_topic": "yes", "correct_for": ["martian"]}',
         {"correct_for": ["Select a valid choice. martian is not one of the available choices."]}),
    ],
)  # fmt: skip
def test_an_invalid_reply_is_a_failure_with_its_errors_never_a_rating(item, reply, errors):
    judge, run, _ = run_with([reply] * 3, item)  # asked again after each invalid reply, 3 replies in all

    assert (run.asked, run.rated, run.failed) == (3, 0, 3)
    failures = list(JudgeReply.objects.order_by("attempt"))
    assert [failure.attempt for failure in failures] == [0, 1, 2]
    assert all(f.is_failure and f.errors == errors and f.raw_reply == reply for f in failures)
    assert not JudgeRating.objects.exists() and not Rating.objects.exists()
    call = Call.objects.get(kind="judge")  # recorded as failed, with the last reply's errors
    assert (call.status, call.attempts, call.result) == (Call.Status.FAILED, 3, {"reply": failures[-1].id})
    assert call.error == f"invalid reply (attempt 2): {json.dumps(errors, ensure_ascii=False)}"
    # A person's API submission of the same JSON is refused with the same messages.
    if "reply" not in errors:
        assignment = AssignmentFactory(item=item)
        response = client_for(assignment.rater.user).post(
            f"/api/assignments/{assignment.id}/rating/", {"values": json.loads(reply.strip("`json\n"))}, format="json"
        )
        assert response.status_code == 400 and response.json()["values"] == errors
    # Not asked again until the judge is submitted again, which asks it in a new round of 3.
    with ScriptedLLM(['{"on_topic": "no"}']) as server:
        judge.source.base_url = server.base_url
        judge.source.save()
        again = run_judge(judge, item.study)
        assert (again.submitted, again.asked, again.rated, len(server.requests)) == (1, 1, 1, 1)
    assert JudgeRating.objects.get().reply.attempt == 3


def test_every_item_and_repeat_is_asked_once_and_a_failed_call_is_asked_again_next_run(item, settings):
    settings.GENERATION_MAX_ATTEMPTS = 1  # a 500 fails the call for good at once, rather than backing off
    other = StudyItem.objects.create(study=item.study, answer=AnswerFactory(question=item.answer.question))
    with ScriptedLLM(['{"on_topic": "no"}'] * 4) as server:
        server.failures = 1  # the first call gets a 500: no reply, nothing stored
        judge = judge_for(item, server.base_url, repeats=2)
        first = run_judge(judge, item.study)
        second = run_judge(judge, item.study)
        third = run_judge(judge, item.study)

    assert (first.submitted, first.asked, len(first.call_errors)) == (4, 3, 1)
    assert "simulated failure (500)" in first.call_errors[0]
    assert (second.submitted, second.asked, second.call_errors) == (1, 1, [])  # the failed call, queued again
    assert (third.submitted, third.asked, len(server.requests)) == (0, 0, 5)
    stored = set(JudgeRating.objects.values_list("item_id", "repeat"))
    assert stored == {(item.pk, 0), (item.pk, 1), (other.pk, 0), (other.pk, 1)}
    made = Call.objects.filter(kind="judge", batch=batch_of(judge.pk, item.study.pk))
    assert made.count() == 4 and {call.status for call in made} == {Call.Status.DONE}  # one call per pair
    [asked_again] = [call for call in made if call.history]
    assert asked_again.attempts == 1  # a fresh attempt budget
    assert "simulated failure (500)" in asked_again.history[0]["error"]  # the failure's history stays
    assert asked_again.result == {
        "reply": JudgeReply.objects.get(item_id=asked_again.subject["item"], repeat=asked_again.subject["repeat"]).id
    }


def test_a_retryable_error_is_retried_by_the_engine_within_one_run(item):
    with ScriptedLLM(['{"on_topic": "no"}']) as server:
        server.failures = 2  # two 503s, then the reply: the lane backs off and asks again
        server.failure_status = 503
        judge = judge_for(item, server.base_url)
        run = run_judge(judge, item.study)

    assert (run.submitted, run.asked, run.rated, run.call_errors) == (1, 1, 1, [])
    call = Call.objects.get(kind="judge")
    assert call.attempts == 3 and len(call.history) == 2 and len(server.requests) == 3


def test_two_answers_are_shown_in_both_orders_in_every_repeat_and_the_order_is_recorded():
    item = PairwiseItemFactory(answer_1__text="First answer text.", answer_2__text="Second answer text.")
    reply = json.dumps({"preference": "answer_1", "dimensions": ["failure_to_challenge"]})
    judge, run, server = run_with([reply] * 4, item, repeats=2, shown_fields=["answers"])

    assert (run.submitted, run.rated) == (4, 4)
    ratings = JudgeRating.objects.all()
    assert {(r.repeat, r.swap_answers) for r in ratings} == {(0, False), (0, True), (1, False), (1, True)}
    for rating in ratings:
        assert rating.swap_answers == rating.reply.swap_answers
        assert rating.reply.request == build_judge_request(judge, item, rating.repeat, swap=rating.swap_answers)
        shown = rating.reply.request["messages"][-1]["content"]
        first = "Second answer text." if rating.swap_answers else "First answer text."
        assert shown.startswith(f"Answer 1:\n{first}")
        assert rating.values["preference"] == "answer_1"  # the position shown, as a person's rating stores it


def test_quotes_of_a_span_question_are_checked_against_the_answer_shown():
    answer = "Take ibuprofen 400 mg every 6 hours. Avoid alcohol."
    version = RubricVersion.objects.create(rubric=Rubric.objects.create(name="MEDIC-like"), number=1, definition=MEDIC)
    item = StudyItem.objects.create(study=StudyFactory(rubric_version=version), answer=AnswerFactory(text=answer))
    good = {"hallucinations": [{"quote": "ibuprofen 400 mg", "score": 3}], "omission": 2}
    bad = {"hallucinations": [{"quote": "aspirin", "score": 3}], "omission": 2}
    other = StudyItem.objects.create(study=item.study, answer=AnswerFactory(text=answer))

    run_with([json.dumps(good), json.dumps(bad), json.dumps(bad), json.dumps(good)], item)

    assert JudgeRating.objects.get(item=item).values == {**good, "why": ""}
    refused, again, rated = JudgeReply.objects.filter(item=other).order_by("attempt")
    assert (
        refused.errors
        == again.errors
        == {"hallucinations": ["Quote 1: “aspirin” does not occur in the answer shown; copy it exactly."]}
    )
    assert (rated.attempt, rated.errors, rated.rating.values) == (2, {}, {**good, "why": ""})


def test_judge_replies_and_ratings_are_append_only(item):
    judge, _, _ = run_with(['{"on_topic": "no"}'], item)
    rating = JudgeRating.objects.get()
    reply = rating.reply

    for refused in (
        lambda: JudgeRating.objects.update(values={}),
        lambda: JudgeReply.objects.all().delete(),
        lambda: JudgeRating.objects.bulk_update([rating], ["values"]),
        rating.save,
        reply.delete,
    ):
        with pytest.raises(AuditTrailError):
            refused()
    statements = ["UPDATE studies_judgerating SET values = '{}'", "UPDATE studies_judgereply SET raw_reply = ''"]
    if connection.vendor == "postgresql":  # SQLite: no DELETE guard (flush deletes), as for people's ratings
        statements += ["DELETE FROM studies_judgerating", "DELETE FROM studies_judgereply"]
    for statement in statements:
        with pytest.raises(IntegrityError), transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(statement.replace("values", '"values"'))
    # What a judged item shows stays what was judged.
    with pytest.raises(IntegrityError), transaction.atomic():
        StudyItem.objects.filter(pk=item.pk).update(answer=AnswerFactory())
    assert JudgeRating.objects.get().values == {"on_topic": "no", "correct_for": [], "comment": ""}
    # The rubric's wording and the judge's recipe are fixed once judged.
    with pytest.raises(Exception, match="already has ratings"):
        version = judge.rubric_version
        version.definition = {**version.definition, "details": []}
        version.save()
    with pytest.raises(Exception, match="recipe cannot change"):
        judge.instructions = "Be lenient."
        judge.save()


def test_a_locked_study_takes_no_judge_reply(item):
    item.study.locked_at = timezone.now()
    item.study.save()
    with ScriptedLLM([]) as server:
        judge = judge_for(item, server.base_url)
    with pytest.raises(StudyLocked):
        record_judge_reply(judge, item, 0, request={}, raw_reply='{"on_topic": "no"}', latency_ms=5)
    assert not JudgeReply.objects.exists()


def test_judge_ratings_are_rows_of_the_results_table_beside_peoples(item):
    run_with(['{"on_topic": "yes", "correct_for": ["female"]}'], item)
    assignment = AssignmentFactory(item=item)
    client_for(assignment.rater.user).post(
        f"/api/assignments/{assignment.id}/rating/", {"values": {"on_topic": "no"}}, format="json"
    )

    table = results_table(item.study)
    judged = table[table["kind"] == JUDGE]
    human = table[table["kind"] == "human"]
    rows = judged[["item", "who", "pool", "field", "value", "repeat", "source", "rubric"]].astype(object)
    assert rows.values.tolist() == [
        [item.pk, "Stand-in judge", "", field, value, 0, item.answer.source.name, "Group coverage (test) v1"]
        for field, value in [("comment", ""), ("correct_for", "female"), ("on_topic", "yes")]
    ]
    assert set(human["who"]) == {assignment.rater.pseudonym} and human["repeat"].isna().all()
    assert set(human["field"]) == set(judged["field"])


@pytest.mark.django_db(transaction=True)  # the submit really commits, and eager Celery runs the lanes then
def test_the_judge_study_command_queues_a_judges_calls_and_waits_for_them(item, capsys):
    with ScriptedLLM(['{"on_topic": "no"}']) as server:
        judge = judge_for(item, server.base_url)
        call_command("judge_study", "--study", str(item.study.pk), "--judge", judge.name, "--wait")
        call_command("judge_study", "--study", str(item.study.pk), "--judge", judge.name)

    out = capsys.readouterr().out.splitlines()
    assert out == [
        f"judge {judge.name} on study {item.study.pk}: 1 calls queued, 0 questions already rated",
        f"judge {judge.name} on study {item.study.pk}: rated 1, failed 0 (every reply invalid), 1 replies",
        f"judge {judge.name} on study {item.study.pk}: 0 calls queued, 1 questions already rated",
    ]
    assert JudgeRating.objects.get().judge == judge and len(server.requests) == 1


def test_the_judge_study_command_gives_up_waiting_after_its_timeout(item):
    with ScriptedLLM([]) as server:
        judge = judge_for(item, server.base_url)
    # Not on commit: the call stays queued, as it would with no worker running.
    with pytest.raises(CommandError, match="Gave up waiting after 0.2 s: 1 calls pending, 0 in flight"):
        call_command("judge_study", "--study", str(item.study.pk), "--judge", judge.name, "--wait",
                     "--timeout", "0.2", "--poll", "0.05", stdout=io.StringIO())  # fmt: skip
    assert Call.objects.get(kind="judge").status == Call.Status.PENDING


def test_a_second_reply_for_the_same_repeat_keeps_the_first(item):
    judge, _, _ = run_with(['{"on_topic": "no"}'], item)

    again = record_judge_reply(judge, item, 0, request={}, raw_reply='{"on_topic": "yes"}', latency_ms=1)

    assert again == JudgeReply.objects.get() and again.raw_reply == '{"on_topic": "no"}'
    assert JudgeRating.objects.get().values["on_topic"] == "no"


def test_the_admin_shows_judge_replies_and_changes_or_deletes_none(item, client):
    run_with(["not json", "not json", "not json"], item)
    reply = JudgeReply.objects.get(attempt=2)
    client.force_login(CoordinatorFactory(is_superuser=True))

    page = client.get(reverse("admin:studies_judgereply_change", args=[reply.pk]))
    assert page.status_code == 200 and "not json" in page.content.decode()
    assert client.post(reverse("admin:studies_judgereply_delete", args=[reply.pk]), {"post": "yes"}).status_code == 403
    assert JudgeReply.objects.filter(pk=reply.pk).exists()


def test_two_questions_are_shown_in_their_own_order_with_their_answers():
    item = CounterfactualItemFactory(answer_1__text="For her.", answer_2__text="For him.")
    with ScriptedLLM([]) as server:
        judge = judge_for(item, server.base_url, repeats=2, shown_fields=["question", "answers"])
    for repeat in (0, 1):
        text = build_judge_request(judge, item, repeat)["messages"][-1]["content"]
        assert display_orders(item.study) == (False,)
        assert text.startswith(
            f"Question 1:\n{item.pair.question_1.text}\n\nQuestion 2:\n{item.pair.question_2.text}\n\n"
            "Answer 1:\nFor her.\n\nAnswer 2:\nFor him.\n\nQuestions:\n"
        )


def test_a_judge_is_checked_before_it_asks(item):
    source = AnswerSourceFactory(base_url="")
    judge = Judge(name="J", source=source, rubric_version=item.study.rubric_version, instructions="Rate.",
                  shown_fields=["everything"], examples=[{"item": "x"}], repeats=0)  # fmt: skip
    with pytest.raises(ValidationError) as refused:
        judge.full_clean()
    assert set(refused.value.message_dict) == {"shown_fields", "examples", "repeats", "source"}
    judge.shown_fields, judge.examples, judge.repeats = ["answers"], [], 1
    judge.save()
    with pytest.raises(JudgeError, match="does not hold the judge J"):
        submit_judge(judge, item.study)
    item.study.judges.add(judge)
    with pytest.raises(JudgeError, match="has no endpoint"):
        submit_judge(judge, item.study)
    other = group_rubric_item()
    other.study.rubric_version = StudyFactory().rubric_version  # EquityMedQA's independent rubric
    other.study.save()
    with pytest.raises(JudgeError, match="not the rubric of"):
        submit_judge(judge, other.study)
    assert not Call.objects.exists()
    with pytest.raises(JudgeError, match="makes 1 repeat"):
        build_judge_request(judge, item, 1)


def test_a_persons_quotes_sent_as_json_through_the_api_are_checked_and_stored_as_a_judges():
    answer = "Take ibuprofen 400 mg every 6 hours. Avoid alcohol."
    version = RubricVersion.objects.create(rubric=Rubric.objects.create(name="MEDIC-like"), number=1, definition=MEDIC)
    item = StudyItem.objects.create(study=StudyFactory(rubric_version=version), answer=AnswerFactory(text=answer))
    assignment = AssignmentFactory(item=item)
    api = client_for(assignment.rater.user)
    url = f"/api/assignments/{assignment.id}/rating/"
    quotes = {"hallucinations": [{"quote": "Avoid alcohol.", "score": "2"}], "omission": 1}

    refused = api.post(url, {"values": {**quotes, "hallucinations": [{"quote": "aspirin", "score": 2}]}}, format="json")
    assert refused.status_code == 400
    assert refused.json()["values"]["hallucinations"] == [
        "Quote 1: “aspirin” does not occur in the answer shown; copy it exactly."
    ]
    assert api.post(url, {"values": quotes}, format="json").status_code == 201
    run_with([json.dumps(quotes)], item)
    assert (
        Rating.objects.get().values
        == JudgeRating.objects.get().values
        == {"hallucinations": [{"quote": "Avoid alcohol.", "score": 2}], "omission": 1, "why": ""}
    )
