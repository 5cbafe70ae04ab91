from functools import partial

from django.core.management.base import BaseCommand

from datasets.importers.answers import AnswerOptions
from datasets.models import AnswerSource
from datasets.services import import_answers

from ._options import run_import


class Command(BaseCommand):
    help = (
        "Import answers from a CSV/JSONL file and attach them to questions by id (question_id) or exact text "
        "(question). The source is created if it does not exist. All rows or nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", metavar="PATH")
        parser.add_argument("--source", required=True, help="Answer source name, e.g. 'Med-PaLM 2'.")
        parser.add_argument("--source-kind", default=AnswerSource.Kind.IMPORTED, choices=AnswerSource.Kind.values)
        parser.add_argument("--model", default="", help="Model name, when every answer comes from one model.")
        parser.add_argument("--dataset", help="Dataset of the questions (otherwise a 'dataset' column).")
        parser.add_argument("--question-id-column", default="question_id")
        parser.add_argument("--question-column", default="question")
        parser.add_argument("--answer-column", default="answer")
        parser.add_argument("--provenance", default="", help="Where the answers came from, in words.")
        parser.add_argument(
            "--study", type=int, metavar="ID", help="The study the answers are imported into (each is linked to it)."
        )

    def handle(self, *args, **opts):
        options = AnswerOptions(
            source=opts["source"],
            source_kind=opts["source_kind"],
            model=opts["model"],
            dataset=opts["dataset"],
            question_id_column=opts["question_id_column"],
            question_column=opts["question_column"],
            answer_column=opts["answer_column"],
            provenance_note=opts["provenance"],
            study=opts["study"],
        )
        run_import(self, opts["path"], partial(import_answers, options=options))
