"""Write a study's results table (analysis/results.py) as DIR/results.csv."""

import os
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from analysis.results import FILENAME, results_table, write_results
from studies.models import Study


class Command(BaseCommand):
    help = (
        "Write one study's observations (ratings by people, scores; one row per field) as DIR/results.csv, one "
        "long table for pandas or R: study, item, question, base_question, levels, condition, source, who, kind, "
        "pool, field, value and more (analysis/DESIGN.md, 'The results table')."
    )

    def add_arguments(self, parser):
        parser.add_argument("--study", type=int, required=True, help="The study's id.")
        parser.add_argument("--out", required=True, type=Path, help="Directory to write into (created if missing).")

    def handle(self, *args, study: int, out: Path, **options):
        chosen = Study.objects.filter(pk=study).first()
        if chosen is None:
            raise CommandError(f"There is no study with id {study}.")
        try:  # before any work: a directory we cannot write says so at once
            out.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise CommandError(f"cannot write to {out}: {error.strerror or error}") from error
        if not os.access(out, os.W_OK | os.X_OK):
            raise CommandError(f"cannot write to {out}: permission denied")
        table = results_table(chosen)
        try:
            path = write_results(table, out)
        except OSError as error:
            raise CommandError(f"cannot write {out / FILENAME}: {error.strerror or error}") from error
        self.stdout.write(f"{len(table)} rows of study {chosen.pk} ({chosen.name})")
        self.stdout.write(self.style.SUCCESS(f"Written to {path}"))
