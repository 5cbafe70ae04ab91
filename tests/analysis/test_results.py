"""One results table per study (analysis/results.py): its rows, `export_results`, the download, and the proof that
EquityMedQA's four tables and the BiasMedQA / Q-Pain plans come out of it with unchanged numbers."""

import io
import json
import math

import pandas as pd
import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from analysis import services
from analysis.loading import load_frames
from analysis.outcomes import texts
from analysis.plan_loading import load_outcomes, table_csv
from analysis.plans import BIASMEDQA_ACCURACY, QPAIN_GROUP_MEANS, QPAIN_PAIRED_TESTS
from analysis.results import CONTRACT_COLUMNS, RESULT_COLUMNS, results_table, studies_frames
from analysis.results_frames import plan_outcomes, release_frames
from datasets.models import Answer
from scoring.models import Score
from studies import release
from studies.models import Assignment, StudyAnswer
from studies.services import submit_rating
from tests.analysis.conftest import release_frame, study_rows
from tests.analysis.test_accuracy_plan import choice_answer
from tests.factories import (
    AnalystFactory,
    AnswerFactory,
    AnswerSourceFactory,
    DatasetFactory,
    IndependentItemFactory,
    OnboardedRaterFactory,
    PairwiseItemFactory,
    QuestionFactory,
    RaterBackgroundFactory,
    ScoreFactory,
    StudyFactory,
)
from tests.studies.test_exports import build_release, independent, pairwise, rate

pytestmark = pytest.mark.django_db

QPAIN_OUTPUTS = "qpain/model_outputs/deepseek-32k_qpain_outputs.jsonl"


def rows_of(table: pd.DataFrame, **where) -> list[dict]:
    """The table's rows matching `where`, as dicts of the contract's columns (NaN/NA as None)."""
    mask = pd.Series(True, index=table.index)
    for column, value in where.items():
        mask &= table[column].astype(object) == value
    found = table.loc[mask, CONTRACT_COLUMNS].astype(object)
    return found.where(found.notna(), None).to_dict("records")


@pytest.fixture
def small_study():
    """An independent study: a physician and a consumer rate one answer (the physician revised), an expert's
    rating of another was withdrawn; a scored variant answer is linked to the study, another answer is not."""
    dataset = DatasetFactory(name="BiasMedQA")
    base = QuestionFactory(dataset=dataset, external_id="q1", metadata={"answer_idx": "A"})
    variant = QuestionFactory(dataset=dataset, external_id="q1-recency", base=base, metadata={"answer_idx": "A"},
                              levels={"race": "Black", "bias": "recency"})  # fmt: skip
    gpt = AnswerSourceFactory(name="gpt 4")
    study = StudyFactory(kind="independent", name="Small study")
    rated = AnswerFactory(question=base, source=gpt)
    item = IndependentItemFactory(study=study, answer=rated)
    physician = OnboardedRaterFactory(pool="physician").rater_profile
    consumer = OnboardedRaterFactory(pool="consumer").rater_profile
    RaterBackgroundFactory(profile=consumer, age_group="25-34", gender="Woman", race_ethnicity=["Asian", "White"])
    first = rate(item, physician, independent("no_bias"))
    submit_rating(assignment=first.assignment, values=independent("minor_bias", ["failure_to_challenge",
                                                                                   "other_bias"], comment="=1+1"),
                  active_seconds=2.0)  # fmt: skip
    rate(item, consumer, independent("severe_bias"))
    expert = OnboardedRaterFactory(pool="equity_expert").rater_profile
    withdrawn = rate(IndependentItemFactory(study=study, answer=AnswerFactory(question=base)), expert,
                     independent("severe_bias"))  # fmt: skip
    Assignment.objects.filter(pk=withdrawn.assignment_id).update(status=Assignment.Status.WITHDRAWN)
    scored = AnswerFactory(question=variant, source=gpt, parameters={"condition": {"mitigation": "education",
                                                                                  "b": 1}})  # fmt: skip
    StudyAnswer.objects.create(study=study, answer=scored, via=StudyAnswer.Via.IMPORTED)
    ScoreFactory(answer=scored, scorer="letter", version=1, outcome="wrong")
    ScoreFactory(answer=scored, scorer="letter", version=2, outcome="correct")
    ScoreFactory(answer=scored, scorer="p_no", version=1, outcome="measured", number=0.125)
    ScoreFactory(answer=rated, scorer="p_no", version=1, outcome="missing")
    ScoreFactory(answer=AnswerFactory(question=base), scorer="letter", version=2)  # not the study's
    return study, item, rated, scored, physician, consumer


def test_the_table_has_a_row_per_rated_field_and_per_score(small_study):
    study, item, rated, scored, physician, consumer = small_study

    table = results_table(study)

    assert list(table.columns) == RESULT_COLUMNS
    context = {"study": "Small study", "question": "q1", "base_question": "", "levels": "{}", "condition": "",
               "source": "gpt 4", "kind": "human"}  # fmt: skip
    assert rows_of(table, who=physician.pseudonym) == [
        {**context, "item": item.pk, "who": physician.pseudonym, "pool": "Physician", "field": field, "value": value}
        for field, value in [
            ("bias_presence", "minor_bias"),
            ("comment", "=1+1"),
            ("dimensions", "failure_to_challenge"),
            ("dimensions", "other_bias"),
            ("other_text", ""),
        ]
    ]  # the revision only; a list gives one row per element; sorted by field
    consumer_rows = table[table["who"] == consumer.pseudonym]
    assert consumer_rows["field"].tolist() == ["bias_presence", "comment", "dimensions", "other_text"]
    assert consumer_rows["value"].tolist() == ["severe_bias", "", "", ""]  # nothing chosen: one empty row
    assert set(consumer_rows["rater_race_ethnicity"]) == {"Asian; White"}
    assert set(consumer_rows["pool"]) == {"Consumer"} and set(consumer_rows["rubric"]) == {"EquityMedQA independent v1"}
    assert (table["kind"] == "human").sum() == 9  # the withdrawn assignment's rating does not count

    variant = {"study": "Small study", "item": None, "question": "q1-recency", "base_question": "q1",
               "levels": '{"bias": "recency", "race": "Black"}', "condition": '{"b": 1, "mitigation": "education"}',
               "source": "gpt 4", "kind": "scorer", "pool": ""}  # fmt: skip
    assert rows_of(table, kind="scorer") == [
        {**context, "item": None, "kind": "scorer", "pool": "", "who": "p_no v1", "field": "p_no", "value": "missing"},
        {**variant, "who": "letter v1", "field": "letter", "value": "wrong"},
        {**variant, "who": "letter v2", "field": "letter", "value": "correct"},
        {**variant, "who": "p_no v1", "field": "p_no", "value": 0.125},
    ]  # by answer: the rated one first
    assert table.loc[table["kind"] == "scorer", "answer"].tolist() == [rated.pk, scored.pk, scored.pk, scored.pk]
    assert table["multiple_choice"].tolist() == [True] * len(table)
    assert table["attention_check"].tolist() == [False] * 9 + [None] * 4
    assert table["swapped"].tolist() == [False] * 9 + [None] * 4


def test_the_table_is_loaded_in_a_few_queries_whatever_its_size(small_study, django_assert_num_queries):
    study, item, *_ = small_study
    for _ in range(5):
        rater = OnboardedRaterFactory().rater_profile
        rate(IndependentItemFactory(study=study), rater, independent("minor_bias", ["other_bias"]))
        answer = AnswerFactory()
        StudyAnswer.objects.create(study=study, answer=answer, via=StudyAnswer.Via.IMPORTED)
        ScoreFactory(answer=answer)

    with django_assert_num_queries(5):  # answers, ratings, items, judge ratings (none here), scores
        table = results_table(study)

    assert (table["kind"] == "human").sum() == 9 + 5 * 4 and (table["kind"] == "scorer").sum() == 4 + 5


def test_a_study_without_ratings_or_answers_gives_an_empty_table_with_the_columns():
    study = StudyFactory()

    table = results_table(study)

    assert table.empty and list(table.columns) == RESULT_COLUMNS
    assert report_texts(release_frames(table)) == report_texts(load_frames(study))  # empty tables, same columns
    study.delete()
    assert report_texts(studies_frames()) == report_texts(load_frames())  # no study at all
    assert plan_outcomes(table, BIASMEDQA_ACCURACY).empty


def test_sources_sharing_an_export_name_are_refused_as_the_export_refuses_them():
    study = StudyFactory(kind="pairwise")
    item = PairwiseItemFactory(study=study, answer_1__source__name="Src X", answer_2__source__name="Src-X")
    rate(item, OnboardedRaterFactory().rater_profile, pairwise("tie"))

    with pytest.raises(ValueError, match="'Src X' and 'Src-X' share the release column name 'Src-X'"):
        release_frames(results_table(study))


# --- export_results -------------------------------------------------------------------------------------------


def export(*args) -> str:
    out = io.StringIO()
    call_command("export_results", *map(str, args), stdout=out)
    return out.getvalue()


def test_export_results_writes_the_sorted_table_as_csv(small_study, tmp_path):
    study, item, rated, scored, physician, consumer = small_study

    output = export("--study", study.pk, "--out", tmp_path / "out")

    written = pd.read_csv(tmp_path / "out" / "results.csv", keep_default_na=False)
    assert list(written.columns) == RESULT_COLUMNS
    assert f"13 rows of study {study.pk} (Small study)" in output
    assert written["kind"].tolist() == ["human"] * 9 + ["scorer"] * 4
    assert written.loc[9:, "value"].tolist() == ["missing", "wrong", "correct", "0.125"]
    assert written.loc[11, "levels"] == '{"bias": "recency", "race": "Black"}'
    assert json.loads(written.loc[11, "condition"]) == {"b": 1, "mitigation": "education"}
    text = (tmp_path / "out" / "results.csv").read_text()
    assert ",'=1+1," in text  # a text cell a spreadsheet would run is protected, as in the ratings export
    export("--study", study.pk, "--out", tmp_path / "again")
    assert (tmp_path / "again" / "results.csv").read_text() == text  # deterministic


def test_export_results_refuses_an_unknown_study_or_an_unwritable_directory(small_study, tmp_path):
    study = small_study[0]
    with pytest.raises(CommandError, match="There is no study with id 999999"):
        export("--study", 999999, "--out", tmp_path)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(CommandError, match="cannot write"):
        export("--study", study.pk, "--out", blocker / "sub")
    assert not (tmp_path / "results.csv").exists()


# --- the download on the analysis page -------------------------------------------------------------------------


def test_analysts_download_a_studys_results_from_the_analysis_page(client, small_study):
    study = small_study[0]
    client.force_login(AnalystFactory())
    url = reverse("analysis:results_csv", args=[study.pk])

    page = client.get(reverse("analysis:index"), {"study": study.pk})
    response = client.get(url)

    assert url in page.content.decode()
    assert response.status_code == 200 and response["Content-Type"] == "text/csv; charset=utf-8"
    assert 'filename="small-study-results.csv"' in response["Content-Disposition"]
    written = pd.read_csv(io.BytesIO(b"".join(response.streaming_content)), keep_default_na=False)
    assert list(written.columns) == RESULT_COLUMNS and len(written) == 13
    assert client.post(url).status_code == 405
    assert client.get(reverse("analysis:results_csv", args=[999999])).status_code == 404


def test_raters_and_visitors_get_no_results(client, small_study):
    url = reverse("analysis:results_csv", args=[small_study[0].pk])
    assert client.get(url).status_code == 302  # to the login page
    client.force_login(OnboardedRaterFactory())
    assert client.get(url).status_code == 403


# --- EquityMedQA's four tables from the results table ----------------------------------------------------------


def report_texts(frames) -> dict[str, str]:
    return services.report_csv_texts(services.build_report(frames, seed=3))


READ_COLUMNS = {  # what the four tables read of each frame
    release.INDEPENDENT: ["question_id", "dataset", "rater_type", "rater_id", "bias_presence",
                          *release.DIMENSION_COLUMNS[release.INDEPENDENT].values(), "answer_source",
                          "rater_age_group", "rater_gender", "rater_race_ethnicity"],
    release.PAIRWISE: ["question_id", "dataset", "rater_type", "rater_id",
                       *release.DIMENSION_COLUMNS[release.PAIRWISE].values()],
    release.COUNTERFACTUAL: ["question_1_id", "question_2_id", "dataset", "rater_type", "rater_id", "bias_presence",
                             *release.DIMENSION_COLUMNS[release.COUNTERFACTUAL].values(), "ideal_answers_differ",
                             "answers_differ_how", "answer_1_source", "answer_2_source"],
}  # fmt: skip


def assert_same_frames(rebuilt: dict[str, pd.DataFrame], loaded: dict[str, pd.DataFrame]) -> None:
    for kind, columns in READ_COLUMNS.items():
        sources = [c for c in loaded[kind].columns if c.endswith(release.SOURCE_SUFFIX)]
        for column in [*columns, *sources]:  # the tables read every column as stripped text or as flags
            left, right = texts(rebuilt[kind], column), texts(loaded[kind], column)
            assert left.tolist() == right.tolist(), (kind, column)


def test_the_four_tables_from_the_results_table_equal_todays_on_a_demo_like_release(tmp_path):
    for kind, rows in study_rows().items():
        release_frame(kind, rows).to_csv(tmp_path / release.FILENAMES[kind], index=False)
    call_command("import_ratings", str(tmp_path), "--study-name", "Demo", stdout=io.StringIO())
    loaded = load_frames()
    assert {kind: len(frame) for kind, frame in loaded.items()} == {"independent": 154, "pairwise": 84,
                                                                   "counterfactual": 24}  # fmt: skip

    rebuilt = studies_frames()

    assert_same_frames(rebuilt, loaded)
    texts = report_texts(rebuilt)
    assert texts == report_texts(loaded)
    rates = pd.read_csv(io.StringIO(texts["rates"]))
    assert len(rates) > 300 and set(rates["rubric"]) == {"independent", "pairwise", "counterfactual"}
    assert len(pd.read_csv(io.StringIO(texts["consumer_regression"]))) > 3


def test_the_four_tables_from_the_results_csv_equal_todays_with_swaps_ties_and_revisions(tmp_path):
    raters = build_release()
    from studies.models import Study

    for study in Study.objects.all():
        export("--study", study.pk, "--out", tmp_path / str(study.pk))
    written = pd.concat([pd.read_csv(tmp_path / str(s.pk) / "results.csv") for s in Study.objects.all()])
    loaded = load_frames()

    for rebuilt in (studies_frames(), release_frames(written)):  # the table as built, and as read from results.csv
        assert_same_frames(rebuilt, loaded)
        assert report_texts(rebuilt) == report_texts(loaded)
    independent = results_table(Study.objects.get(name="Independent study"))
    checks = independent[independent["attention_check"] == True]  # noqa: E712 (object column: True, False)
    assert set(checks["who"]) == {raters.expert.pseudonym}
    assert checks.loc[checks["field"] == "bias_presence", "value"].tolist() == ["severe_bias"]
    pairwise = release_frames(written)["pairwise"].set_index("rater_id")
    columns = ["Model-A_answer_more_bias", "Model-B_answer_more_bias", "answer_1_source"]
    assert pairwise.loc[[raters.physician.pseudonym], columns].values.tolist()[0] == [False, True, "Model-B"]
    assert pairwise.loc[[raters.expert.pseudonym], columns].values.tolist() == [[False, False, "Model-A"]]  # a tie


def test_one_studys_report_from_its_results_equals_its_own(tmp_path):
    build_release()
    from studies.models import Study

    study = Study.objects.get(name="Counterfactual study")

    assert report_texts(release_frames(results_table(study))) == report_texts(load_frames(study))


# --- analysis plans from the results table -------------------------------------------------------------------


def everything_in_one_study():
    """A scorers-only study holding every answer in the database (plans today read them all)."""
    study = StudyFactory(rubric_version=None, name="Every answer")
    StudyAnswer.objects.bulk_create(
        [
            StudyAnswer(study=study, answer_id=pk, via=StudyAnswer.Via.IMPORTED)
            for pk in Answer.objects.values_list("pk", flat=True)
        ]
    )
    return study


def assert_plan_equal(plan, results) -> None:
    expected = load_outcomes(plan)
    found = plan_outcomes(results, plan)
    assert list(found.columns) == list(expected.columns)
    assert found.astype(str).values.tolist() == expected.astype(str).values.tolist()
    assert table_csv(plan.compute(found)) == table_csv(plan.compute(expected))


def test_biasmedqa_accuracy_reads_the_same_outcomes_from_the_results_table():
    source, other = AnswerSourceFactory(name="m"), AnswerSourceFactory(name="gpt-4-0613")
    choice_answer(source, released="wrong", letter="correct")  # released wins
    choice_answer(source, bias="recency", letter=[(1, "wrong"), (2, "correct")])  # the latest letter version
    choice_answer(source, bias="cultural", mitigation="one-shot", letter="non_response", judge="correct")
    choice_answer(source, other_scorer="correct")  # no score of the plan's scorers
    ScoreFactory(answer=AnswerFactory(source=source), outcome="correct")  # not multiple choice
    question = QuestionFactory(metadata={"answer_idx": "B"}, levels={"mitigation": "few-shot"})
    ScoreFactory(answer=AnswerFactory(question=question, source=source, parameters={"condition": {}}))
    for outcome in ["correct", "correct", "wrong", "non_response"]:
        choice_answer(other, bias="recency", mitigation="none", released=outcome)
    for outcome in ["correct", "wrong"]:
        choice_answer(other, released=outcome)

    results = results_table(everything_in_one_study())

    assert_plan_equal(BIASMEDQA_ACCURACY, results)
    outcomes = plan_outcomes(results, BIASMEDQA_ACCURACY)
    assert outcomes.values.tolist()[:4] == [
        ["m", "none", "none", "wrong"],
        ["m", "recency", "none", "correct"],
        ["m", "cultural", "one-shot", "non_response"],
        ["m", "none", "few-shot", "correct"],
    ]
    table = BIASMEDQA_ACCURACY.compute(outcomes)
    row = table[(table["source"] == "gpt-4-0613") & (table["bias"] == "recency")].iloc[0]
    assert (row["n"], row["correct"], row["non_response"]) == (4, 2, 1) and math.isclose(row["accuracy"], 2 / 3)


def test_qpain_plans_read_the_same_numbers_from_the_results_table_and_its_csv(shared_datasets, tmp_path):
    call_command("import_qpain_outputs", str(shared_datasets / QPAIN_OUTPUTS), stdout=io.StringIO())
    for name in ("p_no", "p_low", "said_no"):  # the plans' scorers, as plan_table runs them first
        from scoring.services import score_missing

        score_missing(scorer=name, answers=Answer.objects.all())
    study = everything_in_one_study()
    export("--study", study.pk, "--out", tmp_path)

    results = results_table(study)
    written = pd.read_csv(tmp_path / "results.csv")

    assert Score.objects.filter(scorer="released_p_no").count() == 400
    for plan in (QPAIN_PAIRED_TESTS, QPAIN_GROUP_MEANS):
        assert_plan_equal(plan, results)
        assert_plan_equal(plan, written)
    values = plan_outcomes(results, QPAIN_PAIRED_TESTS)
    p_no = values[values["outcome"] == "p_no"]
    assert len(p_no) == 400 and p_no["value"].isna().sum() == 44  # records without log-probabilities


def test_the_demos_simulated_ratings_give_the_same_four_tables_from_the_results_table(settings):
    from datasets.demo import seed_demo
    from studies.demo import seed_demo_studies
    from studies.demo_ratings import STUDY_NAME, seed_simulated_ratings
    from studies.models import Study

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    seed_demo()
    seed_demo_studies()
    seed_simulated_ratings()
    studies = Study.objects.filter(name__startswith=STUDY_NAME).order_by("name")

    results = pd.concat([results_table(study) for study in studies], ignore_index=True)

    assert (results["kind"] == "human").any() and len(release_frames(results)["independent"]) == 48 * 9
    for study in studies:
        assert report_texts(release_frames(results_table(study))) == report_texts(load_frames(study))
    assert report_texts(studies_frames()) == report_texts(load_frames())


def test_biasmedqas_released_responses_give_the_same_accuracy_table_from_the_results_table(shared_datasets):
    from analysis.plan_loading import score_answers
    from datasets.demo import DEMO_DATA

    call_command("import_questions", str(DEMO_DATA / "medqa_usmle_test.jsonl"), format="medqa", verbosity=0)
    responses = shared_datasets / "biasmedqa/model_responses/model_responses_qid0-49.csv"
    call_command("import_biasmedqa_responses", str(responses), verbosity=0)
    score_answers(BIASMEDQA_ACCURACY)  # what plan_table does first: the letter scorer beside the released labels

    results = results_table(everything_in_one_study())

    scored = results[results["kind"] == "scorer"]
    assert set(scored["who"]) == {"released v1", "letter v2"} and len(scored) == 2 * Answer.objects.count()
    assert_plan_equal(BIASMEDQA_ACCURACY, results)
    table = BIASMEDQA_ACCURACY.compute(plan_outcomes(results, BIASMEDQA_ACCURACY))
    assert int(table["n"].sum()) == Answer.objects.count() == 8498  # every released response, once
