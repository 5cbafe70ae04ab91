from django.core.management.base import BaseCommand, CommandError

from datasets.models import Answer, AnswerSource, Dataset
from scoring import scorers
from scoring.services import score_missing, select_answers
from scoring.tasks import score_answers_task


class Command(BaseCommand):
    help = (
        "Score the answers that have no score from a scorer's current version (scores already stored are kept, "
        "never recomputed). Answers whose question lacks the field the scorer needs are skipped and counted; "
        "for a scorer that reads a reference answer, those whose reference does not exist yet are counted."
    )

    def add_arguments(self, parser):
        parser.add_argument("--scorer", required=True, help=f"One of: {', '.join(scorers.names())}.")
        parser.add_argument("--dataset", help="Only answers to questions of this dataset.")
        parser.add_argument("--source", help="Only answers of this source.")
        parser.add_argument("--study", type=int, help="Only answers that belong to this study (by id).")
        parser.add_argument(
            "--batch-size", type=int, help="Answers read at once (default: the scorer's own, e.g. 2000 for letter)."
        )
        parser.add_argument(
            "--queue",
            help="Score on a Celery worker listening on this queue instead of here (an embedding scorer's model "
            "then loads on the worker); prints the task id, the worker logs the counts.",
        )

    def handle(self, *args, **opts):
        if opts["scorer"] not in scorers.names():
            raise CommandError(f"no scorer named {opts['scorer']!r}; known: {', '.join(scorers.names())}")
        if opts["dataset"] and not Dataset.objects.filter(name=opts["dataset"]).exists():
            raise CommandError(f"no dataset named {opts['dataset']!r}")
        if opts["source"] and not AnswerSource.objects.filter(name=opts["source"]).exists():
            raise CommandError(f"no answer source named {opts['source']!r}")
        if opts["study"] is not None:
            # Through the answers' study links: scoring never imports studies/.
            study = Answer._meta.get_field("studies").related_model
            if not study._default_manager.filter(pk=opts["study"]).exists():
                raise CommandError(f"no study with id {opts['study']}")
        if opts["batch_size"] is not None and opts["batch_size"] < 1:
            raise CommandError("--batch-size must be at least 1")
        selection = {"dataset": opts["dataset"], "source": opts["source"], "study": opts["study"]}
        if opts["queue"]:
            kwargs = {"scorer": opts["scorer"], **selection, "batch_size": opts["batch_size"]}
            result = score_answers_task.apply_async(kwargs=kwargs, queue=opts["queue"])
            self.stdout.write(f"Queued scorer {opts['scorer']} on {opts['queue']}: task {result.id}")
            return
        answers = select_answers(**selection)
        counts = score_missing(scorer=opts["scorer"], answers=answers, batch_size=opts["batch_size"])
        self.stdout.write(f"Scorer {opts['scorer']} v{counts['version']}")
        # Choice scorers (letter) read correct / wrong / non-response; numeric ones (p_no) measured / missing.
        self.stdout.write(
            f"Scored: {counts['scored']} (correct {counts['correct']}, wrong {counts['wrong']}, "
            f"non-response {counts['non_response']}; measured {counts['measured']}, missing {counts['missing']})"
        )
        self.stdout.write(f"Skipped (the question has no field the scorer needs): {counts['skipped_no_key']}")
        if scorers.current(opts["scorer"]).reference is not None:
            self.stdout.write(
                f"Not scored yet (no reference answer yet; scored by a later run once it exists): "
                f"{counts['no_reference_yet']}"
            )
