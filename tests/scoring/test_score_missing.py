"""score_missing stores each answer's reading once per scorer version, and never touches stored scores."""

import pytest
from django.core.management import call_command

from datasets.models import Answer
from scoring import scorers
from scoring.models import Score
from scoring.services import score_missing
from tests.factories import AnswerFactory, AnswerSourceFactory, QuestionFactory

pytestmark = pytest.mark.django_db


def _answer(text, answer_idx="C", **kwargs):
    metadata = {"answer_idx": answer_idx, "options": dict.fromkeys("ABCDE", "x")} if answer_idx else {}
    return AnswerFactory(text=text, question=QuestionFactory(metadata=metadata), **kwargs)


def test_scores_each_answer_once_and_a_second_run_adds_nothing():
    correct, wrong, nr, refused = _answer("C"), _answer("B: no"), _answer("NR"), _answer("C", refusal=True)
    counts = score_missing(scorer="letter", answers=Answer.objects.all(), batch_size=3)
    assert counts == {
        "version": 2,
        "scored": 4,
        "skipped_no_key": 0,
        "no_reference_yet": 0,
        "correct": 1,
        "wrong": 1,
        "non_response": 2,
        "measured": 0,
        "missing": 0,
    }
    outcomes = dict(Score.objects.filter(scorer="letter", version=2).values_list("answer_id", "outcome"))
    assert outcomes == {correct.pk: "correct", wrong.pk: "wrong", nr.pk: "non_response", refused.pk: "non_response"}
    assert Score.objects.get(answer=wrong).value == {"letter": "B"}
    assert Score.objects.get(answer=nr).value == {"letter": None, "reason": "NR"}
    again = score_missing(scorer="letter", answers=Answer.objects.all())
    assert again["scored"] == 0
    assert Score.objects.count() == 4


def test_answers_whose_question_has_no_answer_idx_are_skipped_and_counted():
    _answer("C", answer_idx=None)
    _answer("C")
    counts = score_missing(scorer="letter", answers=Answer.objects.all(), batch_size=1)
    assert (counts["scored"], counts["skipped_no_key"]) == (1, 1)
    assert Score.objects.count() == 1


def test_an_optional_question_field_is_read_when_present_and_never_skips_an_answer():
    quoting = AnswerFactory(text="Clopidogrel", question=QuestionFactory(metadata={"answer_idx": "C", "options": {
        "A": "Aspirin", "B": "Warfarin", "C": "Clopidogrel"}}))  # fmt: skip
    without_options = AnswerFactory(text="Clopidogrel", question=QuestionFactory(metadata={"answer_idx": "C"}))
    counts = score_missing(scorer="letter", answers=Answer.objects.all())
    assert (counts["scored"], counts["skipped_no_key"], counts["correct"]) == (2, 0, 1)
    assert Score.objects.get(answer=quoting).value == {"letter": "C", "quoted": "Clopidogrel"}
    assert Score.objects.get(answer=without_options).value == {"letter": None, "reason": "no letter found"}


def test_only_the_given_answers_are_scored():
    source = AnswerSourceFactory(name="gpt-4-0613")
    mine = _answer("C", source=source)
    _answer("C")
    score_missing(scorer="letter", answers=Answer.objects.filter(source=source))
    assert list(Score.objects.values_list("answer_id", flat=True)) == [mine.pk]


def test_a_new_version_adds_scores_beside_the_old_ones(monkeypatch):
    answer = _answer("c")  # v1 reads only capitals: a non-response
    monkeypatch.delitem(scorers.SCORERS, ("letter", 2))  # as before v2 was registered
    score_missing(scorer="letter", answers=Answer.objects.all())
    old = Score.objects.get()

    monkeypatch.setitem(scorers.SCORERS, ("letter", 2), scorers.LETTER_V2)
    counts = score_missing(scorer="letter", answers=Answer.objects.all())
    assert (counts["version"], counts["correct"]) == (2, 1)
    assert dict(answer.scores.values_list("version", "outcome")) == {1: "non_response", 2: "correct"}
    old_again = Score.objects.get(pk=old.pk)
    assert (old_again.outcome, old_again.value, old_again.created_at) == (old.outcome, old.value, old.created_at)


def test_a_score_written_by_a_concurrent_run_is_kept_not_duplicated(monkeypatch):
    answer = _answer("B")

    def read_while_another_run_writes(text, refusal, question):
        # Another run stores its reading between our query and our insert.
        Score.objects.create(answer=answer, scorer="letter", version=2, outcome="wrong", value={"by": "other"})
        return scorers.read_letter_v2(text, refusal, question)

    racing = scorers.Scorer("letter", 2, "racing", ("answer_idx",), read_while_another_run_writes)
    monkeypatch.setitem(scorers.SCORERS, ("letter", 2), racing)
    score_missing(scorer="letter", answers=Answer.objects.all())
    assert answer.scores.get().value == {"by": "other"}


def test_the_command_prints_counts_and_filters_by_source_and_dataset(capsys):
    source = AnswerSourceFactory(name="gpt-4-0613")
    answer = _answer("C", source=source)
    _answer("B")
    call_command("score_answers", "--scorer", "letter", "--source", "gpt-4-0613",
                 "--dataset", answer.question.dataset.name)  # fmt: skip
    out = capsys.readouterr().out
    assert "Scorer letter v2" in out
    assert "Scored: 1 (correct 1, wrong 0, non-response 0; measured 0, missing 0)" in out
    assert Score.objects.count() == 1


def test_the_command_refuses_an_unknown_scorer():
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="known: letter"):
        call_command("score_answers", "--scorer", "nope")


def test_the_command_prints_measured_and_missing_for_a_numeric_scorer(capsys):
    chat = [{"token": " No", "logprob": -0.25, "top_logprobs": [{"token": " No", "logprob": -0.25}]}]
    read = AnswerFactory(text=" No.", response_metadata={"logprobs": chat})
    AnswerFactory(text=" No.", response_metadata={})  # a source without log-probabilities
    call_command("score_answers", "--scorer", "p_no")
    out = capsys.readouterr().out
    assert "Scorer p_no v1" in out
    assert "Scored: 2 (correct 0, wrong 0, non-response 0; measured 1, missing 1)" in out
    assert Score.objects.get(answer=read).number == pytest.approx(0.7788007830714049)
    assert Score.objects.get(number__isnull=True).value == {"reason": "no log-probabilities"}
