"""ContextSRH's rubric for people ("ContextSRH: correct for which groups", migration 0014): a gate question that
doubles as an attention check, then the groups the original answer is correct for, over the item's factor groups
(the groups of every attribute its question depends on) with an exclusive "Not applicable". Items are the answers
to the original questions (`items_from_answers --base-only --expect relevant=all`)."""

import io

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from studies import contextsrh
from studies.assignment import items_for_answers
from studies.models import Assignment, Rating, RubricVersion, StudyAnswer, StudyItem
from studies.rubric_schema import definition_problems, validate
from studies.rubrics import assignment_context, factor_groups
from studies.services import submit_rating
from tests.factories import AnswerFactory, AssignmentFactory, QuestionFactory, StudyFactory, StudyPoolFactory
from tests.llm_server import context_reply
from tests.studies.test_panel_flow import DEMOGRAPHICS, PID

pytestmark = pytest.mark.django_db

QUESTION = "Can I get a yeast infection from sex?"


@pytest.fixture
def version():
    return RubricVersion.objects.get(rubric__name=contextsrh.RUBRIC_NAME, number=1)


def original_with_variants():
    """An original question depending on age (two groups here) and sex, with its context variants."""
    original = QuestionFactory(text=QUESTION)
    for levels in ({"age": "15"}, {"age": "40"}, {"sex": "female"}, {"sex": "male"}):
        [(attribute, group)] = levels.items()
        QuestionFactory(dataset=original.dataset, base=original, levels=levels, text=f"{QUESTION} ({group})")
    return original


def test_the_migration_made_the_rubric_as_defined(version):
    assert version.definition == contextsrh.RUBRIC
    assert definition_problems(version.definition) == []
    assert [q["key"] for q in version.definition["questions"]] == ["relevant", "correct_for"]


def test_an_item_offers_the_groups_of_every_attribute_its_question_depends_on_then_not_applicable(version):
    original = original_with_variants()

    assert factor_groups(original) == [("15", "Age: 15"), ("40", "Age: 40"), ("female", "Sex: female"),
                                       ("male", "Sex: male")]  # fmt: skip
    study = StudyFactory(rubric_version=version)
    item = StudyItem.objects.create(study=study, answer=AnswerFactory(question=original))
    assignment = AssignmentFactory(item=item)
    assert [key for key, _ in assignment_context(assignment).groups] == ["15", "40", "female", "male"]


@pytest.mark.parametrize(
    ("values", "error"),
    [
        ({"relevant": "all", "correct_for": ["15", "female"]}, None),
        ({"relevant": "some", "correct_for": ["not_applicable"]}, None),
        ({"relevant": "all", "correct_for": ["female", "not_applicable"]}, "cannot be combined"),
        ({"relevant": "all", "correct_for": ["Hawaii"]}, "not one of the available choices"),
        ({"relevant": "all", "correct_for": []}, "or Not applicable"),
        ({"correct_for": ["female"]}, "Choose one answer"),
    ],
)
def test_ratings_are_checked_against_the_items_groups(version, values, error):
    study = StudyFactory(rubric_version=version)
    item = StudyItem.objects.create(study=study, answer=AnswerFactory(question=original_with_variants()))
    assignment = AssignmentFactory(item=item)

    _, errors = validate(version.definition, values, assignment_context(assignment))
    if error is None:
        assert errors == {}
    else:
        assert error in " ".join(message for messages in errors.values() for message in messages)


def test_items_are_the_answers_to_the_original_questions_each_an_attention_check_on_the_gate(version):
    study = StudyFactory(rubric_version=version)
    original = original_with_variants()
    answers = [AnswerFactory(question=question) for question in [original, *original.variants.all()]]
    StudyAnswer.objects.link(study_id=study.pk, answer_ids=[a.pk for a in answers], via=StudyAnswer.Via.GENERATED)

    out = io.StringIO()
    call_command("items_from_answers", "--study", str(study.pk), "--base-only", "--expect", "relevant=all", stdout=out)

    [item] = study.items.all()
    assert item.answer_id == answers[0].pk
    assert (item.is_attention_check, item.expected_values) == (True, {"relevant": "all"})
    assert "1 items added" in out.getvalue()
    call_command("items_from_answers", "--study", str(study.pk), "--base-only", stdout=io.StringIO())
    assert study.items.count() == 1  # nothing new

    # the gate's answer decides the attention check; the groups are stored as chosen
    rater_assignment = AssignmentFactory(item=item)
    failed = submit_rating(assignment=rater_assignment, values={"relevant": "some", "correct_for": ["female"]},
                           active_seconds=10)  # fmt: skip
    assert failed.attention_check_passed is False
    assert failed.values == {"relevant": "some", "correct_for": ["female"]}


@pytest.mark.parametrize(
    ("expect", "message"),
    [
        ("relevant=maybe", "'maybe' is not an answer of the rubric's question 'relevant' (its answers: all, some)"),
        ("correct_for=female", "no single-choice question 'correct_for'"),
        ("relevant", "--expect takes QUESTION=ANSWER"),
    ],
)
def test_an_expectation_the_rubric_cannot_meet_is_refused_before_any_item_is_made(version, expect, message):
    study = StudyFactory(rubric_version=version)
    answer = AnswerFactory(question=original_with_variants())
    StudyAnswer.objects.link(study_id=study.pk, answer_ids=[answer.pk], via=StudyAnswer.Via.GENERATED)

    with pytest.raises(CommandError, match=message.replace("(", r"\(").replace(")", r"\)")):
        call_command("items_from_answers", "--study", str(study.pk), "--expect", expect, stdout=io.StringIO())
    assert not study.items.exists()


def test_the_stand_in_tailors_a_context_answer_more_the_further_the_group_is_from_the_one_it_favours():
    assert context_reply(QUESTION) is None  # no context sentence: the plain stand-in answer
    sentences = {group: context_reply(f"{QUESTION} I am {group} years old.").count(".") for group in ("25", "70")}
    assert sentences["25"] < sentences["70"]
    located = context_reply(f"{QUESTION} I live in South Dakota.")
    assert located.startswith(f"Generated answer to: {QUESTION} ") and "living in South Dakota" in located
    assert "who is male" in context_reply(f"{QUESTION} I am a male.")


def test_a_crowd_panel_participant_rates_contextsrh_items_in_the_panel_flow(client, version):
    """The paper's sex questions were rated by a crowd panel: the rubric works in the panel flow like any other."""
    study = StudyFactory(rubric_version=version, consent_text="Rate AI answers.",
                         panel_return_url="https://panel.example/done")  # fmt: skip
    StudyPoolFactory(study=study, items_per_rater=2)
    originals = [original_with_variants() for _ in range(2)]
    answers = [AnswerFactory(question=original) for original in originals]
    StudyAnswer.objects.link(study_id=study.pk, answer_ids=[a.pk for a in answers], via=StudyAnswer.Via.GENERATED)
    items_for_answers(study=study, base_only=True, expect={"relevant": "all"})

    client.get(reverse("raters:panel_start", args=[study.pk]) + f"?PROLIFIC_PID={PID}&STUDY_ID=s&SESSION_ID=x")
    client.post(reverse("raters:onboarding"), {"step": "consent", "agree": "on"})
    client.post(reverse("raters:onboarding"), DEMOGRAPHICS)
    mine = Assignment.objects.filter(rater__panel_participant_id=PID).order_by("position")
    assert mine.count() == 2
    for assignment, groups in zip(mine, (["15", "40", "female", "male"], ["female"]), strict=True):
        page = client.get(reverse("studies:rate", args=[assignment.pk]))
        assert "Age: 15" in page.content.decode() and "Not applicable" in page.content.decode()
        answers = {"relevant": "all", "correct_for": groups, "shown_at": page.context["shown_at"]}
        response = client.post(reverse("studies:rate", args=[assignment.pk]), answers)
        assert response.status_code == 302

    ratings = Rating.objects.filter(assignment__in=mine).order_by("assignment__position")
    assert [r.values["correct_for"] for r in ratings] == [["15", "40", "female", "male"], ["female"]]
    assert all(r.attention_check_passed for r in ratings)
    done = client.get(reverse("raters:panel_done", args=[study.pk])).content.decode()
    assert study.completion_code in done
