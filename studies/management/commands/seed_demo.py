"""`seed_demo`: the demo's data (`datasets.demo`), then its studies and simulated ratings (`studies.demo`,
`studies.demo_ratings`). It lives in studies because it needs both apps and `datasets` never imports `studies`."""

import secrets

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from datasets.demo import seed_demo
from datasets.importers import ImportRejected
from studies.demo import seed_demo_studies
from studies.demo_contextsrh import seed_contextsrh
from studies.demo_judges import seed_judged_study
from studies.demo_medic import seed_medic
from studies.demo_ratings import STUDY_NAME as SIMULATED
from studies.demo_ratings import seed_simulated_ratings


class Command(BaseCommand):
    help = (
        "Load the demo data (Q-Pain answers from deepseek-32k and the Q-Pain clinician reference, counterfactual "
        "pairs, EquityMedQA samples, the 55 Q-Pain vignettes with the Q-Pain recipes) through the importers, and "
        "create one demo login per role. Idempotent: a re-run adds nothing twice, but it RESETS every demo user's "
        "password to a new random one, because passwords are stored only as hashes; each run prints the logins as "
        "'login <role> <username> <password>'."
    )

    def announce(self, step: str) -> None:
        """Progress on stderr (stdout is the summary that scripts and tests read): the seeding takes a minute."""
        if self.verbosity >= 1:
            self.stderr.write(f"seed_demo: {step}")

    def handle(self, *args, **options):
        self.verbosity = options["verbosity"]
        self.announce("datasets, answers and logins (MedQA's variants take the longest)")
        try:
            seed = seed_demo()
        except ImportRejected as rejected:
            raise CommandError(f"the committed demo data no longer imports: {rejected.summary()}") from None
        self.announce("the three demo studies, one per rubric")
        studies = seed_demo_studies()
        self.announce("simulated ratings for the analysis pages")
        simulated = seed_simulated_ratings()
        self.announce("the judged study")
        # With a broker a worker answers the judges' calls; without one (eager Celery) they would run here, now,
        # against a stand-in that may not be up, so they are left to `judge_study`.
        judged = seed_judged_study(queue=not settings.CELERY_TASK_ALWAYS_EAGER)
        self.announce("the MEDIC study (on the stand-in when it is up)")
        # MEDIC's stages follow each other, so its small study is run here, stage by stage, when the stand-in is up.
        medic = seed_medic(run=True)
        self.announce("the ContextSRH study (on the stand-in when it is up)")
        contextsrh = seed_contextsrh(run=True)  # likewise: answers, then scores, then items and ratings
        for login in seed.logins:
            self.stdout.write(f"login {login.role} {login.username} {login.password}")
        for dataset in seed.datasets:
            self.stdout.write(
                f"dataset {dataset.name!r}: {dataset.questions} questions, {dataset.pairs} pairs, "
                f"{dataset.answers} answers"
            )
        for demo in studies:
            self.stdout.write(
                f"study {demo.study.name!r} ({demo.study.rubric_version}): "
                f"{demo.items} items, {demo.assignments} assignments"
            )
        self.stdout.write(
            f"simulated ratings for the analysis pages: "
            f"{simulated.created.get('ratings', 0) + simulated.already_present} in the studies {SIMULATED!r}"
        )
        study = judged.study
        names = ", ".join(repr(judge.name) for judge in judged.judges)
        self.stdout.write(
            f"judged study {study.pk} {study.name!r}: {study.items.count()} items, {judged.people_ratings} simulated "
            f"people's ratings, judges {names} on the stand-in; {judged.queued} judge calls queued"
        )
        if not judged.queued and settings.CELERY_TASK_ALWAYS_EAGER:
            self.stdout.write(
                f"judges not run (no broker): with the stand-in up, python manage.py judge_study --study {study.pk} "
                f"--judge NAME --wait"
            )
        self.stdout.write(f"judge page: /analysis/studies/{study.pk}/judges/")
        if medic.ran:
            medic_page = f"/analysis/studies/{medic.study.pk}/medic/"
            self.stdout.write(f"MEDIC study {medic.study.pk} {medic.study.name!r} run on the stand-in: "
                              f"{medic.study.items.count()} judged answers; {medic_page}")  # fmt: skip
        else:
            self.stdout.write(f"MEDIC study {medic.study.pk} {medic.study.name!r} made, not run (the stand-in is not "
                              f"up): docs/reproducing.md, 'Running MEDIC'")  # fmt: skip
        study = contextsrh.study
        if contextsrh.ran:
            self.stdout.write(f"ContextSRH study {study.pk} {study.name!r} run on the stand-in: {study.items.count()} "
                              f"rated answers; /analysis/studies/{study.pk}/contextsrh/")  # fmt: skip
        else:
            self.stdout.write(f"ContextSRH study {study.pk} {study.name!r} made, not run (the stand-in is not up): "
                              f"docs/reproducing.md, 'Running ContextSRH'")  # fmt: skip
        consumer_study = studies[0].study
        self.stdout.write(
            f"panel link (a new consumer from a crowd panel): /panel/{consumer_study.pk}/"
            f"?PROLIFIC_PID=DEMO-{secrets.token_hex(4).upper()}&STUDY_ID=demo&SESSION_ID=demo"
        )
        totals = [sum(getattr(d, field) for d in seed.datasets) for field in ("questions", "pairs", "answers")]
        self.stdout.write(
            self.style.SUCCESS(
                f"Demo ready: {len(seed.datasets)} datasets, {totals[0]} questions, {totals[1]} pairs, "
                f"{totals[2]} answers, {len(seed.logins)} logins."
            )
        )
