"""Simulated ratings for the demo's analysis pages: clearly labelled, never mixed with real ratings.

The demo's own raters start with nothing rated, so the analyst pages would be empty. These ratings cover the
same Q-Pain questions, answers and counterfactual pairs, triple-rated in each pool by simulated raters
(`sim-...`), and go in through the release-format import like any published ratings would. They are drawn
from a seeded model with some structure (items differ in how biased they look, equity experts flag more
than physicians, consumers' rates vary with age group) so every table and plot has something to show.
"""

import csv
import tempfile
from pathlib import Path

import numpy as np

from datasets.demo import CLINICIAN_REFERENCE, DEEPSEEK, QPAIN_DEMO
from datasets.models import CounterfactualPair, Question

from . import release
from .ratings_import import import_ratings
from .ratings_store import ImportReport

STUDY_NAME = "Demo: SIMULATED ratings (not real data)"
RATERS_PER_POOL = 3
POOL_SHIFT = {"Physician": -0.3, "Health equity expert": 0.4, "Consumer": 0.2}
CONSUMERS = [  # (age group, gender, race/ethnicity): the regression's predictors
    ("18-29", "Woman", "Black or African American"), ("18-29", "Man", "White"), ("30-44", "Woman", "Asian"),
    ("30-44", "Man", "Hispanic or Latino"), ("45-64", "Woman", "White"), ("45-64", "Man", "Black or African American"),
    ("65+", "Woman", "White"), ("65+", "Man", "Asian"), ("18-29", "Non-binary", "White"),
    ("45-64", "Woman", "Hispanic or Latino"), ("30-44", "Man", "White"), ("65+", "Woman", "Black or African American"),
]  # fmt: skip
AGE_SHIFT = {"18-29": 0.6, "30-44": 0.3, "45-64": 0.0, "65+": -0.3}


def seed_simulated_ratings(*, seed: int = 2024) -> ImportReport:
    """Write the simulated release files and import them (a second run adds nothing)."""
    rng = np.random.default_rng(seed)
    questions = list(
        Question.objects.filter(dataset__name=QPAIN_DEMO).order_by("id").values_list("external_id", flat=True)
    )
    pairs = list(
        CounterfactualPair.objects.filter(dataset__name=QPAIN_DEMO)
        .order_by("id")
        .values_list("question_1__external_id", "question_2__external_id")
    )
    tables = {
        release.INDEPENDENT: _independent(rng, questions),
        release.PAIRWISE: _pairwise(rng, questions),
        release.COUNTERFACTUAL: _counterfactual(rng, pairs),
    }
    with tempfile.TemporaryDirectory() as folder:
        for kind, (header, rows) in tables.items():
            with (Path(folder) / release.FILENAMES[kind]).open("w", newline="", encoding="utf-8") as handle:
                writer = csv.writer(handle)
                writer.writerow(header)
                writer.writerows(rows)
        return import_ratings(path=folder, study_name=STUDY_NAME)


def _raters(pool: str) -> list[tuple[str, list]]:
    """(rater id, background cells in release order) for the simulated raters of a pool."""
    blank = ["", "", "", "", "", ""]
    if pool == "Consumer":
        return [(f"sim-consumer-{n + 1:02d}", ["", "", "", age, gender, race])
                for n, (age, gender, race) in enumerate(CONSUMERS)]  # fmt: skip
    slug = "physician" if pool == "Physician" else "equity"
    return [(f"sim-{slug}-{n + 1}", blank) for n in range(RATERS_PER_POOL)]


def _biased(rng: np.random.Generator, item_score: float, shift: float) -> bool:
    return bool(rng.random() < 1 / (1 + np.exp(-(item_score + shift))))


def _dimensions(rng: np.random.Generator, biased: bool) -> list[bool]:
    if not biased:
        return [False] * len(release.DIMENSIONS)
    marked = rng.random(len(release.DIMENSIONS)) < [0.5, 0.3, 0.25, 0.35, 0.2, 0.4, 0.05]
    if not marked.any():
        marked[0] = True
    return marked.tolist()


def _rater_rows(pool: str, rng: np.random.Generator, items: int) -> list[tuple[str, list]]:
    """Which raters rate an item: all three experts of a pool, or three of the twelve consumers."""
    raters = _raters(pool)
    if pool != "Consumer":
        return raters
    return [raters[i] for i in rng.choice(len(raters), size=RATERS_PER_POOL, replace=False)]


def _details(background: list) -> list:
    return [None, None, "", 1, None, *background]  # active/wall seconds, submitted, revision, attention


def _independent(rng: np.random.Generator, questions: list[str]) -> tuple[list[str], list[list]]:
    header = release.header(release.INDEPENDENT)
    rows = []
    for question in questions:
        score = rng.normal(-1.2, 1.0)
        for pool in ("Physician", "Health equity expert", "Consumer"):
            for rater_id, background in _rater_rows(pool, rng, len(questions)):
                shift = POOL_SHIFT[pool] + (AGE_SHIFT[background[3]] if pool == "Consumer" else 0.0)
                biased = _biased(rng, score, shift)
                severity = ("Severe bias" if rng.random() < 0.3 else "Minor bias") if biased else "No bias"
                rows.append([question, QPAIN_DEMO, pool, rater_id, severity, *_dimensions(rng, biased),
                             "", STUDY_NAME, DEEPSEEK.replace(" ", "-"), "", "", *_details(background)])  # fmt: skip
    return header, rows


def _pairwise(rng: np.random.Generator, questions: list[str]) -> tuple[list[str], list[list]]:
    model, reference = DEEPSEEK.replace(" ", "-"), CLINICIAN_REFERENCE.replace(" ", "-")
    names = sorted([model, reference])
    header = release.header(release.PAIRWISE, names)
    rows = []
    for question in questions:
        score = rng.normal(-0.8, 1.0)
        for pool in ("Physician", "Health equity expert"):
            for rater_id, background in _raters(pool):
                # More bias seen in the model's answer than in the clinician's, more often than the reverse.
                draw = rng.random()
                more_biased = model if _biased(rng, score, POOL_SHIFT[pool]) else (reference if draw < 0.1 else None)
                columns = [name == more_biased for name in names]
                dimensions = _dimensions(rng, more_biased is not None)
                rows.append([question, QPAIN_DEMO, pool, rater_id, *columns, *dimensions, "", STUDY_NAME,
                             model, reference, "", "", *_details(background)])  # fmt: skip
    return header, rows


def _counterfactual(rng: np.random.Generator, pairs: list[tuple[str, str]]) -> tuple[list[str], list[list]]:
    header = release.header(release.COUNTERFACTUAL)
    how = list(release.ANSWERS_DIFFER_HOW.values())
    model = DEEPSEEK.replace(" ", "-")
    rows = []
    for first, second in pairs:
        score = rng.normal(-1.0, 1.0)
        for pool in ("Physician", "Health equity expert"):
            for rater_id, background in _raters(pool):
                biased = _biased(rng, score, POOL_SHIFT[pool])
                ideal = rng.choice(["No", "Yes", "Unsure"], p=[0.7, 0.2, 0.1])
                rows.append([first, second, QPAIN_DEMO, pool, rater_id, biased, *_dimensions(rng, biased), ideal,
                             how[int(rng.integers(len(how)))], "", STUDY_NAME, model, model, "", "", "",
                             *_details(background)])  # fmt: skip
    return header, rows
