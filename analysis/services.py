"""Running analyses: the entry points for the dashboard button (a Celery task) and the `analyze` command."""

import logging
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd
from django.db import transaction

from jobs.models import task_time_limit
from studies.models import Judge, JudgeRating, Study

from . import tables
from .models import TABLE_FIELDS, AnalysisRun
from .notebook_extras import extra_tables
from .plan_loading import plan_table, study_plan_table, table_csv
from .plan_parameters import PlanParameterError, study_plans
from .plans import SCORE_PLANS, AnalysisPlan
from .results import studies_frames

logger = logging.getLogger(__name__)

PROGRESS_INTERVAL_SECONDS = 0.5
# Loading the ratings is the first tenth of a run, the statistics the rest but saving.
LOADED_AT, COMPUTED_AT = 10, 95

Progress = Callable[[int, str], None]


def start_analysis(
    *, study: Study | None, user, reference_levels: dict[str, str] | None = None, seed: int = 0
) -> AnalysisRun:
    """Queue an analysis of a study's ratings (or every study's, study=None); a worker runs it."""
    from .tasks import run_analysis as run_analysis_task

    run = AnalysisRun.objects.create(
        study=study, created_by=user, reference_levels=reference_levels or {}, seed=seed, step="Waiting for a worker"
    )
    transaction.on_commit(lambda: run_analysis_task.delay(run.id))
    return run


def build_report(
    frames: dict[str, pd.DataFrame],
    *,
    seed: int = 0,
    reference_levels: dict[str, str] | None = None,
    progress: Progress | None = None,
) -> tables.Report:
    """The report of three release-format frames, its progress mapped onto LOADED_AT..COMPUTED_AT percent."""

    def report_progress(*, step: str = "", fraction: float = 0.0) -> None:  # tables.build_report calls it so
        if progress is not None:
            share = min(max(float(fraction), 0.0), 1.0)
            progress(LOADED_AT + round(share * (COMPUTED_AT - LOADED_AT)), step)

    return tables.build_report(frames, seed=seed, reference_levels=reference_levels or None, progress=report_progress)


def extra_csv_texts(frames, *, seed: int = 0) -> dict[str, str]:
    """The tables beside the four (`notebook_extras`) that have rows, as the CSV text `analyze` writes."""
    return {name: table.to_csv(index=False) for name, table in extra_tables(frames, seed=seed).items() if len(table)}


def report_csv_texts(report: tables.Report) -> dict[str, str]:
    """The four tables as the CSV text `write_report` writes, by table name (the files `analyze --out` holds)."""
    with tempfile.TemporaryDirectory() as directory:
        tables.write_report(report, directory)
        return {name: (Path(directory) / f"{name}.csv").read_text(encoding="utf-8") for name in TABLE_FIELDS}


def plans_of(study: Study) -> list[AnalysisPlan]:
    """The plans the study's definition names, with its parameters; `plan_parameters.PlanParameterError` says
    what is wrong with them. None named: none (the study's ratings still get their tables)."""
    definition = study.definition if isinstance(study.definition, dict) else {}
    return study_plans(definition.get("plans"))


def has_rating_tables(study: Study | None) -> bool:
    """EquityMedQA's tables come from ratings: every study's together, or one study with a rubric (a study read by
    scorers only has no ratings to tabulate)."""
    return study is None or study.rubric_version_id is not None


def judge_report(study: Study, *, seed: int = 0):
    """The study's judge tables (`analysis.judge_report`) when people (or the labels its file names as references)
    and a judge rated its rubric, else None."""
    from .judge_references import judge_report_inputs
    from .judge_report import judge_report as report_of
    from .results import HUMAN, JUDGE, results_table

    if study.rubric_version_id is None or not JudgeRating.objects.filter(item__study=study).exists():
        return None
    results, options = judge_report_inputs(study, results_table(study, kinds=(HUMAN, JUDGE)))
    return report_of(results, study.rubric_version.definition, study=study.name, seed=seed, **options)


def medic_plan(study: Study) -> AnalysisPlan | None:
    """The study's `medic` plan with its parameters, None when its file does not name it."""
    return next((plan for plan in plans_of(study) if plan.reads_judges), None)


def medic_report(study: Study, *, factors: tuple[str, ...] | None = None):
    """The study's MEDIC tables (`analysis.medic.MedicReport`) from its judge ratings, None when no judge rated a
    MEDIC field (`hallucinations`, `omissions`, `manage`, `visit`, `resource`). A judge's model is its source's
    name (MEDIC runs one judge per rubric part, so several judges share a model). Factors: those given, else the
    `medic` plan's (its `factors` parameter, by default style, grade, descriptor, gender, race; the default when
    the file's plans have a problem), kept when the judged items' levels carry them."""
    from . import medic
    from .plans import MEDIC
    from .results import JUDGE, results_table

    results = results_table(study, kinds=(JUDGE,))
    fields = [*medic.LIST_OUTCOMES, *medic.CATEGORY_OUTCOMES]
    if results.empty or not results["field"].astype(str).isin(fields).any():
        return None
    if factors is None:
        try:
            plan = medic_plan(study)
        except PlanParameterError:  # `analyze` refuses such a file; the page says why and uses the default
            plan = None
        factors = (plan or MEDIC).factors
    judges = Judge.objects.filter(name__in=results["who"].astype(str).unique().tolist()).select_related("source")
    models = {judge.name: judge.source.name for judge in judges}
    return medic.medic_report(results, study=study.name, judge_models=models, factors=factors)


def contextsrh_plan(study: Study) -> AnalysisPlan | None:
    """The study's `contextsrh` plan with its parameters, None when its file does not name it."""
    return next((plan for plan in plans_of(study) if plan.reads_ratings_and_scores), None)


def contextsrh_report(
    study: Study, *, scorer: str | None = None, k: int | None = None, plan: AnalysisPlan | None = None
):
    """The study's ContextSRH tables (`analysis.contextsrh.ContextSRHReport`) from its results table (its people's
    ratings and its scores of the `scorer`), None when no context answer has a score of that scorer. `scorer`
    and `k` are those given, else the plan's (given, else the study's `contextsrh` plan, else the plan's
    defaults: `minilm_cosine`, a majority). The scores are the study's scoring steps' (`score_answers`): the
    embedding model is not run here."""
    from . import contextsrh
    from .plans import CONTEXTSRH
    from .results import HUMAN, SCORER, results_table

    if plan is None:
        try:
            plan = contextsrh_plan(study)
        except PlanParameterError:  # `analyze` refuses such a file; a page would use the defaults
            plan = None
    options = (plan or CONTEXTSRH).options
    scorer = scorer or str(options["scorer"])
    if k is None and isinstance(options["k"], int):
        k = options["k"]
    results = results_table(study, kinds=(HUMAN, SCORER), scorers=[scorer])
    if results.empty or not contextsrh.has_similarities(results, scorer=scorer):
        return None
    return contextsrh.contextsrh_report(results, study=study.name, scorer=scorer, k=k)


def compute_plans(
    plans: list[AnalysisPlan] | None = None, *, study: Study | None = None, progress: Progress | None = None
) -> list[tuple[AnalysisPlan, pd.DataFrame]]:
    """Each plan's table (default: every plan) over the study's answers (from its results table), or every answer
    in the database without a study (answers need not belong to one), leaving out plans without scored answers:
    an EquityMedQA-only database gives none. Plans with a report of their own are not among them: `medic_report`,
    `contextsrh_report`."""
    found = []
    for plan in SCORE_PLANS.values() if plans is None else [plan for plan in plans if not plan.own_report]:
        if progress is not None:
            progress(COMPUTED_AT, f"Computing {plan.title}")
        table = plan_table(plan) if study is None else study_plan_table(plan, study)
        if table is not None:
            found.append((plan, table))
    return found


class _ProgressWriter:
    """Writes a run's progress and step, at most every PROGRESS_INTERVAL_SECONDS (the page polls every 2 s)."""

    def __init__(self, run_id: int):
        self.run_id = run_id
        self.written_at = float("-inf")
        self.percent, self.step = 0, ""  # the latest, written or not

    def __call__(self, percent: int, step: str, *, force: bool = False) -> None:
        self.percent, self.step = max(0, min(100, int(percent))), step[:200]
        now = time.monotonic()
        if not force and now - self.written_at < PROGRESS_INTERVAL_SECONDS:
            return
        self.written_at = now
        AnalysisRun.objects.filter(id=self.run_id, status=AnalysisRun.Status.RUNNING).update(
            progress=self.percent, step=self.step
        )


def run_analysis(*, run_id: int) -> AnalysisRun | None:
    """Claim a queued run and compute its report; a run another worker is computing is left alone.

    A run still marked running after the task time limit belonged to a worker that died (nothing but its
    progress was written), so the redelivered task may compute it again. Any error fails the run with its
    message, shown on the run's page.
    """
    if not AnalysisRun.claim(run_id, stale_after=task_time_limit(), progress=0, step="Loading the ratings"):
        return None
    run = AnalysisRun.objects.select_related("study").get(id=run_id)
    progress = _ProgressWriter(run.id)
    study = run.study
    try:
        texts = {}
        if has_rating_tables(study):
            progress(0, "Loading the ratings")
            frames = studies_frames(study)  # from the results table: the ratings export's rows, order and values
            run.ratings = {kind: len(frame) for kind, frame in frames.items()}
            progress(LOADED_AT, "Computing the tables")
            report = build_report(frames, seed=run.seed, reference_levels=run.reference_levels, progress=progress)
            texts = report_csv_texts(report)
            run.extra_tables = extra_csv_texts(frames, seed=run.seed)
        # Every plan over every answer for all studies; a study's own plans over its own answers.
        computed = compute_plans(progress=progress) if study is None else compute_plans(
            plans_of(study), study=study, progress=progress
        )  # fmt: skip
        progress(COMPUTED_AT, "Saving the tables", force=True)
        run.plan_tables = {plan.table: table_csv(table) for plan, table in computed}
    except Exception as error:  # whatever went wrong, the run's page must say what
        logger.exception("analysis run %s failed", run.id)
        # Where it failed, and the ratings it had counted.
        run.fail(error=f"{type(error).__name__}: {error}", progress=progress.percent, step=progress.step,
                 ratings=run.ratings)  # fmt: skip
    else:
        tables = {TABLE_FIELDS[name]: text for name, text in texts.items()}
        run.finish(progress=100, step="Finished", error="", ratings=run.ratings, plan_tables=run.plan_tables,
                   extra_tables=run.extra_tables, **tables)  # fmt: skip
    return run
