"""Run a study's generation steps (datasets/chains; a study file's `steps`): queue every (input, expansion,
sample) not asked yet. The calls run on the model-call engine's lanes (a Celery worker; with no broker
configured Celery runs eagerly and they run here). `--wait` polls until no step has anything unfinished."""

import time

from django.core.management.base import BaseCommand, CommandError

from datasets.chains import question_kind
from datasets.chains.steps import StepError
from datasets.models import QuestionStep
from studies.models import Study
from studies.study_steps import steps_of


class Command(BaseCommand):
    help = "Ask the models of a chain of generation steps to make their questions (a study's steps, or named ones)."

    def add_arguments(self, parser):
        parser.add_argument("--step", action="append", default=[], help="A step's name (repeat for several).")
        parser.add_argument("--study", type=int, help="The study whose file names the steps (all of them, in order).")
        parser.add_argument("--wait", action="store_true", help="Wait until the steps' calls have finished.")
        parser.add_argument("--timeout", type=float, default=3600.0, help="Seconds --wait waits at most.")
        parser.add_argument("--poll", type=float, default=2.0, help="Seconds between --wait's looks.")

    def handle(self, *args, step, study, wait, timeout, poll, **options):
        chain = self._chain(step, study)
        try:
            queued = question_kind.run_steps(chain)
        except StepError as error:
            raise CommandError(str(error)) from None
        for name, count in queued.items():
            self.stdout.write(f"step {name}: {count} calls queued")
        if not wait:
            return
        deadline = time.monotonic() + timeout
        while True:
            # A step that starts after another is queued once that one has finished (by the engine, or here).
            question_kind.run_steps([s for s in chain if s.after_id and s.start == QuestionStep.Start.AFTER])
            if not any(question_kind.unfinished(s) for s in chain):
                break
            if time.monotonic() > deadline:
                raise CommandError(f"Gave up waiting after {timeout:g} s (the calls go on; run again with --wait).")
            time.sleep(poll)
        for one in chain:
            p = question_kind.progress(one)
            self.stdout.write(f"step {one.name}: {p['made']} questions made ({p['usable']} usable, {p['unusable']} "
                              f"flagged), {p['duplicates']} duplicates, {p['empty']} empty replies, {p['failed']} "
                              "calls failed")  # fmt: skip

    def _chain(self, names, study_id):
        if study_id is not None:
            study = Study.objects.filter(pk=study_id).first()
            if study is None:
                raise CommandError(f"There is no study with id {study_id}.")
            chain = steps_of(study.definition or {})
            if not chain:
                raise CommandError(f"The study {study.name!r} names no generation steps (its file's `steps`).")
            return chain
        if not names:
            raise CommandError("Name the steps (--step NAME) or the study (--study ID).")
        found = {s.name: s for s in QuestionStep.objects.filter(name__in=names)}
        missing = [name for name in names if name not in found]
        if missing:
            raise CommandError(f"No generation step named {', '.join(map(repr, missing))}.")
        return [found[name] for name in names]
