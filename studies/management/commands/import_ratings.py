"""Load a ratings release (ratings_*.csv files or the workbook) for re-analysis."""

from django.core.management.base import BaseCommand, CommandError

from studies.ratings_import import RatingsImportError, import_ratings


class Command(BaseCommand):
    help = (
        "Import ratings in the EquityMedQA release format: a directory with any of ratings_independent.csv, "
        "ratings_pairwise.csv and ratings_counterfactual.csv, or equitymedqa_ratings.xlsx. Every row is "
        "checked first; if any is bad, each bad row is listed and nothing is imported."
    )

    def add_arguments(self, parser):
        parser.add_argument("path")
        parser.add_argument(
            "--study-name",
            help='Put the ratings in "<NAME> (independent)" etc. instead of the studies named in the files.',
        )

    def handle(self, *args, path: str, study_name: str | None, **options):
        try:
            report = import_ratings(path=path, study_name=study_name)
        except RatingsImportError as error:
            for problem in error.problems:
                self.stderr.write(problem)
            raise CommandError(str(error)) from error
        for label, count in sorted(report.created.items()):
            self.stdout.write(f"created {count} {label}")
        self.stdout.write(f"already present: {report.already_present} ratings")
        self.stdout.write(self.style.SUCCESS(f"Imported {report.created['ratings']} ratings."))
