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
        parser.add_argument(
            "--base-only", action="store_true",
            help="Only answers to questions that are no variant (ContextSRH: the answers to the original questions).",
        )  # fmt: skip
        parser.add_argument(
            "--expect", action="append", default=[], metavar="QUESTION=ANSWER",
            help="Make every new item an attention check expecting this answer of a single-choice question of "
            "the rubric (ContextSRH's gate: --expect relevant=all); repeat for several.",
        )  # fmt: skip

    def handle(self, *args, study: int, base_only: bool, expect: list[str], **options):
        found = Study.objects.select_related("rubric_version").filter(pk=study).first()
        if found is None:
            raise CommandError(f"There is no study with id {study}.")
        expected = {}
        for entry in expect:
            key, sep, value = entry.partition("=")
            if not sep or not key.strip() or not value.strip():
                raise CommandError(f"--expect takes QUESTION=ANSWER, e.g. relevant=all; got {entry!r}.")
            expected[key.strip()] = value.strip()
        try:
            added = items_for_answers(study=found, base_only=base_only, expect=expected or None)
        except AssignmentError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(f"study {found.pk}: {added} items added, {found.items.count()} in all")
