"""Labels someone else made as a study's references (a study file's `references`): read from a scorer's scores of
the items' answers (only those the `where` keys select, outcomes mapped by `values`), and checked on load with
line and key. The judge report's use of them: tests/studies/test_auto_evaluator_judge.py."""

import textwrap

import pytest

from analysis.judge_references import reference_labels, references_key
from scoring.models import Score
from studies.study_files import export_study, load_study_text
from studies.study_yaml import StudyFileError
from tests.factories import AnswerFactory, AnswerSourceFactory, DatasetFactory, QuestionFactory

pytestmark = pytest.mark.django_db

STUDY = """\
format: 1
name: Referenced
questions: [{dataset: Questions}]
conditions: [{source: Model A}]
rubric: {name: BiasMedQA auto-evaluator, version: 1}
references:
- name: Released labels
  field: is_correct
  scorer: released
  values: {correct: 'True', wrong: 'False'}
  where: {label_source: auto_eval_gpt-3.5}
"""


@pytest.fixture
def answers():
    dataset = DatasetFactory(name="Questions")
    source = AnswerSourceFactory(name="Model A")
    return [AnswerFactory(question=QuestionFactory(dataset=dataset, external_id=f"q{n}"), source=source)
            for n in range(4)]  # fmt: skip


def released(answer, outcome: str, label_source: str = "auto_eval_gpt-3.5") -> None:
    Score.objects.create(answer=answer, scorer="released", version=1, outcome=outcome,
                         value={"label": "?", "label_source": label_source})  # fmt: skip


def problems_of(text: str) -> list[str]:
    with pytest.raises(StudyFileError) as raised:
        load_study_text(textwrap.dedent(text))
    return [str(problem) for problem in raised.value.problems]


def test_the_labels_are_the_selected_scores_outcomes_mapped_to_the_questions_options(answers):
    study = load_study_text(STUDY).study
    released(answers[0], "correct")
    released(answers[1], "wrong")
    released(answers[2], "correct", label_source="first_char_match")  # not the labels the reference names
    released(answers[3], "non_response")  # an outcome the reference does not map
    item_of = dict(study.items.values_list("answer_id", "id"))

    labels = reference_labels(study)

    assert sorted(labels.itertuples(index=False, name=None)) == sorted([
        (item_of[answers[0].pk], "Released labels", "is_correct", "True"),
        (item_of[answers[1].pk], "Released labels", "is_correct", "False"),
    ])  # fmt: skip


def test_new_scores_change_the_pages_cache_key(answers):
    study = load_study_text(STUDY).study
    before = references_key(study)
    released(answers[0], "correct")
    assert references_key(study) != before


def test_references_round_trip_through_export(answers):
    study = load_study_text(STUDY).study
    exported = export_study(study)
    assert "references:\n- name: Released labels\n  field: is_correct\n  scorer: released\n  version: 1\n" in exported
    assert load_study_text(exported).outcome == "unchanged"


def test_a_reference_must_answer_a_single_choice_question_with_its_options_from_a_known_scorer(answers):
    text = STUDY.replace("field: is_correct", "field: verdict").replace("scorer: released", "scorer: oracle")
    assert problems_of(text) == [
        "line 8, references[0].field: the rubric has no single-choice question 'verdict' (its single-choice "
        "questions: is_correct)",
        "line 9, references[0].scorer: no scorer 'oracle' at version 1",
    ]
    assert problems_of(STUDY.replace("wrong: 'False'", "wrong: 'Nope'")) == [
        "line 10, references[0].values.wrong: 'Nope' is not an option of 'is_correct' (its options: True, False, NR)"
    ]
    assert problems_of(STUDY.replace("label_source:", "label__source:")) == [
        "line 11, references[0].where.label__source: a key of a score's value is letters, digits and single underscores"
    ]
    assert problems_of(STUDY.replace("rubric: {name: BiasMedQA auto-evaluator, version: 1}", "rubric: null")) == [
        "line 6, references: references are compared with the judges on the study's rubric: give the study a "
        "rubric, or no references"
    ]
