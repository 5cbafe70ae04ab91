from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import Count, Q
from django.http import JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from raters.access import coordinator_required, study_team_required

from . import generation_pages, services
from .forms import AnswerImportForm, GenerationForm, QuestionImportForm
from .generation import jobs
from .models import CounterfactualPair, Dataset, GenerationJob, ImportJob, Question


@require_GET
@study_team_required
def dataset_list(request):
    datasets = Dataset.objects.annotate(
        question_count=Count("questions", distinct=True), pair_count=Count("pairs", distinct=True)
    )
    return render(request, "datasets/dataset_list.html", {"datasets": datasets})


@require_GET
@study_team_required
def dataset_detail(request, pk):
    dataset = get_object_or_404(Dataset, pk=pk)
    questions = dataset.questions.annotate(answer_count=Count("answers")).order_by("id")
    query = request.GET.get("q", "").strip()
    if query:
        questions = questions.filter(Q(text__icontains=query) | Q(external_id=query))
    page = Paginator(questions, 50).get_page(request.GET.get("page"))
    pairs = dataset.pairs.select_related("question_1", "question_2")[:20]
    context = {"dataset": dataset, "page": page, "query": query, "pairs": pairs, "pair_total": dataset.pairs.count()}
    return render(request, "datasets/dataset_detail.html", context)


@require_http_methods(["GET", "POST"])
@coordinator_required
def import_questions(request):
    return _import_page(request, QuestionImportForm, ImportJob.Kind.QUESTIONS)


@require_http_methods(["GET", "POST"])
@coordinator_required
def import_answers(request):
    return _import_page(request, AnswerImportForm, ImportJob.Kind.ANSWERS)


def _import_page(request, form_class, kind):
    form = form_class(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        job = services.start_import_job(
            kind=kind, filename=upload.name, chunks=upload.chunks(), options=form.import_options(), user=request.user
        )
        return redirect("datasets:import_status", pk=job.pk)
    recent = ImportJob.objects.filter(kind=kind)[:10]
    return render(request, "datasets/import_form.html", {"form": form, "kind": kind, "recent": recent})


@require_GET
@coordinator_required
def import_status(request, pk):
    job = get_object_or_404(ImportJob, pk=pk)
    return render(request, "datasets/import_status.html", {"job": job})


@require_GET
@study_team_required
def question_detail(request, dataset_pk, pk):
    question = get_object_or_404(
        Question.objects.select_related("dataset", "base__dataset"), dataset_id=dataset_pk, pk=pk
    )
    answers = question.answers.select_related("source", "author__rater_profile")
    answers = list(answers.order_by("source__name", "generated_at", "id"))
    for answer in answers:
        answer.parameter_rows = generation_pages.parameter_rows(answer.parameters)
    pairs = CounterfactualPair.objects.filter(Q(question_1=question) | Q(question_2=question)).select_related(
        "question_1", "question_2"
    )
    counterparts = [(pair, pair.question_2 if pair.question_1_id == question.id else pair.question_1) for pair in pairs]
    context = {
        "question": question,
        "metadata_rows": generation_pages.metadata_rows(question.metadata),
        "answers": answers,
        "counterparts": counterparts,
        "made_from_this": list(question.variants.select_related("dataset").order_by("dataset_id", "id")[:50]),
    }
    return render(request, "datasets/question_detail.html", context)


# --- Answer generation ---------------------------------------------------------------------------


@require_http_methods(["GET", "POST"])
@coordinator_required
def generate(request):
    form = GenerationForm(request.POST or None, initial={"dataset": request.GET.get("dataset")})
    running = None
    if request.method == "POST" and form.is_valid():
        try:
            job = jobs.start_job(**form.job_options(), user=request.user)
        except jobs.GenerationRefused as refused:
            form.add_error(None, str(refused))
            running = refused.job
        else:
            messages.success(request, f"Job {job.id} started.")
            return redirect("datasets:generation_job", pk=job.pk)
    context = {
        "form": form,
        "running": running,
        "sources": form.fields["source"].queryset,
        "recent": generation_pages.recent_jobs(),
    }
    return render(request, "datasets/generate_form.html", context, status=400 if form.errors else 200)


@require_GET
@study_team_required
def generation_job(request, pk):
    job = get_object_or_404(GenerationJob.objects.select_related("dataset", "source", "created_by", "recipe"), pk=pk)
    progress = jobs.job_progress(job)
    context = {
        "job": job,
        "progress": progress,
        "notice": generation_pages.worker_notice(job, progress),
        "parameter_rows": generation_pages.parameter_rows(job.parameters),
        "failures": jobs.failures(job, generation_pages.FAILURES_SHOWN),
        "failures_hidden": max(0, progress.failed - generation_pages.FAILURES_SHOWN),
    }
    return render(request, "datasets/generation_job.html", context)


@require_GET
@study_team_required
def generation_progress(request, pk):
    job = get_object_or_404(GenerationJob.objects.select_related("source"), pk=pk)
    return JsonResponse(generation_pages.progress_payload(job, jobs.job_progress(job)))


@require_POST
@coordinator_required
def generation_retry(request, pk):
    job = get_object_or_404(GenerationJob.objects.select_related("source"), pk=pk)
    try:
        count = jobs.retry_failed(job)
    except jobs.GenerationRefused as refused:
        messages.error(request, str(refused))
    else:
        if count:
            messages.success(request, f"{count} failed question{'s' if count != 1 else ''} queued again.")
        else:
            messages.info(request, "No failed questions to retry.")
    return redirect("datasets:generation_job", pk=job.pk)


@require_POST
@coordinator_required
def generation_cancel(request, pk):
    job = get_object_or_404(GenerationJob, pk=pk)
    if jobs.cancel_job(job):
        messages.success(request, "Job cancelled: its pending questions will not be asked. Answers received are kept.")
    else:
        messages.info(request, "This job had already finished.")
    return redirect("datasets:generation_job", pk=job.pk)


@require_POST
@coordinator_required
def generation_resume(request, pk):
    job = get_object_or_404(GenerationJob.objects.select_related("source"), pk=pk)
    if job.is_finished:
        messages.info(request, "This job has finished: there is nothing to resume.")
    else:
        jobs.resume_job(job)
        messages.success(request, "The job's lanes were sent to the workers again.")
    return redirect("datasets:generation_job", pk=job.pk)
