"""Starting and steering generation jobs, and what their pages show."""

from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction
from django.db.models import Count, Exists, IntegerField, Max, OuterRef, Q
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast
from django.utils import timezone

from engine import calls as engine_calls
from engine import lanes as engine_lanes
from engine.models import Call, Lane

from .. import answer_links, example_pool
from ..factors import REFERENCE_LEVEL, levels_problem
from ..models import Answer, AnswerSource, Dataset, GenerationJob, PromptRecipe, Question, settings_fingerprint
from ..recipes import RecipeError, check_keys
from .answer_kind import KIND, batch_of, finish_if_complete, subject_for


class GenerationRefused(Exception):
    """The job cannot start; the message says why, and `job` is the one already running, if that is why."""

    def __init__(self, message: str, job: GenerationJob | None = None):
        super().__init__(message)
        self.job = job


def check_source(source: AnswerSource) -> None:
    if source.kind != AnswerSource.Kind.MODEL:
        raise GenerationRefused(f"{source.name} is not a model source ({source.get_kind_display()}).")
    if not source.base_url:
        raise GenerationRefused(f"{source.name} has no endpoint: set its base URL first.")


# What a recipe decides instead of the source: its settings replace these of the source's.
RECIPE_REPLACES = ("prompt_template", "system_prompt", "temperature", "max_tokens", "logprobs", "top_logprobs")


def job_parameters(source: AnswerSource, recipe: PromptRecipe | None = None) -> dict:
    """The settings a job freezes: the source's, or with a recipe (a condition) the source's model and the
    recipe's settings, `condition` included, so each condition's answers have their own settings hash."""
    parameters = source.generation_settings()
    if recipe is None:
        return parameters
    kept = {key: value for key, value in parameters.items() if key not in RECIPE_REPLACES}
    return {**kept, **recipe.settings()}


def questions_at(dataset: Dataset, levels: dict | None):
    """The dataset's questions at these factor levels; the reference level `none` also matches a question
    that lacks the factor. Levels out of bounds (`factors.levels_problem`) are refused: a factor name goes into
    the query, where `bias__regex` would be a lookup. A generated question flagged unusable (datasets/chains:
    `metadata.usable` false) is never asked: the step's page counts and shows them."""
    if problem := levels_problem(levels or {}):
        raise GenerationRefused(problem)
    # has_key first: without it, NULL (no such key) would exclude every question that was never checked
    questions = dataset.questions.exclude(Q(metadata__has_key="usable") & Q(metadata__usable=False))
    for factor, level in (levels or {}).items():
        at_level = Q(**{f"levels__{factor}": level})
        if level == REFERENCE_LEVEL:
            at_level |= ~Q(levels__has_key=factor)
        questions = questions.filter(at_level)
    return questions


def evaluated_questions(questions, recipe: PromptRecipe | None):
    """(the questions the recipe may evaluate, how many were left out): a question whose base question is one
    of the recipe's worked examples is never evaluated with it (DESIGN.md, "Worked examples"). Refused when
    that leaves none, with what to do."""
    if recipe is None:
        return questions, 0
    try:
        check_keys(recipe)  # the pool is read with the recipe's `where` keys
    except RecipeError as error:
        raise GenerationRefused(f"The recipe {recipe.name!r} cannot render these questions: {error}") from None
    excluded = example_pool.never_evaluated(recipe)
    if not excluded:
        return questions, 0
    held = Q(id__in=excluded) | Q(base_id__in=excluded)
    left_out = questions.filter(held).count()
    if left_out and left_out == questions.count():
        raise GenerationRefused(
            f"Every question asked for is held out as a worked example of the recipe {recipe.name!r} (its base "
            f"question is in the examples part of the pool {recipe.examples_pool}). Evaluate other questions, hold "
            "out only part of the pool (examples holdout), or draw the examples from a separate pool."
        )
    return questions.exclude(held), left_out


def start_job(
    *, dataset: Dataset, source: AnswerSource, recipe: PromptRecipe | None = None, levels: dict | None = None,
    user=None, study_id: int | None = None,
) -> GenerationJob:  # fmt: skip
    """Create a job with one engine call (kind `answer`) per question lacking an answer with these settings.

    Questions already answered with these settings are counted, not asked again, so a re-run adds nothing.
    With a recipe the job runs that condition; with levels, only the dataset's questions at those levels.
    For a study, the answers already there are linked to it now and each new one when it is stored.
    """
    check_source(source)
    levels = dict(levels or {})
    if problem := levels_problem(levels):
        raise GenerationRefused(problem)
    try:
        answer_links.check_study(study_id, sources=[source.name], datasets=[dataset.name])
    except answer_links.StudyRefused as refused:
        raise GenerationRefused(str(refused)) from None
    parameters = job_parameters(source, recipe)
    settings_hash = settings_fingerprint(parameters)
    with transaction.atomic():
        # Two coordinators starting the same job at once: the second waits here, then sees the first.
        AnswerSource.objects.select_for_update().filter(pk=source.pk).first()
        running = (
            GenerationJob.objects.live()
            .filter(dataset=dataset, source=source, settings_hash=settings_hash, levels=levels)
            .first()
        )
        if running is not None:
            raise GenerationRefused(_running_message(running, study_id), job=running)
        answered = Answer.objects.filter(question=OuterRef("pk"), source=source, settings_hash=settings_hash)
        questions, held_out = evaluated_questions(questions_at(dataset, levels), recipe)
        questions = questions.annotate(answered=Exists(answered))
        to_ask = list(questions.filter(answered=False).values_list("id", flat=True))
        if recipe is not None and to_ask:
            _check_recipe_renders(recipe, source, to_ask[0])
        job = GenerationJob.objects.create(
            dataset=dataset,
            source=source,
            parameters=parameters,
            settings_hash=settings_hash,
            recipe=recipe,
            levels=levels,
            already_present=questions.filter(answered=True).count(),
            held_out=held_out,
            for_study=study_id,
            created_by=user,
        )
        found = Answer.objects.filter(question__in=questions.filter(answered=True).values("pk"), source=source,
                                      settings_hash=settings_hash)  # fmt: skip
        answer_links.link_answers(
            study_id=study_id, answer_ids=found.values_list("id", flat=True), via=answer_links.GENERATED
        )
        # The endpoint's lanes are sent once this commits (engine.calls.submit).
        engine_calls.submit(KIND, source.endpoint, (subject_for(job.id, question_id) for question_id in to_ask),
                            batch=batch_of(job.id))  # fmt: skip
        if not to_ask:
            job.finish()
    return job


def _running_message(running: GenerationJob, study_id: int | None) -> str:
    message = f"Job {running.id} is already generating these answers."
    if study_id is not None and running.for_study != study_id:
        # Asking twice would pay for the same answers twice; once it is done they are found and linked.
        message += " When it has finished, start this job again: it then finds them and links them to the study."
    return message


def _check_recipe_renders(recipe: PromptRecipe, source: AnswerSource, question_id: int) -> None:
    """Refuse a recipe that cannot render the job's questions (no pool, a missing field) before any call."""
    from ..recipes import build_request

    try:
        check_keys(recipe)  # before build_request queries with them: a recipe saved before they were checked
        build_request(recipe, Question.objects.get(pk=question_id), model=source.model_name)
    except RecipeError as error:
        raise GenerationRefused(f"The recipe {recipe.name!r} cannot render these questions: {error}") from None


def retry_failed(job: GenerationJob) -> int:
    """Put the job's failed questions back in the queue with a fresh attempt budget."""
    with transaction.atomic():
        # Locked and re-read, so a cancel arriving at the same moment is seen rather than undone.
        job = GenerationJob.objects.select_for_update().get(pk=job.pk)
        if job.cancelled_at:
            raise GenerationRefused("This job was cancelled; start a new one instead.")
        count = engine_calls.retry_failed(KIND, batch_of(job.id))  # its endpoint's lanes are sent on commit
        if count:
            GenerationJob.objects.filter(id=job.id).update(status=GenerationJob.Status.RUNNING, finished_at=None)
    return count


def cancel_job(job: GenerationJob) -> int:
    """Stop asking for the job's pending questions; answers already in flight are still kept.

    A call in flight that fails with a passing error goes back to pending: the answer kind's `prepare` then
    refuses it, since the job is cancelled.
    """
    now = timezone.now()
    with transaction.atomic():
        GenerationJob.objects.select_for_update().filter(pk=job.pk).first()  # one at a time with retry_failed
        cancelled = (
            GenerationJob.objects.live()
            .filter(id=job.id)
            .update(status=GenerationJob.Status.CANCELLED, cancelled_at=now, finished_at=now)
        )
        if cancelled:
            engine_calls.cancel(KIND, batch_of(job.id))
        return cancelled


def resume_job(job: GenerationJob) -> None:
    """Send the source's endpoint's lanes again (after a broker restart lost them, say); live lanes ignore it."""
    if not job.is_finished:
        endpoint = job.source.endpoint
        transaction.on_commit(lambda: engine_lanes.dispatch_lanes(endpoint))


@dataclass
class JobProgress:
    total: int
    done: int
    failed: int
    pending: int
    running: int
    refusals: int
    already_present: int
    active_lanes: int
    last_heartbeat: object  # datetime | None

    @property
    def finished_count(self) -> int:
        return self.done + self.failed

    @property
    def percent(self) -> int:
        return round(100 * self.finished_count / self.total) if self.total else 100

    def as_dict(self) -> dict:
        return {
            "total": self.total, "done": self.done, "failed": self.failed, "pending": self.pending,
            "running": self.running, "refusals": self.refusals, "already_present": self.already_present,
            "active_lanes": self.active_lanes, "percent": self.percent,
            "last_heartbeat": self.last_heartbeat.isoformat() if self.last_heartbeat else None,
        }  # fmt: skip


def batch_calls(job: GenerationJob):
    """The engine calls answering the job's questions."""
    return Call.objects.filter(kind=KIND, batch=batch_of(job.id))


def job_progress(job: GenerationJob) -> JobProgress:
    """The counts of the job's calls. A job whose calls have all ended is marked done here too: the kind ends
    it under the job's lock as its last call ends, and this check costs one query should that ever be missed."""
    status = Call.Status
    answer_ids = (
        batch_calls(job)
        .filter(status=status.DONE)
        .annotate(answer_id=Cast(KeyTextTransform("answer", "result"), IntegerField()))
        .values("answer_id")
    )
    counts = batch_calls(job).aggregate(
        total=Count("id"),
        done=Count("id", filter=Q(status=status.DONE)),
        failed=Count("id", filter=Q(status=status.FAILED)),
        # A cancelled job's questions never asked stay counted as pending, as before the engine.
        pending=Count("id", filter=Q(status__in=[status.PENDING, status.CANCELLED])),
        running=Count("id", filter=Q(status=status.RUNNING)),
        unfinished=Count("id", filter=Q(status__in=engine_calls.UNFINISHED)),
    )
    if counts.pop("unfinished") == 0 and counts["total"] and not job.is_finished:
        finish_if_complete(job.id)
        job.refresh_from_db()
    refusals = Answer.objects.filter(id__in=answer_ids, refusal=True).count()
    lanes_of_endpoint = {"active": 0, "last": None}
    if job.source.endpoint_id is not None:
        endpoint = job.source.endpoint
        stale_before = timezone.now() - timedelta(seconds=engine_lanes.lane_stale_seconds(endpoint))
        lanes_of_endpoint = Lane.objects.filter(endpoint=endpoint).aggregate(
            active=Count("id", filter=Q(heartbeat_at__gte=stale_before)), last=Max("heartbeat_at")
        )
    return JobProgress(
        **counts,
        refusals=refusals,
        already_present=job.already_present,
        active_lanes=lanes_of_endpoint["active"],
        last_heartbeat=lanes_of_endpoint["last"],
    )


def worker_status() -> dict:
    """Whether any Celery worker answers a ping: shown when a job waits, so it never hangs silently.

    Cached for a few seconds, since the job page asks on every refresh and a ping waits for replies.
    """
    from django.conf import settings as django_settings
    from django.core.cache import cache

    if django_settings.CELERY_TASK_ALWAYS_EAGER:
        return {"mode": "eager", "workers": []}
    cached = cache.get("generation:worker-status")
    if cached is None:
        from config.celery import app

        try:
            with app.connection_for_write() as connection:
                # No reconnection attempts: they would hold the page ~6 s on every refresh while the broker is down.
                connection.ensure_connection(max_retries=0)
                replies = app.control.ping(timeout=1.0, connection=connection) or []
            cached = {"mode": "broker", "workers": sorted(name for reply in replies for name in reply)}
        except Exception as error:  # the broker itself is down: say so rather than fail the page
            cached = {"mode": "broker", "workers": [], "error": f"cannot reach the broker: {error}"}
        cache.set("generation:worker-status", cached, 5)
    return cached


@dataclass(frozen=True)
class Failure:
    """A question the job could not answer: its call's last error, attempts and history."""

    question_id: int
    question: Question | None
    attempts: int
    error: str
    history: list


def failed_calls(job: GenerationJob):
    return batch_calls(job).filter(status=Call.Status.FAILED).order_by("id")


def failures(job: GenerationJob, limit: int) -> list[Failure]:
    """The job's first `limit` failed questions, with their questions in one query."""
    failed = list(failed_calls(job)[:limit])
    question_ids = [call.subject.get("question") for call in failed]
    questions = Question.objects.in_bulk([question_id for question_id in question_ids if question_id is not None])
    return [
        Failure(
            question_id=question_id,
            question=questions.get(question_id),
            attempts=call.attempts,
            error=call.error,
            history=call.history,
        )  # fmt: skip
        for call, question_id in zip(failed, question_ids, strict=True)
    ]
