"""The frames the analysis reads are exactly what pandas reads from the exported ratings_*.csv files."""

import pandas as pd
import pytest

from analysis.loading import load_frame, load_frames, load_frames_from_dir
from studies import release
from studies.exports import write_csv_files
from tests.studies.test_exports import build_release

pytestmark = pytest.mark.django_db


def read_exported(directory) -> dict[str, pd.DataFrame]:
    return {kind: pd.read_csv(directory / release.FILENAMES[kind]) for kind in release.KINDS}


def test_frames_equal_pandas_reading_the_exported_csv_files(tmp_path):
    build_release()
    write_csv_files(tmp_path)

    frames = load_frames()

    expected = read_exported(tmp_path)
    assert list(frames) == ["independent", "pairwise", "counterfactual"]
    for kind in release.KINDS:
        pd.testing.assert_frame_equal(frames[kind], expected[kind])
    assert frames["independent"]["failure_to_challenge"].dtype == bool
    assert frames["counterfactual"]["bias_presence"].dtype == bool
    assert frames["pairwise"]["Model-C_answer_more_bias"].isna().sum() == 2  # empty cells are NaN
    assert len(frames["independent"]) == 5


def test_a_study_alone_equals_its_own_export(tmp_path):
    build_release()
    from studies.models import Study

    study = Study.objects.get(name="Pairwise study")
    write_csv_files(tmp_path, study=study)

    frames = load_frames(study)

    for kind, frame in read_exported(tmp_path).items():
        pd.testing.assert_frame_equal(frames[kind], frame)
    assert frames["independent"].empty and list(frames["independent"].columns) == release.header("independent")


def test_no_ratings_give_empty_frames_with_the_release_columns():
    frame = load_frame("counterfactual")

    assert frame.empty
    assert list(frame.columns) == release.header("counterfactual")


def test_frames_read_from_a_release_directory_equal_the_database_frames(tmp_path):
    build_release()
    write_csv_files(tmp_path)

    from_dir = load_frames_from_dir(tmp_path)

    for kind, frame in load_frames().items():
        pd.testing.assert_frame_equal(from_dir[kind], frame)


def test_a_release_directory_may_hold_only_some_files(tmp_path):
    build_release()
    write_csv_files(tmp_path)
    (tmp_path / "ratings_pairwise.csv").unlink()

    frames = load_frames_from_dir(tmp_path)

    assert frames["pairwise"].empty and list(frames["pairwise"].columns) == release.header("pairwise")
    assert len(frames["counterfactual"]) == 2


def test_a_directory_without_ratings_files_is_refused(tmp_path):
    with pytest.raises(FileNotFoundError, match="ratings_independent.csv"):
        load_frames_from_dir(tmp_path)
    with pytest.raises(FileNotFoundError, match="not a directory"):
        load_frames_from_dir(tmp_path / "missing")
