"""Write the analysis report (shared/spec/analysis-report.md) of the ratings in the database or of a release."""

import argparse
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from analysis import services, tables
from analysis.loading import load_frames_from_dir
from analysis.models import TABLE_FIELDS
from analysis.notebook_extras import extra_tables
from analysis.plan_loading import table_csv
from analysis.plan_parameters import PlanParameterError
from analysis.plans import SCORE_PLANS
from analysis.results import studies_frames
from analysis.results_frames import SourceNameClash
from studies.models import Study


def reference_level(text: str) -> tuple[str, str]:
    predictor, separator, level = text.partition("=")
    if not separator or not predictor.strip() or not level.strip():
        raise argparse.ArgumentTypeError(f"expected PREDICTOR=LEVEL, not {text!r}")
    return predictor.strip(), level.strip()


class Command(BaseCommand):
    help = (
        "Compute bias rates with bootstrap CIs, inter-rater reliability, the counterfactual cross-tab and the "
        "consumer regression, and write rates.csv, reliability.csv, counterfactual_crosstab.csv and "
        "consumer_regression.csv; beside them, each analysis plan's table (BiasMedQA: accuracy.csv and accuracy.png) "
        "when the database holds its scored answers. With --study, that study's ratings (when it has a rubric) and "
        "the plans its definition names, over its own answers (the medic plan: judge_means.csv, "
        "judge_agreement.csv and generalisation.csv from its judge ratings; the contextsrh plan: similarity.csv, "
        "group_tests.csv and human_agreement.csv from its scores and people's ratings). Runs in this process (no "
        "Celery worker needed)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--out", required=True, type=Path, help="Directory to write into (created if missing).")
        source = parser.add_mutually_exclusive_group()
        source.add_argument(
            "--study", type=int,
            help="Only this study (its id): its ratings, and the plans its definition names over its answers; "
                 "default: every study's ratings and every plan over every answer.",
        )  # fmt: skip
        source.add_argument(
            "--from", dest="from_dir", type=Path, metavar="DIR",
            help="Analyse the ratings_*.csv files of a release in DIR instead of the database.",
        )  # fmt: skip
        parser.add_argument("--seed", type=int, default=0, help="Seed of the bootstrap (default 0).")
        parser.add_argument(
            "--reference", action="append", default=[], type=reference_level, metavar="PREDICTOR=LEVEL",
            help="Reference level of a consumer-regression predictor, e.g. rater_age_group=65+ (repeatable); "
                 "default: each predictor's most frequent level.",
        )  # fmt: skip
        parser.add_argument(
            "--plan", action="append", default=[], choices=sorted(SCORE_PLANS), metavar="NAME",
            help=f"Only this analysis plan (repeatable; {', '.join(sorted(SCORE_PLANS))}); default: every plan with "
                 "scored answers in the database. Not with --study (the study names its plans) or --from.",
        )  # fmt: skip

    def handle(self, *args, out: Path, study: int | None, from_dir: Path | None, seed: int, reference, **options):
        chosen = [SCORE_PLANS[name] for name in dict.fromkeys(options["plan"])]
        if chosen and (study is not None or from_dir is not None):
            raise CommandError(
                "--plan reads every answer in the database: it cannot be combined with --study (the study's "
                "definition names its plans) or --from."
            )
        the_study = self._study(study)
        if the_study is not None:
            try:
                chosen = services.plans_of(the_study)
            except PlanParameterError as error:
                raise CommandError(f"The plans of study {the_study.pk} ({the_study.name}): {error}") from None
        out.mkdir(parents=True, exist_ok=True)
        if from_dir is not None or services.has_rating_tables(the_study):
            self._write_rating_tables(from_dir, the_study, out, seed, reference, options["verbosity"])
        else:
            self.stdout.write(f"Study {the_study.pk} has no rubric: no ratings, so no rating tables.")
        if the_study is not None:
            self._write_judge_tables(the_study, out, seed)
            if any(plan.reads_judges for plan in chosen):
                self._write_medic_tables(the_study, out)
            for plan in (plan for plan in chosen if plan.reads_ratings_and_scores):
                self._write_contextsrh_tables(the_study, out, plan)
            self._write_plans(chosen, out, options["verbosity"], study=the_study)
        elif from_dir is None:  # plans read answers, which a release of ratings does not hold
            self._write_plans(chosen, out, options["verbosity"])
        self.stdout.write(self.style.SUCCESS(f"Written to {out}"))

    def _write_rating_tables(self, from_dir, study, out: Path, seed: int, reference, verbosity: int) -> None:
        try:
            frames = load_frames_from_dir(from_dir) if from_dir else studies_frames(study)
        except (SourceNameClash, FileNotFoundError) as error:
            raise CommandError(str(error)) from error
        for kind, frame in frames.items():
            self.stdout.write(f"{kind}: {len(frame)} ratings")
        report = services.build_report(
            frames, seed=seed, reference_levels=dict(reference), progress=self._progress(verbosity)
        )
        tables.write_report(report, out)
        for name in TABLE_FIELDS:
            self.stdout.write(f"{name}.csv: {len(getattr(report, name))} rows")
        # Beside the four, never instead: the authors' per-dimension counterfactual and filtered-set tables.
        for name, table in extra_tables(frames, seed=seed).items():
            if len(table):  # written only with rows, as runs store them
                table.to_csv(out / name, index=False)
                self.stdout.write(f"{name}: {len(table)} rows")

    def _write_judge_tables(self, study, out: Path, seed: int) -> None:
        report = services.judge_report(study, seed=seed)
        if report is None:
            return
        for name, table in report.tables().items():
            table.to_csv(out / f"{name}.csv", index=False)
            self.stdout.write(f"{name}.csv: {len(table)} rows")

    def _write_medic_tables(self, study, out: Path) -> None:
        report = services.medic_report(study)
        if report is None:
            self.stdout.write(f"medic: no judge rated a MEDIC field of study {study.pk}, its tables not written")
            return
        for name, table in report.tables().items():
            (out / name).write_text(table_csv(table), encoding="utf-8")
            self.stdout.write(f"{name}: {len(table)} rows (medic)")

    def _write_contextsrh_tables(self, study, out: Path, plan) -> None:
        report = services.contextsrh_report(study, plan=plan)
        if report is None:
            scorer = plan.options["scorer"]
            self.stdout.write(f"contextsrh: no context answer of study {study.pk} has a {scorer} score, its tables "
                              "not written")  # fmt: skip
            return
        for name, table in report.tables().items():
            (out / name).write_text(table_csv(table), encoding="utf-8")
            self.stdout.write(f"{name}: {len(table)} rows (contextsrh)")

    def _write_plans(self, chosen, out: Path, verbosity: int, study=None) -> None:
        if study is not None and not chosen:
            self.stdout.write(f"Study {study.pk} names no analysis plan.")
            return
        plans = chosen if study is not None else chosen or None
        computed = services.compute_plans(plans, study=study, progress=self._progress(verbosity))
        for plan, table in computed:
            (out / plan.table).write_text(table_csv(table), encoding="utf-8")
            self.stdout.write(f"{plan.table}: {len(table)} rows ({plan.name})")
            if plan.plot is not None:
                (out / f"{plan.stem}.png").write_bytes(plan.figure(table, fmt="png"))
                self.stdout.write(f"{plan.stem}.png")
        written = {plan.name for plan, _ in computed}
        for plan in (plan for plan in chosen if plan.name not in written and not plan.own_report):
            whose = f" of study {study.pk}" if study is not None else ""
            self.stdout.write(f"{plan.name}: no scored answers{whose}, {plan.table} not written")

    def _study(self, study_id: int | None) -> Study | None:
        if study_id is None:
            return None
        study = Study.objects.filter(pk=study_id).first()
        if study is None:
            raise CommandError(f"There is no study with id {study_id}.")
        return study

    def _progress(self, verbosity: int):
        if verbosity < 2:
            return None
        shown = {"step": None}

        def show(percent: int, step: str) -> None:
            if step != shown["step"]:
                shown["step"] = step
                self.stderr.write(f"{percent:3d} % {step}")

        return show
