"""Simulated ratings for the demo's analysis pages: clearly labelled, never mixed with real ratings.

The demo's own raters start with nothing rated, so the analyst pages would be empty. These ratings cover the
same Q-Pain questions, answers and counterfactual pairs, triple-rated in each pool by simulated raters
(`sim-...`), and go in through the release-format import like any published ratings would. They are drawn
from a seeded model with some structure (items differ in how biased they look, equity experts flag more
than physicians, consumers' rates vary with age group) so every table and plot has something to show.
Simulated consumers answer the demographics with exactly the categories the panel form offers (including two
categories at once and "Prefer not to say"), so their levels and real participants' levels are the same.
"""

import csv
import tempfile
from pathlib import Path

import numpy as np

from datasets.demo import CLINICIAN_REFERENCE, DEEPSEEK, QPAIN_DEMO
from datasets.models import CounterfactualPair, Question
from raters.forms import demographic_choices
from raters.models import PREFER_NOT_TO_SAY

from . import release
from .ratings_import import import_ratings
from .ratings_store import ImportReport

STUDY_NAME = "Demo: SIMULATED ratings (not real data)"
RATERS_PER_POOL = 3
POOL_SHIFT = {"Physician": -0.3, "Health equity expert": 0.4, "Consumer": 0.2}
# The simulated consumers' answers to the panel's demographics form, as positions among the categories it offers
# (raters.forms.demographic_choices, "Prefer not to say" apart): (age group, gender, race/ethnicity categories),
# DECLINED for "Prefer not to say". With the default categories (raters/defaults.py): 18-24, 25-34, 45-54 and
# 65 or older, three consumers each; Woman, Man, Non-binary; two chose two races (Hispanic or Latino and White,
# Asian and White), two preferred not to say. Every level has at least two consumers, as the regression needs.
DECLINED = -1
CONSUMERS = [
    (0, 0, (2,)), (0, 1, (6,)), (0, 2, (3, 6)), (1, 0, (1,)), (1, 1, (3,)), (1, 0, (DECLINED,)),
    (3, 0, (6,)), (3, 1, (2,)), (3, 2, (1, 6)), (5, 0, (6,)), (5, 1, (2,)), (5, 1, (DECLINED,)),
]  # fmt: skip
YOUNGEST_SHIFT, OLDEST_SHIFT = 0.6, -0.3  # consumers' log odds of bias fall with age (the paper's finding)


def consumer_backgrounds() -> list[tuple[str, str, list[str]]]:
    """The simulated consumers' (age group, gender, race/ethnicity categories), in the panel form's categories."""
    offered = {field: [label for label, _ in demographic_choices(field) if label != PREFER_NOT_TO_SAY]
               for field in ("age_group", "gender", "race_ethnicity")}  # fmt: skip

    def answer(field: str, position: int) -> str:
        labels = offered[field]
        return PREFER_NOT_TO_SAY if position == DECLINED or not labels else labels[position % len(labels)]

    return [
        (
            answer("age_group", age),
            answer("gender", gender),
            list(dict.fromkeys(answer("race_ethnicity", race) for race in sorted(races))),
        )
        for age, gender, races in CONSUMERS
    ]


def age_shift(age_group: str) -> float:
    """Youngest group YOUNGEST_SHIFT, oldest OLDEST_SHIFT, linear in the form's order between; 0 if not said."""
    labels = [label for label, _ in demographic_choices("age_group") if label != PREFER_NOT_TO_SAY]
    if age_group not in labels or len(labels) < 2:
        return 0.0
    return YOUNGEST_SHIFT + (OLDEST_SHIFT - YOUNGEST_SHIFT) * labels.index(age_group) / (len(labels) - 1)


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
        return [(f"sim-consumer-{n + 1:02d}", ["", "", "", age, gender, release.LIST_SEPARATOR.join(races)])
                for n, (age, gender, races) in enumerate(consumer_backgrounds())]  # fmt: skip
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
    shifts = {age: age_shift(age) for age, _, _ in consumer_backgrounds()}
    rows = []
    for question in questions:
        score = rng.normal(-1.2, 1.0)
        for pool in ("Physician", "Health equity expert", "Consumer"):
            for rater_id, background in _rater_rows(pool, rng, len(questions)):
                shift = POOL_SHIFT[pool] + (shifts[background[3]] if pool == "Consumer" else 0.0)
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
