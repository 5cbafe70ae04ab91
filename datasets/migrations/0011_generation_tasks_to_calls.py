"""Generation runs on the model-call engine: every GenerationTask becomes an `answer` call (engine/DESIGN.md,
"Generation"), so no job's work is lost when the tasks go (0012)."""

from django.db import migrations

# Written out here rather than imported, so the migration stays as it ran whatever the code becomes.
KIND = "answer"
MIRRORED = ("base_url", "api_key_env", "request_timeout_seconds", "concurrency", "rate_limit_per_minute")
BATCH = "generation-job:{}"
PREFIX = "generation-job:"


def _endpoint(source, Endpoint, AnswerSource):
    """The source's endpoint; one is made as 0010 did for a source that had none (its URL cleared since)."""
    if source.endpoint_id is None:
        name = source.name[:200]
        if Endpoint.objects.filter(name=name).exists():
            name = f"{source.name[:180]} (source {source.pk})"
        source.endpoint = Endpoint.objects.create(name=name, **{field: getattr(source, field) for field in MIRRORED})
        AnswerSource.objects.filter(pk=source.pk).update(endpoint=source.endpoint)
    return source.endpoint_id


def tasks_to_calls(apps, schema_editor):
    """Pending and in-flight tasks become pending calls (a cancelled job's: cancelled), failed ones failed calls
    with their error, attempts and history, answered ones done calls with {"answer": id}, so counts stay right."""
    AnswerSource = apps.get_model("datasets", "AnswerSource")
    GenerationJob = apps.get_model("datasets", "GenerationJob")
    GenerationTask = apps.get_model("datasets", "GenerationTask")
    Call = apps.get_model("engine", "Call")
    Endpoint = apps.get_model("engine", "Endpoint")
    endpoints = {}
    for job in GenerationJob.objects.filter(tasks__isnull=False).distinct().select_related("source").iterator():
        if job.source_id not in endpoints:
            endpoints[job.source_id] = _endpoint(job.source, Endpoint, AnswerSource)
        calls = []
        for task in GenerationTask.objects.filter(job=job).order_by("id").iterator():
            status = {"running": "pending"}.get(task.status, task.status)
            if status == "pending" and job.cancelled_at is not None:
                status = "cancelled"
            calls.append(Call(
                kind=KIND, endpoint_id=endpoints[job.source_id], batch=BATCH.format(job.id),
                subject={"job": job.id, "question": task.question_id}, status=status, attempts=task.attempts,
                not_before=task.not_before if status == "pending" else None, error=task.error,
                history=task.history, result={"answer": task.answer_id} if task.answer_id else None,
            ))  # fmt: skip
        Call.objects.bulk_create(calls, batch_size=2000)


def calls_to_tasks(apps, schema_editor):
    """Back: the `answer` calls of generation jobs become tasks again (cancelled ones pending, as tasks of a
    cancelled job were) and the calls go, so that nothing runs twice."""
    GenerationJob = apps.get_model("datasets", "GenerationJob")
    GenerationTask = apps.get_model("datasets", "GenerationTask")
    Question = apps.get_model("datasets", "Question")
    Answer = apps.get_model("datasets", "Answer")
    Call = apps.get_model("engine", "Call")
    answer_calls = Call.objects.filter(kind=KIND, batch__startswith=PREFIX)
    jobs = {job.id: job for job in GenerationJob.objects.all()}
    tasks = []
    for call in answer_calls.order_by("id").iterator():
        job = jobs.get(call.subject.get("job"))
        question_id = call.subject.get("question")
        if job is None or not Question.objects.filter(id=question_id).exists():
            continue
        answer_id = (call.result or {}).get("answer")
        if answer_id is not None and not Answer.objects.filter(id=answer_id).exists():
            answer_id = None
        status = {"cancelled": "pending"}.get(call.status, call.status)
        tasks.append(GenerationTask(
            job=job, source_id=job.source_id, question_id=question_id, status=status, attempts=call.attempts,
            not_before=call.not_before, lease_expires_at=call.lease_expires_at, claimed_by=call.claimed_by,
            answer_id=answer_id, error=call.error, history=call.history,
        ))  # fmt: skip
    GenerationTask.objects.bulk_create(tasks, batch_size=2000, ignore_conflicts=True)
    answer_calls.delete()


class Migration(migrations.Migration):

    dependencies = [
        ("datasets", "0010_source_endpoints"),
        ("engine", "0001_engine_calls"),
    ]

    operations = [
        migrations.RunPython(tasks_to_calls, calls_to_tasks),
    ]
