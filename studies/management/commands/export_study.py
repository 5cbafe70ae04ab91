"""Write a study back as its study file (studies/DESIGN.md, "Study files")."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from studies.models import Study
from studies.study_files import export_study


class Command(BaseCommand):
    help = "Write a study's definition as a YAML study file (to standard output, or --out FILE)."

    def add_arguments(self, parser):
        parser.add_argument("study", type=int, help="The study's id.")
        parser.add_argument("--out", type=Path, help="The file to write (replaced if present); default: stdout.")

    def handle(self, *args, study: int, out: Path | None, **options):
        found = Study.objects.filter(pk=study).first()
        if found is None:
            raise CommandError(f"There is no study with id {study}.")
        text = export_study(found)
        if out is None:
            self.stdout.write(text, ending="")
            return
        partial = out.with_name(f".{out.name}.partial")  # renamed when complete: never half a file
        partial.write_text(text, encoding="utf-8")
        partial.replace(out)
        self.stdout.write(f"study {found.pk} {found.name} written to {out}")
