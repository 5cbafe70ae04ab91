from functools import partial

from django.core.management.base import BaseCommand

from datasets.importers.questions import FORMATS, QuestionOptions
from datasets.services import import_questions

from ._options import run_import


class Command(BaseCommand):
    help = (
        "Import questions (and counterfactual pairs) from a file: EquityMedQA release CSVs (header-less), "
        "CSV/JSONL with a header, or the ContextSRH, Q-Pain, MedQA and BiasMedQA files. "
        "All rows or nothing; a re-import adds nothing twice."
    )

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="+", metavar="PATH")
        parser.add_argument("--dataset", help="Dataset name (default: from the file name or the format).")
        parser.add_argument("--format", default="auto", choices=FORMATS)
        parser.add_argument("--question-column", default="question")
        parser.add_argument("--id-column", default="id")
        parser.add_argument("--pair-column", help="Column with the second question of a counterfactual pair.")
        parser.add_argument("--dataset-column", help="Column naming each row's dataset.")

    def handle(self, *args, **opts):
        options = QuestionOptions(
            dataset=opts["dataset"],
            format=opts["format"],
            question_column=opts["question_column"],
            id_column=opts["id_column"],
            pair_column=opts["pair_column"],
            dataset_column=opts["dataset_column"],
        )
        for path in opts["paths"]:
            run_import(self, path, partial(import_questions, options=options))
