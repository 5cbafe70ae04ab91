"""Write a study's ratings (or every study's) in the EquityMedQA release format."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from studies.exports import ExportError, write_csv_files, write_workbook
from studies.models import Study
from studies.release import WORKBOOK


class Command(BaseCommand):
    help = "Export current ratings as ratings_*.csv files or as equitymedqa_ratings.xlsx."

    def add_arguments(self, parser):
        parser.add_argument("--out", required=True, type=Path, help="Directory to write into (created if missing).")
        parser.add_argument("--format", choices=["csv", "xlsx"], default="csv")
        parser.add_argument("--study", type=int, help="Only this study's ratings (its id); default: every study.")

    def handle(self, *args, out: Path, format: str, study: int | None, **options):
        chosen = None
        if study is not None:
            chosen = Study.objects.filter(pk=study).first()
            if chosen is None:
                raise CommandError(f"There is no study with id {study}.")
        out.mkdir(parents=True, exist_ok=True)
        try:
            if format == "xlsx":
                counts = write_workbook(out / WORKBOOK, study=chosen)
            else:
                counts = write_csv_files(out, study=chosen)
        except ExportError as error:
            raise CommandError(str(error)) from error
        for name, rows in counts.items():
            self.stdout.write(f"{name}: {rows} ratings")
        self.stdout.write(self.style.SUCCESS(f"Written to {out}"))
