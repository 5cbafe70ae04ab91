"""Importing a ratings release: round trips, published-style files, bad rows, idempotence."""

import csv

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.core.management.color import no_style
from django.db import connection

from datasets.models import Answer, AnswerSource, CounterfactualPair, Dataset, Question
from raters.models import RaterBackground, RaterPool, RaterProfile
from studies import release
from studies.exports import write_csv_files, write_workbook
from studies.models import Assignment, Rating, Study, StudyItem
from studies.ratings_import import RatingsImportError, import_ratings
from tests.factories import OnboardedRaterFactory
from tests.studies.test_exports import INJECTION, build_release

pytestmark = pytest.mark.django_db

MODELS = [Rating, Assignment, StudyItem, Study, Answer, CounterfactualPair, Question, Dataset, AnswerSource,
          RaterBackground, RaterProfile, RaterPool]  # fmt: skip


def counts() -> dict[str, int]:
    return {model.__name__: model.objects.count() for model in [*MODELS, get_user_model()]}


def wipe_everything_the_release_holds() -> None:
    """A fresh database as far as the release goes: no studies, questions, sources or raters.

    Ratings are never deleted (the audit trail), so the tables are emptied the way `flush` empties them.
    """
    tables = [model._meta.db_table for model in MODELS[:-1]]  # the built-in pools stay, as in any installation
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # TRUNCATE refuses tables with checks pending
        for statement in connection.ops.sql_flush(no_style(), tables, allow_cascade=True):
            cursor.execute(statement)
        if connection.vendor == "postgresql":
            cursor.execute("SET CONSTRAINTS ALL DEFERRED")
    get_user_model().objects.all().delete()


def files(directory) -> dict[str, bytes]:
    return {name: (directory / name).read_bytes() for name in release.FILENAMES.values()}


def write(path, rows) -> None:
    with path.open("w", newline="") as handle:
        csv.writer(handle, lineterminator="\n").writerows(rows)


def test_export_import_export_round_trips_to_identical_files(tmp_path):
    build_release()
    write_csv_files(tmp_path / "first")
    wipe_everything_the_release_holds()

    report = import_ratings(path=tmp_path / "first")
    write_csv_files(tmp_path / "second")

    assert files(tmp_path / "second") == files(tmp_path / "first")
    assert report.created["ratings"] == 11 and report.already_present == 0
    assert report.created["raters"] == 3 and report.created["studies"] == 3
    imported = RaterProfile.objects.select_related("user").get(pool__slug="physician")
    assert imported.user.username == f"imported-{imported.pseudonym}"
    assert not imported.user.is_active and not imported.user.has_usable_password()
    assert Question.objects.get(external_id="omaq-1").text == "[question text not in the release: omaq-1]"
    assert set(Answer.objects.values_list("text", flat=True)) == {""}
    assert all(study.is_locked for study in Study.objects.all())


def test_formula_protection_is_stripped_again_on_import(tmp_path):
    build_release()
    write_csv_files(tmp_path)
    wipe_everything_the_release_holds()

    import_ratings(path=tmp_path)

    comments = [rating.values["comment"] for rating in Rating.objects.filter(values__comment__gt="")]
    assert sorted(comments) == sorted([INJECTION, "-same"])
    assert Rating.objects.get(values__ideal_comment__gt="").values["ideal_comment"] == "+context matters"


def test_imported_pairwise_ratings_keep_the_display_order_and_the_preferred_source(tmp_path):
    raters = build_release()
    write_csv_files(tmp_path)
    wipe_everything_the_release_holds()

    import_ratings(path=tmp_path)

    rating = Rating.objects.get(assignment__rater__pseudonym=raters.physician.pseudonym,
                                assignment__item__question__external_id="omaq-1")  # fmt: skip
    shown = rating.assignment.displayed_answers()
    assert [answer.source.name for answer in shown] == ["Model-B", "Model-A"]
    assert rating.values["preference"] == "answer_1" and rating.swap_answers
    assert rating.values["dimensions"] == ["stereotypical_language_characterization"]


def test_the_workbook_imports_to_the_same_ratings_as_the_csv_files(tmp_path):
    build_release()
    write_csv_files(tmp_path / "csv")
    write_workbook(tmp_path / "equitymedqa_ratings.xlsx")
    wipe_everything_the_release_holds()

    import_ratings(path=tmp_path / "equitymedqa_ratings.xlsx")
    write_csv_files(tmp_path / "again")

    assert files(tmp_path / "again") == files(tmp_path / "csv")


def test_importing_the_same_files_again_adds_nothing(tmp_path):
    build_release()
    write_csv_files(tmp_path)
    wipe_everything_the_release_holds()
    import_ratings(path=tmp_path)
    before = counts()

    report = import_ratings(path=tmp_path)

    assert counts() == before
    assert report.created["ratings"] == 0 and report.already_present == 11


def test_the_original_studies_are_reused_when_they_are_still_there(tmp_path):
    build_release()
    write_csv_files(tmp_path)
    before = counts()

    report = import_ratings(path=tmp_path)

    assert counts() == before and report.already_present == 11


def test_a_study_name_puts_the_ratings_in_new_studies_with_the_same_release_columns(tmp_path):
    build_release()
    write_csv_files(tmp_path / "first")

    report = import_ratings(path=tmp_path / "first", study_name="Re-analysis")
    write_csv_files(tmp_path / "second")

    assert report.created["studies"] == 3 and report.created["ratings"] == 11
    assert Study.objects.filter(name="Re-analysis (pairwise)", locked_at__isnull=False).exists()
    with (tmp_path / "first" / "ratings_pairwise.csv").open(newline="") as handle:
        first = list(csv.reader(handle))
    with (tmp_path / "second" / "ratings_pairwise.csv").open(newline="") as handle:
        second = list(csv.reader(handle))
    study = first[0].index("study")
    original = [row[:study] + row[study + 1 :] for row in first[1:]]
    copies = [row[:study] + row[study + 1 :] for row in second[1:] if row[study] == "Re-analysis (pairwise)"]
    assert sorted(copies) == sorted(original)


def test_published_files_with_only_the_required_columns_import(tmp_path):
    independent = release.header("independent")[: len(release.REQUIRED["independent"])]
    write(tmp_path / "ratings_independent.csv", [
        independent,
        ["17", "Equity in Health AI (EHAI)", "Physician", "rater_1", "Minor bias", "True", *["False"] * 6],
        ["17", "Equity in Health AI (EHAI)", "Medical student", "rater_9", "No bias", *["False"] * 7],
    ])  # fmt: skip
    sources = ["Med-PaLM_answer_more_bias", "Med-PaLM-2_answer_more_bias"]
    write(tmp_path / "ratings_pairwise.csv", [
        ["question_id", "dataset", "rater_type", "rater_id", *sources, *release.DIMENSIONS],
        ["17", "Equity in Health AI (EHAI)", "Physician", "rater_1", "False", "True", "True", *["False"] * 6],
    ])  # fmt: skip

    report = import_ratings(path=tmp_path, study_name="EquityMedQA release")

    assert report.created["ratings"] == 3 and report.created["rater pools"] == 1
    rating = Rating.objects.get(assignment__item__study__name="EquityMedQA release (independent)",
                                assignment__rater__pseudonym="rater_1")  # fmt: skip
    assert rating.values == {"bias_presence": "minor_bias", "dimensions": ["inaccuracy_for_some_axes"],
                             "other_text": "", "comment": ""}  # fmt: skip
    assert rating.assignment.item.answer.source.name == "Imported release"
    assert "not in the release" in rating.assignment.item.answer.provenance_note
    assert rating.rubric_version.rubric.name == "EquityMedQA independent"
    assert RaterProfile.objects.get(pseudonym="rater_9").pool.name == "Medical student"
    study = Study.objects.get(name="EquityMedQA release (independent)")
    assert sorted(study.pools.values_list("name", flat=True)) == ["Medical student", "Physician"]
    paired = Rating.objects.get(assignment__item__study__name="EquityMedQA release (pairwise)")
    assert paired.values["preference"] == "answer_2" and paired.swap_answers is False
    assert paired.assignment.item.answer_2.source.name == "Med-PaLM-2"


def test_bad_rows_are_reported_by_file_and_line_and_nothing_is_imported(tmp_path):
    build_release()
    before = counts()
    good = ["q1", "EHAI", "Physician", "rater_1", "No bias", *["False"] * 7]
    write(tmp_path / "ratings_independent.csv", [
        release.REQUIRED["independent"] + ["comment"],
        [*good, "a comment\nover two lines"],
        ["q2", "EHAI", "Physician", "rater_1", "Major bias", *["False"] * 7, ""],
        ["q3", "EHAI", "Physician", "rater_1", "No bias", "yes", *["False"] * 6, ""],
        [*good, "the same rating again"],
        ["q4", "EHAI", "Physician"],
    ])  # fmt: skip
    sources = ["Model-A_answer_more_bias", "Model-B_answer_more_bias", "Model-C_answer_more_bias"]
    write(tmp_path / "ratings_pairwise.csv", [
        ["question_id", "dataset", "rater_type", "rater_id", *sources, *release.DIMENSIONS],
        ["q1", "EHAI", "Physician", "rater_1", "True", "False", "", *["False"] * 7],
        ["q1", "EHAI", "Physician", "rater_2", "True", "", "", *["False"] * 7],
        ["q1", "EHAI", "Physician", "rater_3", "True", "True", "", *["False"] * 7],
        ["q1", "EHAI", "Physician", "rater_4", "False", "False", "False", *["False"] * 7],
        ["q1", "EHAI", "Physician", "rater_5", "False", "False", "", "True", *["False"] * 6],
    ])  # fmt: skip
    write(tmp_path / "ratings_counterfactual.csv", [
        release.REQUIRED["counterfactual"],
        ["c1", "c2", "CC", "Consumer", "rater_1", "True", *["False"] * 7, "Yes",
         "Differ in syntax or structure but not in content"],
        ["c1", "c2", "CC", "Consumer", "rater_6", "Maybe", *["False"] * 7, "Perhaps", "Completely different"],
    ])  # fmt: skip

    with pytest.raises(RatingsImportError) as raised:
        import_ratings(path=tmp_path)

    problems = raised.value.problems
    assert [problem.split(":")[0] for problem in problems] == [
        "ratings_independent.csv, line 4", "ratings_independent.csv, line 5", "ratings_independent.csv, line 6",
        "ratings_independent.csv, line 7", "ratings_pairwise.csv, line 3", "ratings_pairwise.csv, line 4",
        "ratings_pairwise.csv, line 5", "ratings_pairwise.csv, line 6", "ratings_counterfactual.csv, line 2",
        "ratings_counterfactual.csv, line 3",
    ]  # fmt: skip
    assert "bias_presence 'Major bias' is not one of: No bias, Minor bias, Severe bias" in problems[0]
    assert "inaccuracy_for_some_axes must be True or False, not 'yes'" in problems[1]
    assert "already rated this item (line 2)" in problems[2]
    assert "3 cells, but the header has 13 columns" in problems[3]
    assert "must fill exactly two sources, not 1" in problems[4]
    assert "both sources are True" in problems[5]
    assert "must fill exactly two sources, not 3" in problems[6]
    assert "a tie (both sources False) cannot mark kinds of bias" in problems[7]
    assert "rater rater_1 is a 'Physician' in an earlier row, not a 'Consumer'" in problems[8]
    assert "bias_presence must be True or False, not 'Maybe'" in problems[9]
    assert "ideal_answers_differ 'Perhaps' is not one of: Yes, No, Unsure" in problems[9]
    assert "answers_differ_how 'Completely different' is not one of" in problems[9]
    assert counts() == before


@pytest.mark.parametrize("cell", ["nan", "inf", "-inf", "1e999", "2147483648"])
def test_timings_and_counts_that_are_not_finite_numbers_in_range_are_reported(tmp_path, cell):
    columns = [*release.REQUIRED["independent"], "active_seconds", "wall_seconds", "revision"]
    write(tmp_path / "ratings_independent.csv", [
        columns,
        ["q1", "EHAI", "Physician", "rater_1", "No bias", *["False"] * 7, cell, "1.5", "1"],
        ["q2", "EHAI", "Physician", "rater_1", "No bias", *["False"] * 7, "2", "1.5", cell],
    ])  # fmt: skip

    with pytest.raises(RatingsImportError) as raised:
        import_ratings(path=tmp_path)

    assert raised.value.problems == [
        f"ratings_independent.csv, line 2: active_seconds must be a number of at least 0, not {cell!r}",
        f"ratings_independent.csv, line 3: revision must be a number of at least 0, not {cell!r}",
    ]
    assert not Rating.objects.exists()


def test_missing_columns_and_known_raters_of_another_pool_are_reported(tmp_path):
    physician = OnboardedRaterFactory(pool="physician").rater_profile
    write(tmp_path / "ratings_independent.csv", [
        release.REQUIRED["independent"],
        ["q1", "EHAI", "Consumer", physician.pseudonym, "No bias", *["False"] * 7],
    ])  # fmt: skip
    write(tmp_path / "ratings_counterfactual.csv", [release.REQUIRED["counterfactual"][:-2]])
    before = counts()

    with pytest.raises(RatingsImportError) as raised:
        import_ratings(path=tmp_path)

    assert raised.value.problems == [
        f"ratings_independent.csv, line 2: rater {physician.pseudonym} is already in the pool 'Physician'",
        "ratings_counterfactual.csv, line 1: missing required columns: ideal_answers_differ, answers_differ_how",
    ]
    assert counts() == before


def test_the_import_command_lists_the_problems_and_imports_nothing(tmp_path, capsys):
    write(tmp_path / "ratings_independent.csv", [
        release.REQUIRED["independent"],
        ["q1", "EHAI", "Physician", "rater_1", "Some bias", *["False"] * 7],
    ])  # fmt: skip

    with pytest.raises(CommandError, match="1 problem"):
        call_command("import_ratings", str(tmp_path))

    assert "ratings_independent.csv, line 2: bias_presence 'Some bias'" in capsys.readouterr().err
    assert not Rating.objects.exists()


def test_the_import_command_reports_what_it_created(tmp_path, capsys):
    build_release()
    write_csv_files(tmp_path)
    wipe_everything_the_release_holds()

    call_command("import_ratings", str(tmp_path))

    out = capsys.readouterr().out
    assert "created 11 ratings" in out and "Imported 11 ratings." in out
