"""Scorers that read an answer and its reference answer, in batches: word_overlap v1 (the stand-in for
ContextSRH's embedding similarity) against the same source and condition's answer to the base question."""

import dataclasses

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from datasets.models import Answer
from scoring import scorers
from scoring.models import Score
from scoring.services import score_missing
from tests.factories import AnswerFactory, AnswerSourceFactory, DatasetFactory, QuestionFactory, StudyFactory

pytestmark = pytest.mark.django_db

# Two conditions: the same source's generation settings but for the condition (as a recipe's settings differ).
CONDITIONS = {
    "plain": {"model": "m", "temperature": 0},
    "education": {"model": "m", "temperature": 0, "condition": {"mitigation": "education"}},
}
# Base answers, and context answers to variants of their base question; each text ends with its source and
# condition, so a reference of another source or condition shares fewer words and gives another overlap.
BASE_TEXTS = {"b1": "Rest and drink fluids.", "b2": "Use a condom."}
CONTEXT_TEXTS = {"v1a": "REST and see a doctor!", "v1b": "Drink fluids.", "v2a": "Use a condom every time."}
# By hand, with the two tag words (source, condition) shared:
#   v1a {rest, and, see, a, doctor} + 2 tags vs b1 {rest, and, drink, fluids} + 2 tags: 4 shared of 9 words
#   v1b {drink, fluids} + 2 tags vs b1: 4 shared of 6 words
#   v2a {use, a, condom, every, time} + 2 tags vs b2 {use, a, condom} + 2 tags: 5 shared of 7 words
EXPECTED = {"v1a": (4, 9), "v1b": (4, 6), "v2a": (5, 7)}


def _text(text, source, condition):
    return f"{text} {source.name} {condition}"


@pytest.fixture
def context_study():
    """Base questions b1, b2 and their context variants, answered by two sources under two conditions."""
    dataset = DatasetFactory(name="ContextSRH stand-in")
    base = {key: QuestionFactory(dataset=dataset, external_id=key) for key in BASE_TEXTS}
    variants = {
        "v1a": QuestionFactory(dataset=dataset, external_id="v1a", base=base["b1"], levels={"context": "age 15"}),
        "v1b": QuestionFactory(dataset=dataset, external_id="v1b", base=base["b1"], levels={"context": "female"}),
        "v2a": QuestionFactory(dataset=dataset, external_id="v2a", base=base["b2"], levels={"context": "Idaho"}),
    }
    sources = [AnswerSourceFactory(name="alpha"), AnswerSourceFactory(name="beta")]
    answers = {}
    for source in sources:
        for condition, parameters in CONDITIONS.items():
            for key, text in {**BASE_TEXTS, **CONTEXT_TEXTS}.items():
                question = base.get(key) or variants[key]
                answers[key, source.name, condition] = AnswerFactory(
                    question=question, source=source, parameters=parameters, text=_text(text, source, condition)
                )
    return {"base": base, "variants": variants, "sources": sources, "answers": answers}


def test_every_context_answer_is_read_against_its_source_and_conditions_base_answer(context_study):
    answers = context_study["answers"]
    # Pages of 7 mix sources and conditions (answers are made 5 per source and condition).
    counts = score_missing(scorer="word_overlap", answers=Answer.objects.all(), batch_size=7)

    assert (counts["version"], counts["scored"], counts["measured"], counts["missing"]) == (1, 20, 12, 8)
    assert (counts["skipped_no_key"], counts["no_reference_yet"]) == (0, 0)
    for (key, source, condition), answer in answers.items():
        score = Score.objects.get(answer=answer, scorer="word_overlap", version=1)
        if key in BASE_TEXTS:  # a base answer has nothing to be compared with
            assert (score.outcome, score.number, score.value) == ("missing", None, {"reason": "the question has "
                                                                                     "no base question"})  # fmt: skip
            continue
        shared, every = EXPECTED[key]
        reference = answers["b1" if key.startswith("v1") else "b2", source, condition]
        assert score.outcome == "measured"
        assert score.number == pytest.approx(shared / every)
        assert score.value == {"shared_words": shared, "all_words": every, "reference_answer": reference.pk}


def test_a_reference_of_another_source_or_condition_is_never_used_and_the_answer_waits_for_its_own(context_study):
    base = context_study["base"]["b1"]
    gamma = AnswerSourceFactory(name="gamma")
    late = QuestionFactory(dataset=base.dataset, external_id="v1c", base=base, levels={"context": "male"})
    # gamma has a base answer only under "plain"; its "education" context answer has none of its own, while
    # alpha's and beta's "education" base answers and gamma's "plain" one are there.
    AnswerFactory(question=base, source=gamma, parameters=CONDITIONS["plain"], text="Rest gamma plain")
    waiting = AnswerFactory(question=late, source=gamma, parameters=CONDITIONS["education"], text="Rest gamma")

    counts = score_missing(scorer="word_overlap", answers=Answer.objects.filter(pk=waiting.pk))
    assert (counts["scored"], counts["no_reference_yet"]) == (0, 1)
    assert not waiting.scores.exists()  # not stored: a stored `missing` would be final for this version

    own = AnswerFactory(question=base, source=gamma, parameters=CONDITIONS["education"], text="Rest and sleep")
    counts = score_missing(scorer="word_overlap", answers=Answer.objects.filter(pk=waiting.pk))
    assert (counts["scored"], counts["measured"], counts["no_reference_yet"]) == (1, 1, 0)
    score = waiting.scores.get()
    # {rest, gamma} vs {rest, and, sleep}: 1 shared of 4 words
    assert (score.number, score.value) == (0.25, {"shared_words": 1, "all_words": 4, "reference_answer": own.pk})


def test_batches_of_the_given_size_each_find_their_references_in_one_query(context_study, monkeypatch):
    batches = []

    def counting(pairs):
        batches.append(len(pairs))
        return scorers.read_word_overlap_v1(pairs)

    counted = dataclasses.replace(scorers.WORD_OVERLAP_V1, read_batch=counting)
    monkeypatch.setitem(scorers.SCORERS, ("word_overlap", 1), counted)
    queries = []

    def record(execute, sql, params, many, context):
        queries.append(sql)
        return execute(sql, params, many, context)

    # An execute wrapper, not CaptureQueriesContext: the runner resets Django's query log on every page.
    with connection.execute_wrapper(record):
        score_missing(scorer="word_overlap", answers=Answer.objects.all(), batch_size=2)

    # 20 answers in pages of 2; ids ascend per source and condition as b1 b2 v1a v1b v2a, so the pages hold
    # base (B) and context (C) answers as BB CC CB BC CC BB CC CB BC CC. The scorer reads each page's context
    # answers at once; a page of base answers alone gives it nothing to read and looks up no reference.
    assert batches == [2, 1, 1, 2, 2, 1, 1, 2]
    lookups = [sql for sql in queries if '"settings_hash" IN' in sql]
    assert len(lookups) == 8
    # Per page: its ids, its stored scores, its rows, its insert; then the 8 lookups and the empty last page.
    assert len(queries) == 10 * 4 + 8 + 1


def test_a_re_run_adds_nothing_and_stored_scores_are_kept(context_study):
    score_missing(scorer="word_overlap", answers=Answer.objects.all(), batch_size=4)
    before = list(Score.objects.order_by("pk").values_list("pk", "answer_id", "outcome", "number", "value"))
    counts = score_missing(scorer="word_overlap", answers=Answer.objects.all(), batch_size=4)
    assert (counts["scored"], counts["no_reference_yet"]) == (0, 0)
    assert list(Score.objects.order_by("pk").values_list("pk", "answer_id", "outcome", "number", "value")) == before


def test_the_scorers_own_batch_size_is_used_unless_one_is_given(context_study, monkeypatch):
    batches = []

    def counting(pairs):
        batches.append(len(pairs))
        return scorers.read_word_overlap_v1(pairs)

    small = dataclasses.replace(scorers.WORD_OVERLAP_V1, read_batch=counting, batch_size=10)
    monkeypatch.setitem(scorers.SCORERS, ("word_overlap", 1), small)
    score_missing(scorer="word_overlap", answers=Answer.objects.all())
    assert batches == [6, 6]  # two pages of 10 answers, each with 4 base and 6 context answers
    assert scorers.WORD_OVERLAP_V1.batch_size == 64 and scorers.LETTER_V2.batch_size == 2000


def test_an_answer_or_reference_without_words_is_missing_with_the_reason():
    base = QuestionFactory()
    source = AnswerSourceFactory()
    reference = AnswerFactory(question=base, source=source, text="...", refusal=True)
    silent = AnswerFactory(question=QuestionFactory(base=base), source=source, text="")
    spoken = AnswerFactory(question=QuestionFactory(base=base), source=source, text="I cannot help with that.")
    score_missing(scorer="word_overlap", answers=Answer.objects.filter(pk__in=[silent.pk, spoken.pk]))
    assert silent.scores.get().value == {"reason": "the answer has no words", "reference_answer": reference.pk}
    assert spoken.scores.get().value == {"reason": "the reference answer has no words",
                                         "reference_answer": reference.pk}  # fmt: skip
    assert set(Score.objects.values_list("outcome", flat=True)) == {"missing"}


def test_the_command_scores_a_studys_answers_and_prints_the_answers_waiting_for_a_reference(context_study, capsys):
    study = StudyFactory()
    answers = context_study["answers"]
    mine = [answers[key, "alpha", "plain"] for key in ("b1", "v1a", "v2a")]
    study.answers.add(*mine, through_defaults={"via": "imported"})
    orphan = AnswerFactory(question=QuestionFactory(base=context_study["base"]["b1"]), text="alone")
    study.answers.add(orphan, through_defaults={"via": "imported"})

    call_command("score_answers", "--scorer", "word_overlap", "--study", str(study.pk), "--batch-size", "2")
    out = capsys.readouterr().out
    assert "Scorer word_overlap v1" in out
    assert "Scored: 3 (correct 0, wrong 0, non-response 0; measured 2, missing 1)" in out
    assert "Not scored yet (no reference answer yet; scored by a later run once it exists): 1" in out
    assert set(Score.objects.values_list("answer_id", flat=True)) == {answer.pk for answer in mine}


def test_the_command_refuses_an_unknown_study_and_a_batch_size_below_one():
    with pytest.raises(CommandError, match="no study with id 999999"):
        call_command("score_answers", "--scorer", "word_overlap", "--study", "999999")
    with pytest.raises(CommandError, match="at least 1"):
        call_command("score_answers", "--scorer", "letter", "--batch-size", "0")


def test_a_one_answer_scorer_prints_no_reference_line(capsys):
    call_command("score_answers", "--scorer", "letter")
    assert "Not scored yet" not in capsys.readouterr().out
