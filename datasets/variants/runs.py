"""Applying a variant generator to a base dataset: starting a `VariantRun` and running it (a Celery task).

A run writes its variants in batches, each its own transaction, updating `done / total` after each, so a
page can show progress and a run that stops half-way keeps what it wrote: the next run finds those variants
and counts them as existing. A variant already stored with other text is never overwritten: the run fails
and says which.
"""

import logging

from django.db import IntegrityError, reset_queries, transaction

from jobs.models import task_time_limit

from ..models import Dataset, Question, VariantRun, text_fingerprint
from . import MAX_SEED, MIN_SEED, BaseQuestion, Generator, VariantOptionsError, VariantSpec, get_generator

logger = logging.getLogger(__name__)

BATCH_BASE_QUESTIONS = 200  # 200 x 7 biases: 1,400 variants per transaction


class VariantRunRefused(Exception):
    """The run cannot start; `run` is the one already running, if that is why."""

    def __init__(self, message: str, run: VariantRun | None = None):
        super().__init__(message)
        self.run = run


class VariantConflict(Exception):
    """A variant the run would make is already stored differently."""


def start_variant_run(
    *, generator: str, base_dataset: Dataset, seed: int = 0, options: dict | None = None, user=None, queue=True
) -> VariantRun:
    """Check the generator and its options, create the run and (after commit) queue its Celery task.

    `queue=False` leaves the run queued for the caller to run in-process (`run_variant_run`), as the
    `generate_variants` command does. Raises VariantRunRefused.
    """
    try:
        found = get_generator(generator)
        checked = found.check_options(options or {})
    except VariantOptionsError as error:
        raise VariantRunRefused(str(error)) from None
    if isinstance(seed, bool) or not isinstance(seed, int) or not MIN_SEED <= seed <= MAX_SEED:
        raise VariantRunRefused(f"the seed must be a whole number from {MIN_SEED} to {MAX_SEED}")
    if not base_dataset.questions.exists():
        raise VariantRunRefused(f"{base_dataset.name} has no questions to make variants of.")
    target = found.dataset_name(seed, checked)
    if target.lower() == base_dataset.name.lower():
        raise VariantRunRefused("the variants cannot go into their base dataset: name another dataset")
    with transaction.atomic():
        Dataset.objects.select_for_update().filter(pk=base_dataset.pk).first()  # two starts at once: one wins
        running = VariantRun.objects.live().filter(generator=found.name, base_dataset=base_dataset).first()
        if running is not None:
            raise VariantRunRefused(f"Variant run {running.id} is already making variants of this dataset.", running)
        run = VariantRun.objects.create(
            generator=found.name,
            version=found.version,
            seed=seed,
            options=checked,
            base_dataset=base_dataset,
            total=_total(found, _base_questions(base_dataset, checked, found), checked),
            created_by=user,
        )
        if queue:
            from ..tasks import run_variant_run as task

            transaction.on_commit(lambda: task.delay(run.id))
    return run


def _base_questions(base_dataset: Dataset, options: dict, generator: Generator):
    questions = base_dataset.questions.filter(**generator.base_filter).order_by("id")
    if options.get("limit"):
        questions = questions.filter(id__in=list(questions.values_list("id", flat=True)[: options["limit"]]))
    return questions


def _total(generator: Generator, questions, options: dict) -> int:
    """The run's variant count: reads the base questions' metadata only when the count depends on it."""
    if generator.per_base is not None:
        return questions.count() * generator.per_base(options)
    assert generator.per_question is not None  # Generator.__post_init__: one of the two
    metadata = questions.values_list("metadata", flat=True).iterator(chunk_size=1000)
    return sum(generator.per_question(one or {}, options) for one in metadata)


def run_variant_run(run_id: int) -> VariantRun | None:
    """Claim a queued run (or one whose worker died past the task time limit) and make its variants.

    Returns None when another worker has it. Any error fails the run with its message; the batches written
    before it stay, and are found by the next run.
    """
    if not VariantRun.claim(run_id, stale_after=task_time_limit(), done=0, created=0, existing=0, error=""):
        return None
    run = VariantRun.objects.select_related("base_dataset").get(id=run_id)
    try:
        _make_variants(run)
    except (VariantConflict, VariantOptionsError, ValueError) as error:
        _fail(run, str(error))
    except Exception as error:
        logger.exception("variant run %s failed", run.id)
        _fail(run, f"unexpected error ({type(error).__name__}: {error}); details are in the server log")
    else:
        run.finish()
    run.refresh_from_db()
    return run


def _fail(run: VariantRun, message: str) -> None:
    run.fail(error=message[:5000])


def _make_variants(run: VariantRun) -> None:
    generator = get_generator(run.generator)
    if generator.version != run.version:
        raise VariantOptionsError(
            f"the run asks for {run.generator} v{run.version}, this server has v{generator.version}"
        )
    options = generator.check_options(run.options)
    questions = _base_questions(run.base_dataset, options, generator)
    total = _total(generator, questions, options)
    target, _ = Dataset.objects.get_or_create(
        name=generator.dataset_name(run.seed, options),
        defaults={
            "description": f"Variants of {run.base_dataset.name} made by {generator.name} v{generator.version} "
            f"(seed {run.seed}). {generator.description}",
            "licence": run.base_dataset.licence,
            "source": f"Generated from {run.base_dataset.name}",
        },
    )
    VariantRun.objects.filter(id=run.id).update(dataset=target, total=total)
    done = created = existing = 0
    batch: list[Question] = []
    for question in questions.only("id", "external_id", "text", "metadata").iterator(chunk_size=1000):
        batch.append(question)
        if len(batch) >= BATCH_BASE_QUESTIONS:
            made, found = _write_batch(generator, run, options, target, batch)
            done, created, existing = done + made + found, created + made, existing + found
            VariantRun.objects.filter(id=run.id).update(done=done, created=created, existing=existing)
            batch = []
    if batch:
        made, found = _write_batch(generator, run, options, target, batch)
        done, created, existing = done + made + found, created + made, existing + found
        VariantRun.objects.filter(id=run.id).update(done=done, created=created, existing=existing)


def _write_batch(
    generator: Generator, run: VariantRun, options: dict, target: Dataset, bases: list[Question]
) -> tuple[int, int]:
    """Store one batch's variants: (created, existing). Raises VariantConflict for a differing stored one."""
    reset_queries()  # with DEBUG on, Django logs every query: a long run would keep them all
    specs: list[tuple[Question, VariantSpec]] = []
    for base in bases:
        view = BaseQuestion(base.external_id, base.text, base.metadata or {})
        specs.extend((base, spec) for spec in generator.variants(view, run.seed, options))
    stored = {
        row["external_id"]: row
        for row in target.questions.filter(external_id__in=[spec.external_id for _, spec in specs]).values(
            "external_id", "text_hash", "base_id"
        )
    }
    new = []
    for base, spec in specs:
        row = stored.get(spec.external_id)
        if row is None:
            new.append((base, spec))
        elif row["text_hash"] != text_fingerprint(spec.text) or row["base_id"] != base.id:
            raise VariantConflict(
                f"{target.name} already holds {spec.external_id} with a different text (or base question); it is "
                "never overwritten. Name another target dataset, or delete that one first."
            )
    hashes = {text_fingerprint(spec.text): spec.external_id for _, spec in new}
    if len(hashes) < len(new):
        raise VariantConflict("two variants of this batch have the same text")
    clash = target.questions.filter(text_hash__in=list(hashes)).values_list("external_id", "text_hash").first()
    if clash is not None:
        raise VariantConflict(
            f"{target.name} already holds the text of {hashes[clash[1]]} under another id ({clash[0]})"
        )
    try:
        with transaction.atomic():
            Question.objects.bulk_create(
                [
                    Question(
                        dataset=target,
                        base=base,
                        external_id=spec.external_id,
                        text=spec.text,
                        text_hash=text_fingerprint(spec.text),
                        levels=spec.levels,
                        metadata=spec.metadata,
                    )
                    for base, spec in new
                ],  # fmt: skip
                batch_size=1000,
            )
    except IntegrityError as error:  # another run wrote the same ids between our look and our write
        raise VariantConflict(f"another writer stored some of these variants at the same time: {error}") from error
    return len(new), len(specs) - len(new)
