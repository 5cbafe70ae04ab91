from django.core.management.base import BaseCommand, CommandError

from datasets.importers import ImportRejected
from datasets.importers.qpain import QPAIN_DATASET, QPAIN_DIR, import_qpain_vignettes
from datasets.models import Dataset
from datasets.variants.qpain_recipes import ensure_qpain_recipes


class Command(BaseCommand):
    help = (
        f"Import the Q-Pain release's five vignette files (data_<context>.csv) as the dataset {QPAIN_DATASET!r}: "
        '55 questions, 50 "Yes" vignettes with placeholders and 5 "No" ones. All or nothing; a re-import adds '
        "nothing. Also makes the two Q-Pain closed-prompt recipes that draw their worked examples from it."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "directory", nargs="?", default=str(QPAIN_DIR), metavar="DIR",
            help="The folder holding the five CSVs (default: the committed copy, datasets/demo_data/qpain).",
        )  # fmt: skip

    def handle(self, *args, **opts):
        try:
            report = import_qpain_vignettes(opts["directory"])
        except ImportRejected as rejected:
            raise CommandError(f"{opts['directory']}: {rejected.summary()}") from None
        for line in report.summary_lines():
            self.stdout.write(line)
        for recipe in ensure_qpain_recipes(Dataset.objects.get(name=QPAIN_DATASET)):
            self.stdout.write(f"Recipe: {recipe.name}")
        self.stdout.write(self.style.SUCCESS(f"Imported {opts['directory']}"))
