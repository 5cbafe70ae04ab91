"""What a judge asks for and what the stand-in judge answers.

Structured output: a source set to `json_object` or `json_schema` adds `response_format` to a judge's request
(the rubric's JSON Schema for `json_schema`), stored as sent; answer generation never sends it. The stand-in
(tests/llm_server.FakeLLM) answers a judge's request with values valid for its rubric, the same for the same
item; told to, it errs at a known rate, more for items mentioning a group, or replies with prose, which the
judge kind asks again."""

import json

import jsonschema
import pytest
from django.test import TestCase

from datasets.generation import jobs
from studies.judge_kind import submit_judge
from studies.judges import build_judge_request, judge_context
from studies.models import Judge, JudgeRating, JudgeReply, Rubric, RubricVersion, StudyItem
from studies.rubric_defaults import DEFAULT_RUBRICS, OTHER_RUBRICS
from studies.rubric_schema import ItemContext, json_schema, validate
from tests.factories import GROUP_RUBRIC, AnswerFactory, AnswerSourceFactory, StudyFactory, group_rubric_item
from tests.llm_server import FakeLLM, judge_item_text, judge_schema, judge_values
from tests.studies.test_rubric_schema import MEDIC

pytestmark = pytest.mark.django_db

ANSWER = "Take ibuprofen 400 mg every 6 hours. Avoid alcohol."


def held_judge(item, base_url: str, **source_fields) -> Judge:
    source = AnswerSourceFactory(name="Judge model", base_url=base_url, model_name="judge-model",
                                 request_timeout_seconds=5, **source_fields)  # fmt: skip
    judge = Judge.objects.create(name="Stand-in judge", source=source, rubric_version=item.study.rubric_version,
                                 instructions="Rate.", shown_fields=["question", "answers", "groups"])  # fmt: skip
    item.study.judges.add(judge)
    return judge


def judged(judge, study):
    with TestCase.captureOnCommitCallbacks(execute=True):  # eager Celery: the lanes run as the submit commits
        submit_judge(judge, study)


@pytest.mark.parametrize("setting", ["none", "json_object", "json_schema"])
def test_structured_output_is_asked_for_as_the_source_says_and_stored_as_sent(setting):
    item = group_rubric_item(groups=("female", "male"))
    with FakeLLM() as server:
        judge = held_judge(item, server.base_url, structured_output=setting)
        judged(judge, item.study)
    body = build_judge_request(judge, item, 0)
    schema = json_schema(item.study.rubric_version.definition, judge_context(item, False))
    expected = {
        "none": None,
        "json_object": {"type": "json_object"},
        "json_schema": {"type": "json_schema", "json_schema": {"name": "rubric", "schema": schema, "strict": False}},
    }[setting]
    assert body.get("response_format") == expected
    reply = JudgeReply.objects.get()
    assert reply.request == body == server.requests[0] and not reply.errors  # the stand-in's reply is valid


def test_answer_generation_never_sends_response_format():
    plain, structured = AnswerSourceFactory(), AnswerSourceFactory(structured_output="json_schema")
    assert jobs.job_parameters(plain) == jobs.job_parameters(structured)  # nor changes the settings hash
    assert "response_format" not in json.dumps(jobs.job_parameters(structured))


@pytest.mark.parametrize(
    "definition",
    [*(d for _, _, _, d in DEFAULT_RUBRICS), *(d for _, _, _, d in OTHER_RUBRICS), MEDIC, GROUP_RUBRIC],
)
def test_the_stand_ins_values_pass_the_rubrics_schema_and_validator_for_any_item_and_error_rate(definition):
    context = ItemContext(groups=(("female", "female"), ("male", "male")), answers=(ANSWER,))
    schema = json_schema(definition, context)
    for n in range(40):
        item = f"Question:\nCase {n}\n\nAnswer:\n{ANSWER}"
        for rate in (0.0, 0.5, 1.0):
            values = judge_values(item, schema, error_rate=rate, answer=ANSWER)
            assert jsonschema.Draft202012Validator(schema).is_valid(values), (n, rate, values)
            assert validate(definition, values, context)[1] == {}, (n, rate, values)
    assert judge_values("x", schema) == judge_values("x", schema)  # the same item, the same values


def test_the_stand_in_errs_at_its_rate_and_more_for_items_mentioning_a_group():
    definition = next(d for _, name, _, d in DEFAULT_RUBRICS if name == "EquityMedQA independent")
    schema = json_schema(definition, ItemContext())
    prompt = "Question:\nA {who} patient asks about pain {n}.\n\nAnswer:\nRest.\n\nQuestions:\n- ...\n{mark}{schema}"
    mark = "Reply with one JSON object only, keyed by the questions' keys, matching this JSON Schema:\n"

    def verdicts(server, who):
        asked = [prompt.format(who=who, n=n, mark=mark, schema=json.dumps(schema)) for n in range(400)]
        return [json.loads(server.answer_for(text))["bias_presence"] for text in asked]

    truth = FakeLLM()
    erring = FakeLLM(judge_error_rate=0.1, judge_group_errors={"Black": 0.4})
    share = {}
    for who in ("Black", "White"):
        right = verdicts(truth, who)
        share[who] = sum(a != b for a, b in zip(right, verdicts(erring, who), strict=True)) / len(right)
    assert 0.4 < share["Black"] < 0.6 and 0.05 < share["White"] < 0.15  # 0.5 and 0.1, drawn by hash
    assert judge_schema(prompt.format(who="", n=0, mark=mark, schema=json.dumps(schema))) == schema
    assert judge_item_text("Question:\nQ\n\nQuestions:\n- x") == "Question:\nQ"


def test_a_schema_only_in_response_format_is_answered_too():
    version = RubricVersion.objects.create(rubric=Rubric.objects.create(name="MEDIC-like"), number=1, definition=MEDIC)
    item = StudyItem.objects.create(study=StudyFactory(rubric_version=version), answer=AnswerFactory(text=ANSWER))
    schema = json_schema(MEDIC, judge_context(item, False))
    with FakeLLM() as server:
        body = {
            "model": "m",
            "messages": [{"role": "user", "content": f"Answer:\n{ANSWER}"}],
            "response_format": {"type": "json_schema", "json_schema": {"name": "rubric", "schema": schema}},
        }
        status, payload = server._respond(body)
    values = json.loads(payload["choices"][0]["message"]["content"])
    assert status == 200 and jsonschema.Draft202012Validator(schema).is_valid(values)


def test_invalid_replies_at_a_rate_are_asked_again_and_counted(settings):
    settings.GENERATION_BACKOFF_SECONDS = 0
    item = group_rubric_item(groups=("female", "male"))
    for _ in range(19):
        StudyItem.objects.create(study=item.study, answer=AnswerFactory(question=item.answer.question))
    with FakeLLM(judge_invalid_rate=0.5) as server:
        judge = held_judge(item, server.base_url)
        judged(judge, item.study)

    replies = JudgeReply.objects.filter(judge=judge)
    rated = JudgeRating.objects.filter(judge=judge).count()
    invalid = replies.exclude(errors={}).count()
    assert len(server.requests) == replies.count() == rated + invalid and invalid > 0
    assert replies.filter(attempt__gt=0, errors={}).exists()  # a retry that succeeded
    assert all(reply.raw_reply == "The answer looks reasonable to me." for reply in replies.exclude(errors={}))
    # Every question ends rated, or failed after 3 replies (never more).
    for item_id in item.study.items.values_list("pk", flat=True):
        mine = replies.filter(item_id=item_id)
        assert mine.filter(errors={}).count() == 1 or mine.count() == 3
        assert mine.count() <= 3
