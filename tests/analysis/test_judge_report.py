"""A study's judge report (analysis/judge_report.py): `analyze --study` writes agreement.csv and
judge_assisted.csv from the study's results when people and a judge rated it, and the equity audit flags a judge
whose errors depend on the patient's race."""

import json
import random

import pandas as pd
import pytest
from django.core.management import call_command

from analysis.judge_agreement import AGREEMENT_COLUMNS, CONSISTENCY_COLUMNS, PLACE_COLUMNS
from analysis.judge_report import NOT_RANDOM, TABLE_ATTRIBUTES, judge_labels, rated_fields, slice_note
from analysis.results import results_table
from studies.judges import record_judge_reply
from studies.models import Judge
from studies.rubric_defaults import INDEPENDENT, PAIRWISE
from tests.factories import (
    AnswerFactory,
    AnswerSourceFactory,
    DatasetFactory,
    IndependentItemFactory,
    OnboardedRaterFactory,
    QuestionFactory,
    StudyFactory,
)
from tests.studies.test_exports import independent, rate

pytestmark = pytest.mark.django_db

CONTRACT_ASSISTED = ["study", "field", "level", "method", "n_human", "n_judge", "estimate", "ci_low", "ci_high"]


def hold_judge(study, name: str) -> Judge:
    source = AnswerSourceFactory(name=f"{name} model", base_url="http://127.0.0.1:9/v1", model_name=name)
    judge = Judge.objects.create(name=name, source=source, rubric_version=study.rubric_version,
                                 instructions="Rate the answer.", shown_fields=["question", "answers"])  # fmt: skip
    study.judges.add(judge)
    return judge


def values(bias: str) -> dict:
    return independent(bias, [] if bias == "no_bias" else ["failure_to_challenge"])


def judge_rates(judge, item, bias: str) -> None:
    reply = record_judge_reply(judge, item, 0, request={"messages": []}, raw_reply=json.dumps(values(bias)),
                               latency_ms=5)  # fmt: skip
    assert not reply.is_failure, reply.errors


@pytest.fixture
def judged_study():
    """60 items, half about Black and half about White patients; two physicians rate the first 40 alike; a judge
    rates all 60, agreeing with them on every White patient's item and on only about half of the Black ones."""
    rng = random.Random(7)
    study = StudyFactory(kind="independent", name="Judged study")
    dataset = DatasetFactory(name="Judged questions")
    source = AnswerSourceFactory(name="answering model")
    physicians = [OnboardedRaterFactory(pool="physician").rater_profile for _ in range(2)]
    judge = hold_judge(study, "Stand-in judge")
    for number in range(60):
        race = "Black" if number % 2 else "White"
        question = QuestionFactory(dataset=dataset, external_id=f"q{number}", levels={"race": race})
        item = IndependentItemFactory(study=study, answer=AnswerFactory(question=question, source=source))
        truth = "minor_bias" if rng.random() < 0.4 else "no_bias"
        if number < 40:
            for physician in physicians:
                rate(item, physician, values(truth))
        wrong = race == "Black" and rng.random() < 0.5
        judge_rates(judge, item, ("no_bias" if truth != "no_bias" else "severe_bias") if wrong else truth)
    return study


def test_rated_fields_are_the_single_valued_questions_with_their_positive_options():
    assert rated_fields(INDEPENDENT) == {"bias_presence": ("minor_bias", "severe_bias", "yes")}
    assert rated_fields(PAIRWISE) == {"preference": ()}  # no positive label: agreement only


def test_labels_turn_a_swapped_position_back_to_the_items_answer():
    results = pd.DataFrame(
        {
            "kind": ["human", "judge", "judge", "scorer"],
            "field": ["preference", "preference", "preference", "letter"],
            "value": ["answer_1", "answer_2", "tie", "correct"],
            "swapped": [False, True, True, None],
            "attention_check": [False, False, False, None],
            "item": [1, 1, 2, None],
            "who": ["P-1", "judge", "judge", "letter v1"],
            "pool": ["physician", "", "", ""],
            "levels": ['{"race": "Black"}', '{"race": "Black"}', "{}", "{}"],
        }
    )
    labels, factors = judge_labels(results, ["preference"])
    assert factors == ("race",)
    assert labels[["item", "rater", "rater_kind", "value", "race"]].values.tolist() == [
        [1, "P-1", "human", "answer_1", "Black"],
        [1, "judge", "judge", "answer_1", "Black"],  # shown second, so it meant the item's answer 1
        [2, "judge", "judge", "tie", ""],
    ]


def test_analyze_study_writes_agreement_and_judge_assisted_tables(judged_study, tmp_path):
    call_command("analyze", "--study", str(judged_study.pk), "--out", str(tmp_path))

    agreement = pd.read_csv(tmp_path / "agreement.csv", keep_default_na=False)
    assert list(agreement.columns) == AGREEMENT_COLUMNS
    judge_rows = agreement[(agreement["rater_a"] == "Stand-in judge") & (agreement["rater_b"] == "Physician")]
    overall = judge_rows[(judge_rows["level"] == "") & (judge_rows["metric"] == "percent_agreement")]
    white = judge_rows[(judge_rows["level"] == "race=White") & (judge_rows["metric"] == "percent_agreement")]
    black = judge_rows[(judge_rows["level"] == "race=Black") & (judge_rows["metric"] == "percent_agreement")]
    assert overall["n_items"].item() == 40 and white["estimate"].item() == 1.0
    assert float(black["estimate"].item()) < 0.8
    assert set(judge_rows.loc[judge_rows["level"] != "", "flag"]) == {"True"}  # the group-dependent error
    people = agreement[(agreement["rater_a"] == "Physician") & (agreement["level"] == "")]
    assert people.set_index("metric").loc["percent_agreement", "estimate"] == 1.0

    assisted = pd.read_csv(tmp_path / "judge_assisted.csv", keep_default_na=False)
    assert list(assisted.columns)[: len(CONTRACT_ASSISTED)] == CONTRACT_ASSISTED
    everyone = assisted[assisted["level"] == ""].set_index("method")
    assert set(everyone.index) == {"human_only", "judge_only", "ppi"}
    assert everyone.loc["human_only", "n_human"] == 40 and everyone.loc["judge_only", "n_judge"] == 60
    people_rate = float(everyone.loc["human_only", "estimate"])
    results = results_table(judged_study, kinds=("human",))
    rated = results[results["field"] == "bias_presence"].drop_duplicates("item")
    assert people_rate == pytest.approx((rated["value"] != "no_bias").mean())

    place = pd.read_csv(tmp_path / "judge_place.csv", keep_default_na=False)
    assert list(place.columns) == PLACE_COLUMNS
    row = place[place["metric"] == "percent_agreement"].iloc[0]
    # The two physicians agree on every item, so each matches the other's label throughout; the judge does not.
    assert (row["judge"], row["pool"], row["n_people"], row["people_mean"]) == ("Stand-in judge", "Physician", 2, 1.0)
    assert row["judge_score"] < 0.9 and row["rank"] == 3 and row["share_matched"] == 0.0
    consistency = pd.read_csv(tmp_path / "judge_consistency.csv", keep_default_na=False)
    assert list(consistency.columns) == CONSISTENCY_COLUMNS and consistency.empty  # one reply per item, one order


def test_no_judge_tables_without_judge_ratings(tmp_path):
    study = StudyFactory(kind="independent", name="People only")
    item = IndependentItemFactory(study=study)
    rate(item, OnboardedRaterFactory(pool="physician").rater_profile, independent("no_bias"))
    call_command("analyze", "--study", str(study.pk), "--out", str(tmp_path))
    assert not [path.name for path in tmp_path.glob("*.csv") if path.stem in TABLE_ATTRIBUTES]


def test_judge_assisted_rows_say_whether_peoples_items_were_a_random_slice(judged_study, tmp_path):
    call_command("analyze", "--study", str(judged_study.pk), "--out", str(tmp_path / "unplanned"))
    assisted = pd.read_csv(tmp_path / "unplanned" / "judge_assisted.csv", keep_default_na=False)
    assert len(assisted) and all(NOT_RANDOM in note for note in assisted["note"])

    judged_study.definition = {"human_slice": {"share": 0.2, "seed": 7}}  # as a study file states it
    judged_study.save(update_fields=["definition"])
    call_command("analyze", "--study", str(judged_study.pk), "--out", str(tmp_path / "planned"))
    assisted = pd.read_csv(tmp_path / "planned" / "judge_assisted.csv", keep_default_na=False)
    assert len(assisted) and all("random slice of 20%, seed 7" in note for note in assisted["note"])
    assert not any(NOT_RANDOM in note for note in assisted["note"])


def test_the_slice_note_names_the_share_or_the_number_of_items():
    assert slice_note({"share": 0.2, "seed": 7}) == "random slice of 20%, seed 7"
    assert slice_note({"share": 0.125, "seed": 0}) == "random slice of 12.5%, seed 0"
    assert slice_note({"items": 500, "seed": 3}) == "random slice of 500 items, seed 3"
    assert slice_note(None) == NOT_RANDOM == "people's items were not drawn at random: PPI's interval assumes they were"
