"""Queue a judge's calls for every item of a study it has no rating of yet (studies/DESIGN.md, "Judges").

The calls run on the model-call engine's lanes (a Celery worker; with no broker configured Celery runs eagerly
and they run here, before the command returns). `--wait` polls until the batch has nothing unfinished.
"""

import time

from django.core.management.base import BaseCommand, CommandError

from engine.models import Call
from studies.judge_kind import KIND, batch_counts, batch_of, submit_judge
from studies.judges import JudgeError
from studies.models import Judge, JudgeRating, JudgeReply, Study
from studies.transitions import StudyLocked


class Command(BaseCommand):
    help = "Ask a judge about a study's items through the model-call engine: one rating per item, repeat and order."

    def add_arguments(self, parser):
        parser.add_argument("--study", type=int, required=True, help="The study's id.")
        parser.add_argument("--judge", required=True, help="The judge's name.")
        parser.add_argument("--wait", action="store_true", help="Wait until the judge's calls have finished.")
        parser.add_argument("--timeout", type=float, default=3600.0, help="Seconds --wait waits at most.")
        parser.add_argument("--poll", type=float, default=2.0, help="Seconds between --wait's looks.")

    def handle(self, *args, study: int, judge: str, wait: bool, timeout: float, poll: float, **options):
        found = Study.objects.filter(pk=study).first()
        if found is None:
            raise CommandError(f"There is no study with id {study}.")
        named = Judge.objects.select_related("source", "rubric_version").filter(name=judge).first()
        if named is None:
            raise CommandError(f"There is no judge named {judge!r}.")
        rated = JudgeRating.objects.filter(judge=named, item__study=found).count()  # before: eager Celery runs all
        try:
            queued = submit_judge(named, found)
        except (JudgeError, StudyLocked) as error:
            raise CommandError(str(error)) from None
        self.stdout.write(f"judge {named.name} on study {found.pk}: {queued} calls queued, {rated} questions "
                          "already rated")  # fmt: skip
        if not wait:
            return
        deadline = time.monotonic() + timeout
        while (counts := batch_counts(named, found))["pending"] + counts["running"]:
            if time.monotonic() > deadline:
                raise CommandError(f"Gave up waiting after {timeout:g} s: {counts['pending']} calls pending, "
                                   f"{counts['running']} in flight (they go on; run again with --wait).")  # fmt: skip
            time.sleep(poll)
        failed = Call.objects.filter(kind=KIND, batch=batch_of(named.pk, found.pk), status=Call.Status.FAILED)
        invalid = 0
        for subject, error, result in failed.values_list("subject", "error", "result"):
            invalid += result is not None  # replies, all invalid: the last one's errors
            order = " swapped" if subject.get("swap") else ""
            self.stderr.write(f"{'failed' if result is not None else 'no reply'}: item {subject.get('item')} "
                              f"repeat {subject.get('repeat')}{order}: {error}")  # fmt: skip
        replies = JudgeReply.objects.filter(judge=named, item__study=found).count()
        rated = JudgeRating.objects.filter(judge=named, item__study=found).count()
        unanswered = counts[Call.Status.FAILED] - invalid + counts[Call.Status.CANCELLED]
        without = f", {unanswered} calls without a reply (run again to ask them)" if unanswered else ""
        self.stdout.write(f"judge {named.name} on study {found.pk}: rated {rated}, failed {invalid} (every reply "
                          f"invalid), {replies} replies{without}")  # fmt: skip
