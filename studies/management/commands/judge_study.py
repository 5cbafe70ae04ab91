"""Ask a judge about every item of a study it has not replied to yet (studies/DESIGN.md, "Judges")."""

from django.core.management.base import BaseCommand, CommandError

from studies.judges import JudgeError, run_judge
from studies.models import Judge, Study
from studies.transitions import StudyLocked


class Command(BaseCommand):
    help = "Run a judge over a study: one reply per item and repeat, stored as a rating or as a failure."

    def add_arguments(self, parser):
        parser.add_argument("--study", type=int, required=True, help="The study's id.")
        parser.add_argument("--judge", required=True, help="The judge's name.")

    def handle(self, *args, study: int, judge: str, **options):
        found = Study.objects.filter(pk=study).first()
        if found is None:
            raise CommandError(f"There is no study with id {study}.")
        named = Judge.objects.select_related("source", "rubric_version").filter(name=judge).first()
        if named is None:
            raise CommandError(f"There is no judge named {judge!r}.")
        try:
            run = run_judge(named, found)
        except (JudgeError, StudyLocked) as error:
            raise CommandError(str(error)) from None
        for problem in run.call_errors:
            self.stderr.write(f"no reply: {problem}")
        self.stdout.write(
            f"judge {named.name} on study {found.pk}: asked {run.asked}, rated {run.rated}, failed {run.failed}"
            + (f", {len(run.call_errors)} calls without a reply (run again to ask them)" if run.call_errors else "")
        )
