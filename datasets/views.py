from django.core.paginator import Paginator
from django.db.models import Count, Q
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from raters.access import coordinator_required, study_team_required

from . import services
from .forms import AnswerImportForm, QuestionImportForm
from .models import Dataset, ImportJob


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
            kind=kind, filename=upload.name, data=upload.read(), options=form.import_options(), user=request.user
        )
        return redirect("datasets:import_status", pk=job.pk)
    recent = ImportJob.objects.filter(kind=kind).defer("content")[:10]
    return render(request, "datasets/import_form.html", {"form": form, "kind": kind, "recent": recent})


@require_GET
@coordinator_required
def import_status(request, pk):
    job = get_object_or_404(ImportJob.objects.defer("content"), pk=pk)
    return render(request, "datasets/import_status.html", {"job": job})
