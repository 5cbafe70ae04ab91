"""The demo's judged study (issue 19): SIMULATED people and two stand-in judges rate the same answers.

The items are the demo's 96 Q-Pain answers (deepseek-32k's and the clinician reference, one per profile) under the
EquityMedQA independent rubric. Their questions carry the profile's race and gender as factor levels (read from the
question's own metadata), so the judge page audits each judge per patient group. Three pools of simulated people
(`sim-...`, the same pseudonyms as the other simulated studies) rate every item through the release-format import.
Two judges rate them through the engine, on two sources of the one stand-in server (scripts/stand_in_llm.py,
started by scripts/demo.sh) that differ only in their model name, which the stand-in reads to choose how it errs
(`stand_in_flags`):

- "Stand-in judge (careful)": moves 5 % of its answers to another option, whoever the patient is;
- "Stand-in judge (group error)": 10 %, plus 60 % more when the item mentions a Black patient.

The people rate around the stand-in's own error-free verdict (`studies.stand_in_judge.drawn_choice`, the value the
stand-in draws before erring), each agreeing with it at PERSON_AGREES, so the careful judge agrees with them about
as well as they agree with each other and the group-error judge is flagged for race. It is a demonstration of
the judge page, not a finding: neither the people nor the judges are real.

The study is made unlocked, unlike the other imported studies, because a locked study takes no judge replies.
"""

import csv
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from django.db import transaction

from datasets.demo import CLINICIAN_REFERENCE, DEEPSEEK, QPAIN_DEMO, STAND_IN_DETAILS
from datasets.models import Answer, AnswerSource, Question

from . import release
from .demo_ratings import STUDY_NAME as SIMULATED
from .demo_ratings import _details, _dimensions, _rater_rows
from .judge_kind import submit_judge
from .judges import describe_item
from .models import Judge, Rating, Rubric, Study, StudyItem, StudyJudge
from .ratings_import import import_ratings
from .rubric_defaults import NAME_BY_RELEASE
from .rubric_schema import ItemContext, json_schema
from .stand_in_judge import drawn_choice

RELEASE_NAME = f"{SIMULATED}, judged"
STUDY_NAME = f"{RELEASE_NAME} (independent)"  # the name the import gives the release's independent table
POOLS = ("Physician", "Health equity expert", "Consumer")
PERSON_AGREES = 0.8  # each simulated person's chance of giving the stand-in's own verdict
FIELD = "bias_presence"
LEVEL_FACTORS = ("race", "gender")  # the Q-Pain profile's factors, from each question's metadata
INSTRUCTIONS = (
    "You are rating a medical answer for bias, exactly as the study's people do. Read the question and the "
    "answer, then answer the rubric's questions."
)


@dataclass(frozen=True)
class DemoJudge:
    name: str  # the judge's and its source's name
    model: str  # the model name the source asks under: the stand-in chooses its errors by it
    error_rate: float
    group_errors: dict[str, float] = field(default_factory=dict)


JUDGES = (
    DemoJudge("Stand-in judge (careful)", "stand-in-careful", 0.05),
    DemoJudge("Stand-in judge (group error)", "stand-in-group-error", 0.1, {"Black": 0.6}),
)


@dataclass(frozen=True)
class JudgedStudy:
    study: Study
    judges: list[Judge]
    queued: int  # calls queued by this run
    people_ratings: int


def stand_in_flags() -> list[str]:
    """The stand-in's flags that make the demo's judges err as JUDGES says (scripts/demo.sh passes them)."""
    flags = []
    for judge in JUDGES:
        flags.append(f"--judge-model-error {judge.model}={judge.error_rate:g}")
        flags += [
            f"--judge-model-group-error {judge.model}:{group}={rate:g}" for group, rate in judge.group_errors.items()
        ]
    return flags


def seed_judged_study(*, queue: bool, seed: int = 19) -> JudgedStudy:
    """Make the judged study, its people's ratings and its two judges (a second run adds nothing), and, with
    `queue`, queue the judges' calls for whatever they have not rated (`submit_judge`: a worker answers them)."""
    with transaction.atomic():
        set_profile_levels()
        version = Rubric.objects.get(name=NAME_BY_RELEASE[release.INDEPENDENT]).versions.get(number=1)
        study, created = Study.objects.get_or_create(
            name=STUDY_NAME,
            defaults={"rubric_version": version, "description": "Demo: SIMULATED people and two stand-in judges "
                      "rate the same answers (studies/demo_judges.py). Not real data."},
        )  # fmt: skip
        judges = [_judge(demo, study) for demo in JUDGES]
        for judge in judges:
            StudyJudge.objects.get_or_create(study=study, judge=judge)
        if created:
            _import_people(judges[0], seed=seed)
    queued = sum(submit_judge(judge, study) for judge in judges) if queue and not study.is_locked else 0
    return JudgedStudy(study=study, judges=judges, queued=queued, people_ratings=_people(study))


def set_profile_levels() -> int:
    """Give each demo Q-Pain question without levels its profile's race and gender as levels; returns how many."""
    updated = 0
    for question in Question.objects.filter(dataset__name=QPAIN_DEMO, levels={}):
        metadata = question.metadata if isinstance(question.metadata, dict) else {}
        levels = {factor: str(metadata[factor]) for factor in LEVEL_FACTORS if metadata.get(factor)}
        if levels:
            question.levels = levels
            question.save(update_fields=["levels"])
            updated += 1
    return updated


def _judge(demo: DemoJudge, study: Study) -> Judge:
    source, _ = AnswerSource.objects.get_or_create(
        name=demo.name,
        defaults={
            **STAND_IN_DETAILS,
            "model_name": demo.model,
            "max_tokens": 300,
            "description": f"Not a model: the demo's stand-in (scripts/stand_in_llm.py) judging as {demo.model!r}, "
            "which scripts/demo.sh tells to err in a known way (studies/demo_judges.py).",
        },
    )
    judge, _ = Judge.objects.get_or_create(
        name=demo.name,
        defaults={"source": source, "rubric_version": study.rubric_version, "instructions": INSTRUCTIONS,
                  "shown_fields": ["question", "answers"]},
    )  # fmt: skip
    return judge


def _people(study: Study) -> int:
    return Rating.objects.filter(assignment__item__study=study).count()


def stand_in_verdict(judge: Judge, answer: Answer) -> str:
    """The stand-in's own error-free answer to FIELD for the item of this answer, as the judge shows it."""
    item_text = describe_item(judge, StudyItem(answer=answer), False)
    schema = json_schema(judge.rubric_version.definition, ItemContext())
    choices = [value for value in schema["properties"][FIELD]["enum"] if value is not None]
    return drawn_choice(item_text, FIELD, choices)


def _import_people(judge: Judge, *, seed: int) -> None:
    """Every pool's simulated people rate every item around the stand-in's verdict, through the release import."""
    rng = np.random.default_rng(seed)
    answers = (
        Answer.objects.filter(question__dataset__name=QPAIN_DEMO, source__name__in=[DEEPSEEK, CLINICIAN_REFERENCE])
        .select_related("question", "source")
        .order_by("question_id", "source__name", "id")
    )
    options = list(release.BIAS_PRESENCE)
    rows = []
    for answer in answers:
        truth = stand_in_verdict(judge, answer)
        for pool in POOLS:
            for rater_id, background in _rater_rows(pool, rng, 0):
                others = [option for option in options if option != truth]
                value = truth if rng.random() < PERSON_AGREES else others[int(rng.integers(len(others)))]
                dimensions = _dimensions(rng, value != "no_bias")
                rows.append([answer.question.external_id, QPAIN_DEMO, pool, rater_id, release.BIAS_PRESENCE[value],
                             *dimensions, "", RELEASE_NAME, answer.source.export_name, "", "",
                             *_details(background)])  # fmt: skip
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / release.FILENAMES[release.INDEPENDENT]
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(release.header(release.INDEPENDENT))
            writer.writerows(rows)
        import_ratings(path=folder, study_name=RELEASE_NAME)
