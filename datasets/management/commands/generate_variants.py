from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from datasets.models import Dataset, VariantRun
from datasets.variants import GENERATORS
from datasets.variants.biasmedqa import letters_from_jsonl
from datasets.variants.runs import VariantRunRefused, run_variant_run, start_variant_run


class Command(BaseCommand):
    help = (
        "Make variants of a base dataset's questions with a registered generator (e.g. biasmedqa), in this "
        "process, and print what was created. Idempotent: a re-run with the same generator, seed and options "
        "finds the variants and creates nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("generator", choices=sorted(GENERATORS))
        parser.add_argument("--base", required=True, help='The base dataset, e.g. "MedQA (USMLE test)".')
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument(
            "--levels", "--biases", dest="levels", nargs="+",
            help='Levels to make (default: the generator\'s own): BiasMedQA\'s biases, Q-Pain\'s "Black woman" ...',
        )  # fmt: skip
        parser.add_argument("--limit", type=int, help="Only the first N base questions (by id), for small demos.")
        parser.add_argument(
            "--letters", help="A JSONL table of qid, bias_type, bias_answer_idx (e.g. biasmedqa_injections.jsonl)."
        )
        parser.add_argument("--dataset", help="The target dataset's name (default: named by generator and seed).")

    def handle(self, *args, **opts):
        base = Dataset.objects.filter(name=opts["base"]).first()
        if base is None:
            names = ", ".join(repr(name) for name in Dataset.objects.values_list("name", flat=True)) or "none"
            raise CommandError(f"No dataset named {opts['base']!r}. Datasets: {names}.")
        options: dict = {}
        if opts["levels"]:
            options[GENERATORS[opts["generator"]].levels_option] = opts["levels"]
        if opts["limit"] is not None:
            options["limit"] = opts["limit"]
        if opts["dataset"]:
            options["dataset"] = opts["dataset"]
        if opts["letters"]:
            path = Path(opts["letters"])
            try:
                with path.open(encoding="utf-8") as lines:
                    options["letters"] = letters_from_jsonl(lines)
            except OSError as error:
                raise CommandError(f"{path}: cannot be read ({error.strerror or error})") from None
            except ValueError as error:
                raise CommandError(f"{path}: {error}") from None
            options["letters_source"] = path.name
        try:
            run = start_variant_run(
                generator=opts["generator"], base_dataset=base, seed=opts["seed"], options=options, queue=False
            )
        except VariantRunRefused as refused:
            raise CommandError(str(refused)) from None
        run = run_variant_run(run.id) or run
        if run.status != VariantRun.Status.DONE:
            raise CommandError(f"Variant run {run.id} failed: {run.error}")
        self.stdout.write(f"Dataset: {run.dataset.name}")
        self.stdout.write(f"Variants: {run.total} ({run.created} created, {run.existing} already there)")
        self.stdout.write(self.style.SUCCESS(f"Variant run {run.id} done"))
