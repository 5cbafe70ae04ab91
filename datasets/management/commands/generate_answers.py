import time

from django.core.management.base import BaseCommand, CommandError
from django.urls import reverse

from datasets import generation_pages
from datasets.forms import generating_sources
from datasets.generation import jobs
from datasets.models import AnswerSource, Dataset, GenerationJob, PromptRecipe


class Command(BaseCommand):
    help = (
        "Generate answers for every question of a dataset from a model source: starts a job that Celery workers "
        "run (inline when no broker is configured). Questions already answered with the source's current "
        "settings are skipped. Also retries a job's failed questions, or resumes a job whose tasks were lost."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dataset", help="Dataset name.")
        parser.add_argument("--source", help="Model source name (see add_model_source).")
        parser.add_argument(
            "--recipe", help='A prompt recipe\'s name (the condition), e.g. "Q-Pain: closed prompt (completion)".'
        )
        parser.add_argument(
            "--study",
            type=int,
            metavar="ID",
            help="The study the answers are for (each made or found is linked).",
        )
        parser.add_argument("--retry-failed", type=int, metavar="JOB_ID", help="Ask a job's failed questions again.")
        parser.add_argument("--resume", type=int, metavar="JOB_ID", help="Send an unfinished job's lanes again.")
        parser.add_argument("--wait", action="store_true", help="Print progress until the job finishes.")

    def handle(self, *args, **opts):
        starting = opts["dataset"] is not None or opts["source"] is not None or opts["study"] is not None
        if sum([starting, opts["retry_failed"] is not None, opts["resume"] is not None]) != 1:
            raise CommandError("Give either --dataset and --source, or --retry-failed JOB_ID, or --resume JOB_ID.")
        # The command runs in autocommit: each engine call commits on return, so with eager Celery (no broker)
        # the lanes it dispatches at commit run here, before the call returns.
        if opts["retry_failed"] is not None:
            job = self.retry(self.existing_job(opts["retry_failed"]))
        elif opts["resume"] is not None:
            job = self.resume(self.existing_job(opts["resume"]))
        else:
            job = self.start(opts["dataset"], opts["source"], opts["recipe"], opts["study"])
        self.stdout.write(f"Job page: {reverse('datasets:generation_job', args=[job.pk])}")
        if opts["wait"]:
            self.wait(job)

    def start(
        self, dataset_name: str | None, source_name: str | None, recipe_name: str | None, study_id: int | None
    ) -> GenerationJob:
        if not dataset_name or not source_name:
            raise CommandError("Give both --dataset and --source.")
        dataset = Dataset.objects.filter(name=dataset_name).first()
        if dataset is None:
            names = ", ".join(repr(name) for name in Dataset.objects.values_list("name", flat=True)) or "none"
            raise CommandError(f"No dataset named {dataset_name!r}. Datasets: {names}.")
        source = AnswerSource.objects.filter(name=source_name).first()
        if source is None:
            names = ", ".join(repr(name) for name in generating_sources().values_list("name", flat=True)) or "none"
            raise CommandError(
                f"No answer source named {source_name!r}. Model sources with an endpoint: {names} "
                "(add one with add_model_source)."
            )
        recipe = None
        if recipe_name:
            recipe = PromptRecipe.objects.filter(name=recipe_name).first()
            if recipe is None:
                names = ", ".join(repr(name) for name in PromptRecipe.objects.values_list("name", flat=True)) or "none"
                raise CommandError(f"No prompt recipe named {recipe_name!r}. Recipes: {names}.")
        try:
            job = jobs.start_job(dataset=dataset, source=source, recipe=recipe, study_id=study_id)
        except jobs.GenerationRefused as refused:
            raise CommandError(str(refused)) from None
        progress = jobs.job_progress(job)
        for_study = f" for study {study_id}" if study_id is not None else ""
        self.stdout.write(
            f"Job {job.pk}{for_study}: {progress.total} questions to answer, {job.already_present} already present"
        )
        return job

    def retry(self, job: GenerationJob) -> GenerationJob:
        try:
            count = jobs.retry_failed(job)
        except jobs.GenerationRefused as refused:
            raise CommandError(str(refused)) from None
        self.stdout.write(f"Job {job.pk}: {count} failed question{'s' if count != 1 else ''} queued again")
        return job

    def resume(self, job: GenerationJob) -> GenerationJob:
        if job.is_finished:
            self.stdout.write(f"Job {job.pk} has finished ({job.get_status_display().lower()}): nothing to resume")
        else:
            jobs.resume_job(job)
            self.stdout.write(f"Job {job.pk}: lanes sent to the workers again")
        return job

    def existing_job(self, job_id: int) -> GenerationJob:
        job = GenerationJob.objects.select_related("source").filter(pk=job_id).first()
        if job is None:
            raise CommandError(f"No generation job {job_id}.")
        return job

    def wait(self, job: GenerationJob) -> None:
        last_line, warned = None, False
        while True:
            job.refresh_from_db()
            progress = jobs.job_progress(job)
            line = f"{progress.done}/{progress.total} answered, {progress.failed} failed"
            if line != last_line:
                self.stdout.write(line)
                last_line = line
            if job.is_finished:
                break
            notice = generation_pages.worker_notice(job, progress)
            if notice and not warned:
                self.stderr.write(" ".join(filter(None, [notice["text"], notice["detail"]])))
                warned = True
            time.sleep(1)
        if job.status == GenerationJob.Status.CANCELLED:
            raise CommandError(f"Job {job.pk} was cancelled.")
        if progress.failed:
            raise CommandError(
                f"{progress.failed} question{'s' if progress.failed != 1 else ''} failed (the errors are on the job "
                f"page). Fix the cause, then retry them: python manage.py generate_answers --retry-failed {job.pk} "
                "--wait"
            )
        self.stdout.write(self.style.SUCCESS(f"Job {job.pk} finished: {progress.done} answered"))
