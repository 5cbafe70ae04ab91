"""Print a resume link for a crowd-panel participant who needs to continue in another browser."""

from django.core.management.base import BaseCommand, CommandError

from raters.forms import PanelEntryForm
from studies.models import Study
from studies.panel import RESUME_LINK_DAYS, panel_resume_path


class Command(BaseCommand):
    help = (
        "Print the link that opens a panel participant's account of a study in any browser (and signs out every "
        f"other browser), valid for {RESUME_LINK_DAYS} days. Send it to that participant only."
    )

    def add_arguments(self, parser):
        parser.add_argument("study", type=int, help="The study's id (as in /panel/<id>/).")
        parser.add_argument("participant_id", help="The participant's panel id (PROLIFIC_PID).")
        parser.add_argument("--base-url", default="", help="Prefix for the link, e.g. https://rate.example.org")

    def handle(self, *args, study: int, participant_id: str, base_url: str, **options):
        chosen = Study.objects.filter(pk=study).first()
        if chosen is None:
            raise CommandError(f"There is no study with id {study}.")
        entry = PanelEntryForm({"PROLIFIC_PID": participant_id})
        if not entry.is_valid():
            problems = " ".join(entry.errors["PROLIFIC_PID"])
            raise CommandError(f"{participant_id!r} is not a panel participant id: {problems}")
        path = panel_resume_path(study=chosen, participant_id=participant_id)
        self.stdout.write(base_url.rstrip("/") + path)
