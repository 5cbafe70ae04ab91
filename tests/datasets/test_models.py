"""Constraints and helpers of the dataset models."""

import pytest
from django.db import IntegrityError, transaction

from datasets.models import AnswerSource, Question, settings_fingerprint, text_fingerprint
from tests.factories import (
    AnswerFactory,
    AnswerSourceFactory,
    CounterfactualPairFactory,
    DatasetFactory,
    QuestionFactory,
)

TEXT = "What can I take for back pain?"


@pytest.mark.django_db
def test_question_text_is_unique_within_a_dataset():
    question = QuestionFactory(text=TEXT)

    with pytest.raises(IntegrityError), transaction.atomic():
        QuestionFactory(dataset=question.dataset, text=f"  {TEXT}\n")

    assert Question.objects.count() == 1


@pytest.mark.django_db
def test_questions_with_a_base_or_levels_may_repeat_a_text_under_other_ids():
    """MEDIC's restyled samples (and desires) repeat texts: each record stays a question, known by its id."""
    base = QuestionFactory(text=TEXT)
    QuestionFactory(dataset=base.dataset, text=TEXT, base=base, levels={"style": "a"})
    QuestionFactory(dataset=base.dataset, text=TEXT, base=base, levels={"style": "b"})
    QuestionFactory(dataset=base.dataset, text=TEXT, levels={"step": "desire"})

    assert Question.objects.filter(dataset=base.dataset, text=TEXT).count() == 4


@pytest.mark.django_db
def test_the_same_question_text_is_fine_in_another_dataset():
    QuestionFactory(text=TEXT)

    QuestionFactory(text=TEXT)

    assert Question.objects.filter(text=TEXT).count() == 2


@pytest.mark.django_db
def test_question_external_id_is_unique_within_a_dataset():
    question = QuestionFactory(external_id="7")

    with pytest.raises(IntegrityError), transaction.atomic():
        QuestionFactory(dataset=question.dataset, external_id="7")
    QuestionFactory(external_id="7")

    assert Question.objects.filter(external_id="7").count() == 2


@pytest.mark.django_db
def test_saving_a_new_text_updates_the_text_hash():
    question = QuestionFactory(text=TEXT)

    question.text = "How long does a cough last?"
    question.save(update_fields=["text"])

    question.refresh_from_db()
    assert question.text_hash == text_fingerprint("How long does a cough last?")
    assert question.text_hash != text_fingerprint(TEXT)


@pytest.mark.django_db
def test_answer_is_unique_per_question_source_and_settings_in_any_key_order():
    answer = AnswerFactory(parameters={"temperature": 0, "max_tokens": 150})

    with pytest.raises(IntegrityError), transaction.atomic():
        AnswerFactory(question=answer.question, source=answer.source, parameters={"max_tokens": 150, "temperature": 0})
    other_settings = AnswerFactory(question=answer.question, source=answer.source, parameters={"temperature": 1})
    other_source = AnswerFactory(question=answer.question, parameters=answer.parameters)

    assert other_settings.settings_hash != answer.settings_hash
    assert other_source.settings_hash == answer.settings_hash
    assert answer.question.answers.count() == 3


def test_settings_fingerprint_ignores_key_order_and_treats_no_settings_as_empty():
    assert settings_fingerprint({"a": 1, "b": {"y": 2, "x": 1}}) == settings_fingerprint(
        {"b": {"x": 1, "y": 2}, "a": 1}
    )
    assert settings_fingerprint({}) == settings_fingerprint(None)
    assert settings_fingerprint({"temperature": 0}) != settings_fingerprint({"temperature": 0.5})


@pytest.mark.django_db
def test_counterfactual_pair_rejects_the_same_question_on_both_sides():
    question = QuestionFactory()

    with pytest.raises(IntegrityError), transaction.atomic():
        CounterfactualPairFactory(dataset=question.dataset, question_1=question, question_2=question)


@pytest.mark.django_db
def test_counterfactual_pair_is_unique_per_ordered_questions():
    pair = CounterfactualPairFactory()

    with pytest.raises(IntegrityError), transaction.atomic():
        CounterfactualPairFactory(dataset=pair.dataset, question_1=pair.question_1, question_2=pair.question_2)
    reversed_pair = CounterfactualPairFactory(
        dataset=pair.dataset, question_1=pair.question_2, question_2=pair.question_1
    )

    assert reversed_pair.pk != pair.pk


def test_answer_source_export_name_replaces_spaces_with_dashes():
    assert AnswerSource(name="Med-PaLM 2").export_name == "Med-PaLM-2"
    assert AnswerSource(name="GPT 4 turbo (May)").export_name == "GPT-4-turbo-(May)"
    assert AnswerSource(name="Physicians").export_name == "Physicians"


@pytest.mark.django_db
def test_names_of_datasets_and_sources_are_unique():
    DatasetFactory(name="Q-Pain")
    AnswerSourceFactory(name="Med-PaLM 2")

    with pytest.raises(IntegrityError), transaction.atomic():
        DatasetFactory(name="Q-Pain")
    with pytest.raises(IntegrityError), transaction.atomic():
        AnswerSourceFactory(name="Med-PaLM 2")
