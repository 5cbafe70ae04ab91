from django.core.management.base import BaseCommand

from datasets.importers.questions import MEDQA_DATASET
from datasets.management.commands._options import run_import
from scoring.release_import import VARIANT_DATASET, import_biasmedqa_responses


class Command(BaseCommand):
    help = (
        "Import BiasMedQA's released model responses (model_responses_*.csv or .csv.gz): one answer source per "
        f"model, the biased questions as variants in {VARIANT_DATASET!r}, and each released label as the score "
        "'released'. Needs the base MedQA questions. All rows or nothing; a re-import adds nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", metavar="PATH")
        parser.add_argument(
            "--base-dataset", default=MEDQA_DATASET, help=f"The MedQA test questions (default {MEDQA_DATASET!r})."
        )

        parser.add_argument(
            "--study", type=int, metavar="ID", help="The study the answers are imported into (each is linked to it)."
        )

    def handle(self, *args, **opts):
        def do_import(*, data, filename):
            return import_biasmedqa_responses(data, filename, base_dataset=opts["base_dataset"], study=opts["study"])

        run_import(self, opts["path"], do_import)
