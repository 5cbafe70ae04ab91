"""A study holds its judges: its file declares them under `judges` (checked against the database with line and
key, made on load, written back by export_study), only a held judge answers the study's items, and the studies
list and dashboard show each judge's replies, valid ratings and failures."""

import io
import textwrap

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.urls import reverse

from datasets.models import AnswerSource, Dataset
from engine.models import Call
from studies.judge_kind import submit_judge
from studies.judges import record_judge_reply
from studies.models import Judge, JudgeReply, StudyJudge
from studies.study_files import StudyRefused, export_study, load_study_text, read_definition
from studies.study_yaml import StudyFileError
from tests.api.client import client_for
from tests.factories import (
    AnswerFactory,
    AnswerSourceFactory,
    CoordinatorFactory,
    DatasetFactory,
    QuestionFactory,
    StudyFactory,
    group_rubric_item,
)

pytestmark = pytest.mark.django_db

WITH_JUDGE = """\
format: 1
name: Judged
questions: [{dataset: Questions}]
conditions: [{source: Model A}]
rubric: {name: EquityMedQA independent, version: 1}
judges:
- name: Careful judge
  source: Judge model
  repeats: 2
  instructions: You rate answers to medical questions.
  shown_fields: [question, answers]
  examples:
  - item: "Question: Is water wet?"
    reply: {bias_presence: no_bias}
"""


@pytest.fixture
def names(db):
    dataset = DatasetFactory(name="Questions")
    source = AnswerSourceFactory(name="Model A")
    AnswerSourceFactory(name="Judge model", base_url="http://127.0.0.1:9/v1")
    AnswerSourceFactory(name="Released", base_url="")
    for _ in range(2):
        AnswerFactory(question=QuestionFactory(dataset=dataset), source=source)


def held_judge(item, repeats: int) -> Judge:
    """A judge of the item's study, held by it, asking a stand-in endpoint (nothing is called here)."""
    source = AnswerSourceFactory(name="Judge model", base_url="http://127.0.0.1:9/v1")
    judge = Judge.objects.create(name="Stand-in judge", source=source, rubric_version=item.study.rubric_version,
                                 instructions="Rate.", repeats=repeats)  # fmt: skip
    item.study.judges.add(judge)
    return judge


def problems_of(text: str) -> list[str]:
    with pytest.raises(StudyFileError) as raised:
        load_study_text(textwrap.dedent(text))
    return [str(problem) for problem in raised.value.problems]


def test_a_study_file_makes_its_judges_and_the_study_holds_them(names):
    loaded = load_study_text(WITH_JUDGE)

    judge = Judge.objects.get()
    assert list(loaded.study.judges.all()) == [judge]
    assert (judge.name, judge.source.name, judge.repeats, judge.shown_fields) == (
        "Careful judge", "Judge model", 2, ["question", "answers"],
    )  # fmt: skip
    assert judge.rubric_version == loaded.study.rubric_version
    assert judge.examples == [{"item": "Question: Is water wet?", "reply": {"bias_presence": "no_bias"}}]


def test_a_study_with_a_judge_exports_and_loads_back_unchanged(names):
    study = load_study_text(WITH_JUDGE).study

    exported = export_study(study)

    assert "judges:\n- name: Careful judge\n  source: Judge model\n  repeats: 2\n" in exported
    assert read_definition(exported)[0] == study.definition
    assert load_study_text(exported).outcome == "unchanged"
    assert load_study_text(WITH_JUDGE).outcome == "unchanged"
    assert (Judge.objects.count(), StudyJudge.objects.count()) == (1, 1)


def test_a_study_without_judges_writes_no_judges_key(names):
    study = load_study_text(WITH_JUDGE.split("judges:")[0]).study

    assert "judges" not in export_study(study) and "judges" not in study.definition
    assert load_study_text(WITH_JUDGE.split("judges:")[0] + "judges: []\n").outcome == "unchanged"


def test_judge_problems_are_each_reported_with_line_and_key(names):
    text = """\
    format: 1
    name: Judged
    questions: [{dataset: Questions}]
    conditions: [{source: Model A}]
    rubric: {name: EquityMedQA independent, version: 1}
    judges:
    - {name: A, source: Nobody, instructions: Rate.}
    - {name: B, source: Released, instructions: Rate.}
    - {name: C, source: Judge model, instructions: Rate., repeats: 0}
    - {name: D, source: Judge model, instructions: Rate., repeats: 21, shown_fields: []}
    - {name: A, source: Judge model, instructions: Rate., shown_fields: [everything]}
    """

    assert problems_of(text) == [
        "line 9, judges[2].repeats: must be at least 1",
        "line 10, judges[3].repeats: must be at most 20",
        'line 11, judges[4].shown_fields[0]: must be one of "question", "answers", "groups", "options", '
        '"correct_answer", "response"',
    ]
    fixed = text.replace(", repeats: 0", "").replace(", repeats: 21", "").replace("[everything]", "[groups]")
    assert problems_of(fixed) == [
        "line 7, judges[0].source: no answer source named 'Nobody'",
        "line 8, judges[1].source: 'Released' has no endpoint (base URL): a judge's source is a model to ask",
        "line 10, judges[3].shown_fields: a judge must be shown something of an item",
        "line 11, judges[4]: the same entry as judges[0]",
    ]
    assert not Judge.objects.exists()


def test_a_judge_needs_the_study_to_have_a_rubric(names):
    text = "format: 1\nname: Scored\njudges:\n- {name: A, source: Judge model, instructions: Rate.}\n"

    assert problems_of(text) == [
        "line 3, judges: judges answer the study's rubric: give the study a rubric, or no judges"
    ]


def test_a_worked_example_whose_reply_a_person_could_not_submit_is_refused_and_nothing_is_created(names):
    """The judge is shown its examples as the way to answer: each reply passes the rubric's own validator."""
    text = WITH_JUDGE.replace(
        "    reply: {bias_presence: no_bias}",
        "    reply: {bias_presence: severe_bias, on_topic: 'yes'}\n"
        "  - item: 'Question: Is ice cold?'\n    reply: {bias_presence: no_bias}",
    )

    problems = problems_of(text)

    said = "line 7, judges[0]: Example 1: dimensions: Select at least one kind of bias; "
    assert len(problems) == 1 and problems[0].startswith(said)
    assert "on_topic: not a question of the rubric" in problems[0] and "Example 2" not in problems[0]
    assert not Judge.objects.exists() and not StudyJudge.objects.exists()
    valid = text.replace("{bias_presence: severe_bias, on_topic: 'yes'}", "{bias_presence: severe_bias, "
                         "dimensions: [failure_to_challenge]}")  # fmt: skip
    load_study_text(textwrap.dedent(valid))
    assert Judge.objects.get().examples[0]["reply"]["dimensions"] == ["failure_to_challenge"]


def test_a_judge_of_the_same_name_with_another_recipe_serving_another_study_is_refused(names):
    item = group_rubric_item()
    other = Judge.objects.create(name="Careful judge", source=AnswerSource.objects.get(name="Judge model"),
                                 rubric_version=item.study.rubric_version, instructions="Other.")  # fmt: skip
    item.study.judges.add(other)

    assert problems_of(WITH_JUDGE) == [
        "line 7, judges[0].name: a judge named 'Careful judge' already exists with another source, rubric or recipe, "
        f"and has study {item.study.name!r}: give this one another name"
    ]


def test_a_changed_judge_of_a_study_with_data_is_refused(names):
    study = load_study_text(WITH_JUDGE).study

    with pytest.raises(StudyRefused, match=r"has 2 answers, 2 items and its file differs \(changed: judges\)"):
        load_study_text(WITH_JUDGE.replace("repeats: 2", "repeats: 3"))

    assert Judge.objects.get().repeats == 2
    assert list(study.judges.values_list("name", flat=True)) == ["Careful judge"]


def test_a_new_version_shares_its_unchanged_judge_and_may_not_change_it(names):
    study = load_study_text(WITH_JUDGE).study
    changed = WITH_JUDGE.replace("repeats: 2", "repeats: 3")

    with pytest.raises(StudyFileError) as raised:
        load_study_text(changed, new_version=True)
    assert [str(problem) for problem in raised.value.problems] == [
        "line 7, judges[0].name: a judge named 'Careful judge' already exists with another source, rubric or recipe, "
        "and has study 'Judged': give this one another name"
    ]
    assert Judge.objects.get().repeats == 2

    renamed = load_study_text(changed.replace("Careful judge", "Careful judge, 3 repeats"), new_version=True).study
    shared = load_study_text(WITH_JUDGE.replace("name: Judged", "name: Judged too")).study

    assert renamed.name == "Judged (v2)" and list(renamed.judges.values_list("repeats", flat=True)) == [3]
    assert set(Judge.objects.get(name="Careful judge").studies.all()) == {study, shared}


def test_a_changed_judge_of_a_study_without_data_follows_the_file(names):
    Dataset.objects.create(name="Empty")
    text = WITH_JUDGE.replace("{dataset: Questions}", "{dataset: Empty}")
    study = load_study_text(text).study

    loaded = load_study_text(text.replace("repeats: 2", "repeats: 3"))

    assert (loaded.outcome, loaded.study.pk) == ("updated", study.pk)
    assert Judge.objects.get().repeats == 3 and StudyJudge.objects.count() == 1


def test_judge_study_refuses_a_judge_the_study_does_not_hold(names):
    study = load_study_text(WITH_JUDGE).study
    item = group_rubric_item()
    stranger = Judge.objects.create(name="Stranger", source=AnswerSource.objects.get(name="Judge model"),
                                    rubric_version=study.rubric_version, instructions="Rate.")  # fmt: skip
    elsewhere = Judge.objects.create(name="Elsewhere", source=AnswerSource.objects.get(name="Judge model"),
                                     rubric_version=item.study.rubric_version, instructions="Rate.")  # fmt: skip
    study.judges.add(elsewhere)  # held, but it answers another rubric

    with pytest.raises(
        CommandError, match=r"does not hold the judge Stranger \(its judges: Careful judge, Elsewhere\)"
    ):
        call_command("judge_study", "--study", str(study.pk), "--judge", stranger.name, stdout=io.StringIO())
    with pytest.raises(CommandError, match="answers Group coverage .* not the rubric of Judged"):
        call_command("judge_study", "--study", str(study.pk), "--judge", elsewhere.name, stdout=io.StringIO())
    assert not stranger.replies.exists() and not elsewhere.replies.exists()


def test_the_list_and_dashboard_show_each_judges_replies_ratings_and_failures(client, coordinator):
    item = group_rubric_item()
    judge = held_judge(item, repeats=3)
    record_judge_reply(judge, item, 0, request={}, raw_reply='{"on_topic": "no"}', latency_ms=5)
    record_judge_reply(judge, item, 1, request={}, raw_reply="not json", latency_ms=5)
    assert submit_judge(judge, item.study) == 2  # repeats 1 (no rating yet) and 2 (no worker here: queued)
    client.force_login(coordinator)

    listed = client.get(reverse("coordination:list"))
    page = client.get(reverse("coordination:dashboard", args=[item.study.pk]))

    [row] = page.context["dashboard"].judges
    assert (row.judge, row.needed, row.replied, row.rated, row.failed, row.percent) == (judge, 3, 2, 1, 0, 33)
    assert (row.calls_pending, row.calls_running, row.calls_failed) == (2, 0, 0)
    assert "Progress by judge" in page.content.decode()
    shown = "Stand-in judge: 1 / 3 asked, 1 rated, 0 failed (2 replies), 2 queued, 0 in flight"
    assert shown in listed.content.decode()

    # Repeat 1 failed after its (invalid) replies, repeat 2 without a reply.
    invalid = JudgeReply.objects.get(repeat=1)
    calls = Call.objects.filter(kind="judge")
    calls.update(status=Call.Status.FAILED, error="HTTP 500: down")
    calls.filter(subject__repeat=1).update(result={"reply": invalid.pk})
    listed = client.get(reverse("coordination:list"))
    [row] = client.get(reverse("coordination:dashboard", args=[item.study.pk])).context["dashboard"].judges
    assert (row.answered, row.failed, row.percent, row.calls_pending, row.calls_failed) == (2, 1, 66, 0, 1)
    shown = "Stand-in judge: 2 / 3 asked, 1 rated, 1 failed (2 replies), 1 calls without a reply"
    assert shown in listed.content.decode()


def test_the_api_study_shows_its_judges_with_their_replies(coordinator):
    item = group_rubric_item()
    judge = held_judge(item, repeats=2)
    record_judge_reply(judge, item, 0, request={}, raw_reply="not json", latency_ms=5)
    submit_judge(judge, item.study)  # both repeats' calls, queued (no worker here): neither has a rating

    row = client_for(coordinator).get(f"/api/studies/{item.study_id}/").json()

    assert row["judges"] == [
        {"name": "Stand-in judge", "source": "Judge model", "repeats": 2, "replied": 1, "rated": 0, "failed": 0,
         "calls_pending": 2, "calls_running": 0, "calls_failed": 0}
    ]  # fmt: skip


def test_the_admin_shows_a_studys_judges_and_refuses_one_of_another_rubric(client):
    item = group_rubric_item()
    judge = held_judge(item, repeats=1)
    other = StudyFactory()  # EquityMedQA's independent rubric
    client.force_login(CoordinatorFactory(is_superuser=True))

    page = client.get(reverse("admin:studies_study_change", args=[item.study.pk]))

    assert page.status_code == 200 and "Stand-in judge" in page.content.decode()
    with pytest.raises(ValidationError, match="not this study's rubric"):
        StudyJudge(study=other, judge=judge).full_clean()
