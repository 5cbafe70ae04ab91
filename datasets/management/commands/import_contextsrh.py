from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from datasets.importers import ImportRejected
from datasets.importers.contextsrh import CONTEXTSRH_DATASET, CONTEXTSRH_FILE, import_contextsrh
from datasets.variants.contextsrh_recipes import ensure_contextsrh_recipe


class Command(BaseCommand):
    help = (
        "Import ContextSRH's 187 questions (labeled_contexual_questions_submit.csv) as a plain dataset, each with its "
        "source and the attributes (age, location, sex) it depends on. All or nothing; a re-import adds nothing. "
        "Also makes the recipe ContextSRH's answers are asked with. Make the context variants with: "
        "generate_variants contextsrh --base NAME."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--file", default=str(CONTEXTSRH_FILE), metavar="PATH",
            help="The CSV (default: the committed copy in datasets/demo_data/contextsrh).",
        )  # fmt: skip
        parser.add_argument("--dataset", default=CONTEXTSRH_DATASET, help=f"Default: {CONTEXTSRH_DATASET!r}.")

    def handle(self, *args, **opts):
        path = Path(opts["file"])
        if not path.is_file():
            raise CommandError(f"{path}: no such file")
        try:
            report = import_contextsrh(lambda: path.open("rb"), dataset=opts["dataset"])
        except ImportRejected as rejected:
            raise CommandError(f"{path}: {rejected.summary()}") from None
        except OSError as error:
            raise CommandError(f"{path}: cannot be read ({error.strerror or error})") from None
        for line in report.summary_lines():
            self.stdout.write(line)
        self.stdout.write(f"Recipe: {ensure_contextsrh_recipe().name}")
        self.stdout.write(self.style.SUCCESS(f"Imported {path} into {opts['dataset']!r}"))
