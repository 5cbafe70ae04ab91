from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from datasets.importers import ImportRejected
from datasets.importers.medic import MEDIC_DATASET, import_medic_files, medic_file


class Command(BaseCommand):
    help = (
        "Import MEDIC JSONL files (Desire, Prompt, Answer and Style records) as the questions of one dataset, "
        "each linked to the record it came from (Desire_source_id / Prompt_source_id), and the answers as answers "
        "of a source per chatbot_name. All files or nothing; a re-import adds nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="+", metavar="FILE")
        parser.add_argument("--dataset", default=MEDIC_DATASET, help=f"Default: {MEDIC_DATASET!r}.")
        parser.add_argument(
            "--study", type=int, metavar="ID", help="The study the answers are imported into (each is linked to it)."
        )

    def handle(self, *args, **opts):
        missing = [path for path in opts["paths"] if not Path(path).is_file()]
        if missing:
            raise CommandError("\n".join(f"{path}: no such file" for path in missing))
        files = [medic_file(path) for path in opts["paths"]]
        try:
            report = import_medic_files(files, dataset=opts["dataset"], study=opts["study"])
        except ImportRejected as rejected:
            raise CommandError(rejected.summary()) from None
        except OSError as error:
            raise CommandError(f"cannot be read ({error.strerror or error})") from None
        for line in report.summary_lines():
            self.stdout.write(line)
        self.stdout.write(self.style.SUCCESS(f"Imported {len(files)} file(s) into {opts['dataset']!r}"))
