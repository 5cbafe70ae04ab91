"""Hand-made ratings in the release format (shared/spec/ratings-export.md), written and read back as CSV.

Rows carry every column our exports write (studies.release REQUIRED + EXTRA), so the statistics see what
`pandas.read_csv` gives for a real `ratings_*.csv` file. No database.
"""

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from studies import release

OMAQ = "Open-ended Medical Adversarial Queries (OMAQ)"
EHAI = "Equity in Health AI (EHAI)"
CC_MANUAL = "Counterfactual Context - Manual (CC-Manual)"
HEALTHSEARCHQA = "HealthSearchQA"
MIXED = "Mixed MMQA-OMAQ"
PHYSICIAN, EXPERT, CONSUMER = "Physician", "Health equity expert", "Consumer"
MED_PALM, MED_PALM_2, PHYSICIAN_WRITTEN = "Med-PaLM", "Med-PaLM-2", "Physician-written"
DIMENSIONS = list(release.DIMENSION_COLUMNS[release.INDEPENDENT].values())
SIMILAR, CONTENT = release.ANSWERS_DIFFER_HOW["similar"], release.ANSWERS_DIFFER_HOW["content"]

Row = dict[str, object]


def _details(rater_id: str, demographics: Sequence[str] = ("", "", "")) -> Row:
    age, gender, race = demographics
    return {
        "active_seconds": 31.5, "wall_seconds": 40.0, "submitted_at": "2025-01-02T03:04:05+00:00", "revision": 1,
        "attention_check_passed": "", "rater_years_in_practice": "", "rater_specialty": "", "rater_country": "",
        "rater_age_group": age, "rater_gender": gender, "rater_race_ethnicity": race,
    }  # fmt: skip


def independent_row(
    question_id: str,
    dataset: str,
    rater_type: str,
    rater_id: str,
    bias: str = "No bias",
    dimensions: Iterable[str] = (),
    *,
    answer_source: str = MED_PALM_2,
    demographics: Sequence[str] = ("", "", ""),
) -> Row:
    marked = set(dimensions)
    return {
        "question_id": question_id, "dataset": dataset, "rater_type": rater_type, "rater_id": rater_id,
        "bias_presence": bias, **{d: d in marked for d in DIMENSIONS},
        "rubric_version": "EquityMedQA independent v1", "study": "Study", "answer_source": answer_source,
        "other_text": "", "comment": "", **_details(rater_id, demographics),
    }  # fmt: skip


def pairwise_row(
    question_id: str,
    dataset: str,
    rater_type: str,
    rater_id: str,
    sources: tuple[str, str] = (MED_PALM, MED_PALM_2),
    more_bias: str | None = None,
    dimensions: Iterable[str] = (),
) -> Row:
    """`more_bias`: the source the rater judged to show more bias (None: a tie); the other is preferred."""
    marked = set(dimensions) if more_bias else set()
    return {
        "question_id": question_id, "dataset": dataset, "rater_type": rater_type, "rater_id": rater_id,
        **{release.source_column(source): source == more_bias for source in sources},
        **{d: d in marked for d in DIMENSIONS},
        "rubric_version": "EquityMedQA pairwise v1", "study": "Study", "answer_1_source": sources[1],
        "answer_2_source": sources[0], "other_text": "", "comment": "", **_details(rater_id),
    }  # fmt: skip


def counterfactual_row(
    question_1_id: str,
    question_2_id: str,
    dataset: str,
    rater_type: str,
    rater_id: str,
    bias: bool = False,
    dimensions: Iterable[str] = (),
    ideal: str = "No",
    how: str = SIMILAR,
    sources: tuple[str, str] = (MED_PALM_2, MED_PALM_2),
) -> Row:
    marked = set(dimensions)
    columns = release.DIMENSION_COLUMNS[release.COUNTERFACTUAL]
    return {
        "question_1_id": question_1_id, "question_2_id": question_2_id, "dataset": dataset,
        "rater_type": rater_type, "rater_id": rater_id, "bias_presence": bias,
        **{columns[d]: d in marked for d in DIMENSIONS}, "ideal_answers_differ": ideal, "answers_differ_how": how,
        "rubric_version": "EquityMedQA counterfactual v1", "study": "Study", "answer_1_source": sources[0],
        "answer_2_source": sources[1], "ideal_comment": "", "other_text": "", "comment": "", **_details(rater_id),
    }  # fmt: skip


def release_frame(kind: str, rows: list[Row]) -> pd.DataFrame:
    """The rows with exactly the columns the export writes, in its order (pairwise: a column per source)."""
    sources: list[str] = []
    if kind == release.PAIRWISE:
        found = {str(c)[: -len(release.SOURCE_SUFFIX)] for row in rows for c in row if str(c).endswith("_more_bias")}
        sources = sorted(found)
    return pd.DataFrame(rows, columns=release.header(kind, sources))


def write_and_read(directory: Path, kind: str, rows: list[Row]) -> pd.DataFrame:
    """Writes a kind's rows as its release CSV file and reads it back with `pandas.read_csv`."""
    path = directory / release.FILENAMES[kind]
    release_frame(kind, rows).to_csv(path, index=False)
    return pd.read_csv(path)


def study_rows(seed: int = 7) -> dict[str, list[Row]]:
    """A small study shaped like the paper's: singly rated sets, triple-rated Mixed MMQA-OMAQ (with consumers)
    and CC-Manual, two pairwise comparisons on HealthSearchQA, counterfactual pairs of CC-Manual questions."""
    rng = np.random.default_rng(seed)

    def bias() -> str:
        return str(rng.choice(["No bias", "Minor bias", "Severe bias"], p=[0.6, 0.3, 0.1]))

    def marks(biased: bool) -> list[str]:
        return [d for d in DIMENSIONS if biased and rng.random() < 0.4]

    demographics = [("18-24", "Woman", "Asian; White"), ("25-34", "Man", "Black"), ("65+", "Woman", "White")]
    independent: list[Row] = []
    for dataset, questions, pools, raters in [
        (HEALTHSEARCHQA, 12, [PHYSICIAN, EXPERT], 1),
        (OMAQ, 10, [PHYSICIAN, EXPERT], 1),
        (EHAI, 8, [PHYSICIAN], 1),
        (MIXED, 6, [PHYSICIAN, EXPERT, CONSUMER], 3),
        (CC_MANUAL, 8, [PHYSICIAN, EXPERT], 3),
    ]:
        for q in range(questions):
            for pool in pools:
                for r in range(raters):
                    level = bias()
                    rater = f"{pool[:3].lower()}-{(q + r) % 5}"
                    who = demographics[(q + r) % 3] if pool == CONSUMER else ("", "", "")
                    independent.append(independent_row(f"{dataset[:4]}-{q}", dataset, pool, rater, level,
                                                       marks(level != "No bias"), demographics=who))  # fmt: skip
    pairwise: list[Row] = []
    for dataset, sources, questions, raters in [
        (HEALTHSEARCHQA, (MED_PALM, MED_PALM_2), 10, 1),
        (HEALTHSEARCHQA, (PHYSICIAN_WRITTEN, MED_PALM_2), 6, 1),
        (OMAQ, (MED_PALM, MED_PALM_2), 8, 1),
        (MIXED, (MED_PALM, MED_PALM_2), 6, 3),
    ]:
        for q in range(questions):
            for pool in (PHYSICIAN, EXPERT):
                for r in range(raters):
                    more = [None, sources[0], sources[1]][int(rng.choice(3, p=[0.5, 0.3, 0.2]))]
                    rater = f"{pool[:3].lower()}-{(q + r) % 5}"
                    pairwise.append(pairwise_row(f"{dataset[:4]}-{q}", dataset, pool, rater, sources, more,
                                                 marks(more is not None)))  # fmt: skip
    counterfactual: list[Row] = []
    for q in range(0, 8, 2):
        for pool in (PHYSICIAN, EXPERT):
            for r in range(3):
                biased = bool(rng.random() < 0.3)
                ideal = str(rng.choice(["Yes", "No", "Unsure"]))
                how = str(rng.choice(list(release.ANSWERS_DIFFER_HOW.values())))
                counterfactual.append(counterfactual_row(f"{CC_MANUAL[:4]}-{q}", f"{CC_MANUAL[:4]}-{q + 1}", CC_MANUAL,
                                                         pool, f"{pool[:3].lower()}-{r}", biased, marks(biased), ideal,
                                                         how))  # fmt: skip
    return {release.INDEPENDENT: independent, release.PAIRWISE: pairwise, release.COUNTERFACTUAL: counterfactual}


@pytest.fixture
def study_csv(tmp_path: Path) -> Path:
    """A directory holding the three ratings_*.csv files of `study_rows()`."""
    for kind, rows in study_rows().items():
        release_frame(kind, rows).to_csv(tmp_path / release.FILENAMES[kind], index=False)
    return tmp_path


@pytest.fixture
def read_frames() -> Callable[[Path], dict[str, pd.DataFrame]]:
    def read(directory: Path) -> dict[str, pd.DataFrame]:
        return {kind: pd.read_csv(directory / release.FILENAMES[kind]) for kind in release.KINDS}

    return read
