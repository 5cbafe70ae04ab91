"""`seed_demo`: the demo's data (`datasets.demo`), then its studies and simulated ratings (`studies.demo`,
`studies.demo_ratings`). It lives in studies because it needs both apps and `datasets` never imports `studies`."""

import secrets

from django.core.management.base import BaseCommand, CommandError

from datasets.demo import seed_demo
from datasets.importers import ImportRejected
from studies.demo import seed_demo_studies
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

    def handle(self, *args, **options):
        try:
            seed = seed_demo()
        except ImportRejected as rejected:
            raise CommandError(f"the committed demo data no longer imports: {rejected.summary()}") from None
        studies = seed_demo_studies()
        simulated = seed_simulated_ratings()
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
