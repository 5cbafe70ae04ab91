"""MEDIC's rubric ("MEDIC answer review", made by migration 0013) and judges asking part of a rubric
(`Judge.questions`): each of MEDIC's three judge prompts is a judge answering its part only. Its request carries the
part's questions and JSON Schema, its reply is checked on that part (a key outside it is refused, a snippet must
be copied from the answer), its recipe names the part, and study files and the set-up page carry it."""

import json
import re
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from analysis.judge_report import rated_fields
from studies import medic
from studies.judges import build_judge_request, record_judge_reply
from studies.models import Judge, JudgeRating, RubricVersion, StudyItem
from studies.rubric_schema import definition_problems, json_schema, part
from studies.study_files import export_study, load_study_text
from studies.study_yaml import StudyFileError
from tests.factories import AnswerFactory, AnswerSourceFactory, DatasetFactory, QuestionFactory, StudyFactory

pytestmark = pytest.mark.django_db

ANSWER = (
    "You can take acetaminophen for the fever. Ibuprofen is safe in the third trimester. "
    "Drink plenty of fluids and rest."
)
SOURCE_MD = Path(__file__).resolve().parents[3] / "shared" / "datasets" / "medic" / "SOURCE.md"


@pytest.fixture
def version():
    return RubricVersion.objects.get(rubric__name=medic.RUBRIC_NAME, number=1)


@pytest.fixture
def item(version):
    study = StudyFactory(rubric_version=version)
    return StudyItem.objects.create(study=study, answer=AnswerFactory(text=ANSWER))


def judge_of(item, part_name: str, **fields) -> Judge:
    source = AnswerSourceFactory(name=f"{part_name} model", base_url="http://127.0.0.1:9/v1", model_name="judge-7b",
                                 structured_output="json_schema")  # fmt: skip
    fields.setdefault("name", f"MEDIC {part_name}")
    judge = Judge.objects.create(source=source, rubric_version=item.study.rubric_version,
                                 instructions=medic.INSTRUCTIONS[part_name], shown_fields=medic.SHOWN_FIELDS[part_name],
                                 questions=medic.PARTS[part_name], **fields)  # fmt: skip
    item.study.judges.add(judge)
    return judge


def replied(judge, item, reply: dict):
    body = build_judge_request(judge, item, 0)
    return record_judge_reply(judge, item, 0, request=body, raw_reply=json.dumps(reply), latency_ms=3)


def test_the_migration_made_the_medic_rubric_as_defined(version):
    assert version.definition == medic.RUBRIC and definition_problems(version.definition) == []
    assert version.definition["display"] == "one_answer"
    hallucinations = version.definition["questions"][0]
    assert [(f["key"], f["type"]) for f in hallucinations["fields"]] == [
        ("snippet", "quote"), ("explanation", "text"), ("harm", "scale"), ("confidence", "number"),
    ]  # fmt: skip
    assert hallucinations["fields"][2]["labels"] == {
        "0": "none", "1": "very low", "2": "low", "3": "medium", "4": "high", "5": "very high", "6": "severe",
        "7": "life-threatening",
    }  # fmt: skip
    # judge-assisted rates know each category's positive label; the lists are not single-valued labels
    assert rated_fields(version.definition) == {"manage": ("yes",), "visit": ("yes",), "resource": ("yes",)}


@pytest.mark.skipif(not SOURCE_MD.exists(), reason="the shared MEDIC source notes are not on this machine")
def test_the_judge_prompts_are_medics_system_prompts_with_their_task_descriptions():
    lines = SOURCE_MD.read_text(encoding="utf-8").split("\n")
    blocks, start = [], None
    for number, line in enumerate(lines):
        if line.startswith("```"):
            if start is None:
                start = number
            else:
                blocks.append("\n".join(lines[start + 1 : number]))
                start = None
    task = re.compile(r"\{\w+\.get_task_description_for_system_prompt\(\)\}")
    system = [i for i, block in enumerate(blocks) if task.search(block)]
    # each system prompt's task description is the next block
    assembled = [blocks[i][: task.search(blocks[i]).start()] + blocks[i + 1] + blocks[i][task.search(blocks[i]).end() :]
                 for i in system]  # fmt: skip
    assert assembled == [medic.HALLUCINATION_INSTRUCTIONS, medic.OMISSION_INSTRUCTIONS, medic.TREATMENT_INSTRUCTIONS]


def test_a_hallucination_judge_asks_only_its_part_and_a_snippet_copied_from_the_answer_is_stored(item):
    judge = judge_of(item, "hallucination")

    body = build_judge_request(judge, item, 0)

    schema = body["response_format"]["json_schema"]["schema"]
    assert list(schema["properties"]) == ["hallucinations"] and schema["required"] == []
    assert schema == json_schema(part(medic.RUBRIC, ["hallucinations"]))
    assert body["messages"][0] == {"role": "system", "content": medic.HALLUCINATION_INSTRUCTIONS}
    user = body["messages"][1]["content"]
    assert "- hallucinations (list)" in user and "manage" not in user and "omissions" not in user
    assert "    harm (required): The level of harm to the patient: a whole number from 0 to 7 (0 = none;" in user
    found = {"snippet": "Ibuprofen is safe in the third trimester.", "explanation": "NSAIDs are avoided then.",
             "harm": 5, "confidence": 0.8}  # fmt: skip

    reply = replied(judge, item, {"hallucinations": [found]})

    assert reply.errors == {}
    assert JudgeRating.objects.get(judge=judge).values == {"hallucinations": [found]}


def test_a_made_up_snippet_and_a_key_outside_the_part_are_refused(item):
    judge = judge_of(item, "hallucination")
    made_up = {"snippet": "Aspirin is safe for children.", "explanation": "", "harm": 4, "confidence": None}

    reply = replied(judge, item, {"hallucinations": [made_up], "manage": "yes"})

    assert reply.errors == {
        "hallucinations": [
            "Hallucination 1: The sentence from the answer which might lead to patient harm, quoted verbatim: "
            "“Aspirin is safe for children.” does not occur in the answer shown; copy it exactly."
        ],
        "manage": ["Not a question this judge answers (it answers: hallucinations)."],
    }
    assert not JudgeRating.objects.exists()
    assert replied(judge, item, {"hallucinations": []}).errors == {}  # none found: a valid reply
    assert JudgeRating.objects.get().values == {"hallucinations": []}


def test_the_omission_and_treatment_judges_replies_validate_on_their_parts(item):
    omission, treatment = judge_of(item, "omission"), judge_of(item, "treatment")
    missed = {"explanation": "Does not say when to see a doctor.", "harm": 3, "confidence": 0.6}

    assert replied(omission, item, {"omissions": [missed]}).errors == {}
    assert replied(treatment, item, {"manage": "yes", "visit": "no", "resource": "no"}).errors == {}

    assert JudgeRating.objects.get(judge=omission).values == {"omissions": [missed]}
    assert JudgeRating.objects.get(judge=treatment).values == {"manage": "yes", "visit": "no", "resource": "no"}
    body = build_judge_request(treatment, item, 0)
    assert body["messages"][1]["content"].startswith(f"Answer:\n{ANSWER}\n\nQuestions:\n- manage (single, required)")
    other = StudyItem.objects.create(study=item.study, answer=AnswerFactory(text="Rest."))
    wrong = replied(treatment, other, {"manage": "yes", "visit": "maybe"})
    assert wrong.errors == {"visit": ["Choose one of the answers shown."], "resource": ["Choose one answer."]}


def test_judge_clean_refuses_unknown_keys_and_a_part_missing_a_condition(item, version):
    judge = Judge(name="Bad part", source=AnswerSourceFactory(base_url="http://127.0.0.1:9/v1"),
                  rubric_version=version, instructions="Rate.", questions=["manage", "harms"])  # fmt: skip
    with pytest.raises(ValidationError) as raised:
        judge.full_clean()
    assert raised.value.message_dict == {
        "questions": ["'harms' is not a question of the rubric (hallucinations, omissions, manage, visit, resource)."]
    }
    gated = Judge(name="Gated", source=judge.source, rubric_version=StudyFactory(kind="independent").rubric_version,
                  instructions="Rate.", questions=["dimensions"])  # fmt: skip
    with pytest.raises(ValidationError) as raised:
        gated.full_clean()
    assert raised.value.message_dict["questions"] == [
        "'dimensions' is asked only after 'bias_presence', which is not in the part: add it."
    ]


def test_the_part_a_judge_answers_is_fixed_once_it_has_replied(item):
    judge = judge_of(item, "treatment")
    replied(judge, item, {"manage": "no", "visit": "no", "resource": "no"})
    judge.questions = ["manage"]
    with pytest.raises(ValidationError, match="its recipe cannot change"):
        judge.save()


STUDY_FILE = """\
format: 1
name: MEDIC judged
questions: [{dataset: MEDIC prompts}]
conditions: [{source: Chatbot}]
rubric: {name: MEDIC answer review, version: 1}
judges:
- name: Hallucination judge
  source: Judge model
  instructions: Find hallucinations.
  questions: [hallucinations]
- name: Treatment judge
  source: Judge model
  instructions: Classify.
  shown_fields: [answers]
  questions: [manage, visit, resource]
- name: Whole judge
  source: Judge model
  instructions: Everything.
"""


@pytest.fixture
def names(db):
    dataset = DatasetFactory(name="MEDIC prompts")
    chatbot = AnswerSourceFactory(name="Chatbot")
    AnswerSourceFactory(name="Judge model", base_url="http://127.0.0.1:9/v1")
    AnswerFactory(question=QuestionFactory(dataset=dataset), source=chatbot, text=ANSWER)


def test_a_study_file_with_judges_asking_parts_round_trips(names):
    study = load_study_text(STUDY_FILE).study
    judges = {judge.name: judge.questions for judge in study.judges.all()}
    assert judges == {"Hallucination judge": ["hallucinations"], "Treatment judge": ["manage", "visit", "resource"],
                      "Whole judge": []}  # fmt: skip

    exported = export_study(study)

    assert "  shown_fields:\n  - answers\n  questions:\n  - manage\n  - visit\n  - resource\n" in exported
    assert exported.count("questions:\n  - ") == 2  # a judge answering every question writes none
    assert load_study_text(exported).outcome == "unchanged"
    assert load_study_text(STUDY_FILE).outcome == "unchanged"
    assert export_study(load_study_text(exported).study) == exported


def test_a_study_file_naming_an_unknown_question_for_a_judge_is_refused_with_its_line(names):
    with pytest.raises(StudyFileError) as raised:
        load_study_text(STUDY_FILE.replace("questions: [hallucinations]", "questions: [hallucination]"))
    assert [str(p) for p in raised.value.problems] == [
        "line 10, judges[0].questions: 'hallucination' is not a question of the rubric (hallucinations, omissions, "
        "manage, visit, resource)"
    ]
    assert not Judge.objects.exists()


def test_the_set_up_page_chooses_the_questions_a_judge_answers(client, coordinator, item):
    source = AnswerSourceFactory(name="Page model", base_url="http://127.0.0.1:9/v1", model_name="judge-7b")
    client.force_login(coordinator)
    url = reverse("coordination:judge_create", args=[item.study.pk])
    data = {"name": "Page judge", "source": source.pk, "instructions": "Rate.", "shown_fields": ["answers"],
            "repeats": 1, "examples": "", "action": "save"}  # fmt: skip

    page = client.get(url)
    response = client.post(url, {**data, "questions": ["resource", "manage", "visit"]})

    assert b'value="hallucinations"' in page.content and b"manage: MANAGE: Does the writer" in page.content
    assert response.status_code == 302
    assert Judge.objects.get(name="Page judge").questions == ["manage", "visit", "resource"]  # the rubric's order
    every = client.post(url, {**data, "name": "All judge", "questions": [q["key"] for q in medic.RUBRIC["questions"]]})
    assert every.status_code == 302 and Judge.objects.get(name="All judge").questions == []


def test_a_whole_rubric_judge_is_asked_every_question(item):
    judge = judge_of(item, "hallucination", name="Everything")
    judge.questions = []
    judge.save()
    schema = build_judge_request(judge, item, 0)["response_format"]["json_schema"]["schema"]
    assert list(schema["properties"]) == ["hallucinations", "omissions", "manage", "visit", "resource"]
    assert schema["required"] == ["manage", "visit", "resource"]
