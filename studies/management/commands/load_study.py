"""Load a study file (studies/DESIGN.md, "Study files"): create the study, or find it unchanged."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from studies.study_files import StudyRefused, decode_file, describe, load_study_text
from studies.study_yaml import StudyFileError


class Command(BaseCommand):
    help = (
        "Create the study a YAML study file defines and print 'study <id> <name>'. Loading the same file again "
        "changes nothing; a changed file for a study with data is refused unless --new-version is given. A file "
        "with any problem creates nothing: every problem is listed with its line and key."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path, help="The study file (YAML), e.g. studies/definitions/qpain.yaml.")
        parser.add_argument(
            "--new-version",
            action="store_true",
            help="When the study has data and its file changed, make a new study '<name> (v2)' (v3, ...) beside it.",
        )

    def handle(self, *args, file: Path, new_version: bool, **options):
        try:
            text = decode_file(file.read_bytes())
            loaded = load_study_text(text, new_version=new_version)
        except OSError as error:
            raise CommandError(f"{file}: {error.strerror}") from None
        except StudyFileError as error:
            problems = "\n".join(f"  {problem}" for problem in error.problems)
            raise CommandError(f"{file}: nothing was created; {len(error.problems)} problem(s):\n{problems}") from None
        except StudyRefused as refused:
            raise CommandError(f"{file}: refused: {refused}") from None
        self.stdout.write(f"study {loaded.study.pk} {loaded.study.name}")
        self.stdout.write(describe(loaded))
