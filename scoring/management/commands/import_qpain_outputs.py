from django.core.management.base import BaseCommand

from datasets.management.commands._options import run_import
from scoring.qpain_import import DEFAULT_SOURCE, import_qpain_outputs


class Command(BaseCommand):
    help = (
        "Import a released Q-Pain run's outputs (e.g. deepseek-32k_qpain_outputs.jsonl): the base vignettes if "
        "missing, the run's variants (qpain generator, names read from the file), one answer per record of the "
        "source (an imported release), and its log-probabilities as the scores released_p_no, released_p_yes, "
        "released_p_high and released_p_low v1 (missing where null). All or nothing; a re-import adds nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", metavar="PATH")
        parser.add_argument(
            "--source", default=DEFAULT_SOURCE, help=f"The answer source's name (default {DEFAULT_SOURCE!r})."
        )
        parser.add_argument(
            "--study", type=int, metavar="ID", help="The study the answers are imported into (each is linked to it)."
        )

    def handle(self, *args, **opts):
        def do_import(*, data, filename):
            return import_qpain_outputs(data, filename, source_name=opts["source"], study=opts["study"])

        run_import(self, opts["path"], do_import)
