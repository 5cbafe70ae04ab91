"""The results path orders ratings exactly as the ratings export does, whatever the database's collation
(analysis/DESIGN.md, "Row order and collation"): raters of an item and studies come in the database's order, so the
four tables from the database and from an exported release (`analyze --from`) get the same bootstrap draws."""

import io

import pandas as pd
import pytest
from django.core.management import call_command
from django.db import connection

from analysis.loading import load_frames, load_frames_from_dir
from analysis.results import results_table, studies_frames, write_results
from analysis.results_frames import release_frames
from raters.models import RaterProfile
from studies.exports import write_csv_files
from studies.models import Study
from tests.analysis.test_results import assert_same_frames, report_texts
from tests.studies.test_exports import build_release

pytestmark = [pytest.mark.django_db, pytest.mark.postgresql]

# ICU's root collation weighs letters before case and punctuation (a_ < b- < C-); code points put "C" first.
ICU = "und-x-icu"
NAMES = {"physician": "C-physician", "expert": "b-expert", "consumer": "a_consumer"}


def use_icu_collation() -> None:
    """Pseudonyms and study names compared by ICU in this test's transaction (rolled back with it)."""
    with connection.cursor() as cursor:
        cursor.execute(f'ALTER TABLE raters_raterprofile ALTER COLUMN pseudonym TYPE varchar(32) COLLATE "{ICU}"')
        cursor.execute(f'ALTER TABLE studies_study ALTER COLUMN name TYPE varchar(200) COLLATE "{ICU}"')


@pytest.fixture
def release_under_icu():
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL's ICU collations")
    use_icu_collation()  # first: a table with pending deferred checks cannot be altered
    raters = build_release()
    for role, name in NAMES.items():
        RaterProfile.objects.filter(pk=getattr(raters, role).pk).update(pseudonym=name)
    Study.objects.filter(name="Independent study").update(name="independent study")
    return raters


def test_raters_and_studies_come_in_the_databases_order_not_pythons(release_under_icu, tmp_path):
    loaded = load_frames()  # the ratings export, ordered by the database
    independent = loaded["independent"]
    # The database's order, which Python's sorted() would not give: b- before C-, "independent" before "Pairwise".
    assert independent.loc[independent["question_id"] == "omaq-1", "rater_id"].tolist() == ["b-expert", "C-physician"]
    assert sorted(["b-expert", "C-physician"]) == ["C-physician", "b-expert"]
    studies = list(Study.objects.order_by("name").values_list("name", flat=True))
    assert studies == ["Counterfactual study", "independent study", "Pairwise study"] != sorted(studies)

    rebuilt = studies_frames()

    assert_same_frames(rebuilt, loaded)
    assert report_texts(rebuilt) == report_texts(loaded)
    for study in Study.objects.all():
        table = results_table(study)
        assert_same_frames(release_frames(table), load_frames(study))
        human = table[table["kind"] == "human"]
        item_1 = human[human["question"] == "omaq-1"].drop_duplicates("who")
        if study.name == "independent study":
            assert item_1["who"].astype(str).tolist() == ["b-expert", "C-physician"]


def test_the_exported_release_and_the_results_csv_give_the_databases_tables(release_under_icu, tmp_path):
    write_csv_files(tmp_path / "release")
    expected = report_texts(studies_frames())

    assert report_texts(load_frames_from_dir(tmp_path / "release")) == expected  # `analyze --from` of the export
    written = []
    for study in Study.objects.order_by("name"):
        write_results(results_table(study), tmp_path)
        written.append(pd.read_csv(tmp_path / "results.csv"))
    order = list(Study.objects.order_by("name").values_list("name", flat=True))
    assert report_texts(release_frames(pd.concat(written), study_order=order)) == expected

    out = io.StringIO()  # the command, seed 0: from the database and from the exported files alike
    call_command("analyze", "--out", str(tmp_path / "db"), stdout=out)
    call_command("analyze", "--from", str(tmp_path / "release"), "--out", str(tmp_path / "files"), stdout=out)
    for name in ("rates", "reliability", "counterfactual_crosstab", "consumer_regression"):
        from_db = (tmp_path / "db" / f"{name}.csv").read_text(encoding="utf-8")
        assert from_db == (tmp_path / "files" / f"{name}.csv").read_text(encoding="utf-8")
