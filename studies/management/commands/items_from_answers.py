"""Make an item of every answer linked to a study that is not one yet (studies/DESIGN.md, "Judges").

For a study whose rubric shows one answer, after an import or a generation job linked answers to it (e.g.
BiasMedQA's released responses, rated by the auto-evaluator judge): `studies.assignment.items_for_answers`.
"""

from django.core.management.base import BaseCommand, CommandError

from studies.assignment import AssignmentError, items_for_answers
from studies.models import Study


class Command(BaseCommand):
    help = "Make an item (one answer shown) of every answer linked to the study that is not an item yet."

    def add_arguments(self, parser):
        parser.add_argument("--study", type=int, required=True, help="The study's id.")

    def handle(self, *args, study: int, **options):
        found = Study.objects.select_related("rubric_version").filter(pk=study).first()
        if found is None:
            raise CommandError(f"There is no study with id {study}.")
        try:
            added = items_for_answers(study=found)
        except AssignmentError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(f"study {found.pk}: {added} items added, {found.items.count()} in all")
