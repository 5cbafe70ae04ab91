"""Pages of generation steps (datasets/chains): the list of steps with their progress, and one step's page:
what it asks (source, recipe, input, expansions, samples, seed), how far it is, and what came from what (each
input beside the questions made from it, flagged ones with their reason). Run queues what is not asked yet.

Coordinators only, like the generation pages; thin: `chains.question_kind` acts.
"""

from django.contrib import messages
from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from raters.access import coordinator_required

from .chains import question_kind, steps
from .models import Question, QuestionStep

PER_PAGE = 25  # inputs per page, each with every question made from it


@require_GET
@coordinator_required
def step_list(request):
    chain = list(QuestionStep.objects.select_related("source", "recipe", "output", "after", "input_dataset"))
    rows = [(step, question_kind.progress(step)) for step in chain]
    return render(request, "datasets/step_list.html", {"rows": rows})


@require_GET
@coordinator_required
def step_detail(request, pk):
    step = get_object_or_404(
        QuestionStep.objects.select_related("source", "recipe", "output", "after", "input_dataset"), pk=pk
    )
    made = Question.objects.filter(dataset_id=step.output_id, metadata__step_id=step.pk)
    show = request.GET.get("show", "")
    if show == "flagged":
        made = made.filter(metadata__usable=False)
    inputs = Question.objects.filter(pk__in=made.values("base_id")).order_by("id")
    page = Paginator(inputs, PER_PAGE).get_page(request.GET.get("page"))
    children: dict[int, list[Question]] = {}
    for question in made.filter(base_id__in=[q.pk for q in page]).order_by("base_id", "external_id"):
        children.setdefault(question.base_id, []).append(question)
    context = {
        "step": step,
        "progress": question_kind.progress(step),
        "expansions": steps.expansions_of(step.expansions),
        "page": page,
        "pairs": [(question, children.get(question.pk, [])) for question in page],
        "show": show,
        "failed": question_kind.failed_calls(step)[:20],
    }
    return render(request, "datasets/step_detail.html", context)


@require_POST
@coordinator_required
def step_run(request, pk):
    step = get_object_or_404(QuestionStep, pk=pk)
    try:
        queued = question_kind.run_steps([step])[step.name]
    except steps.StepError as error:
        messages.error(request, str(error))
    else:
        if queued:
            messages.success(request, f"{queued} calls queued: a worker asks them.")
        else:
            messages.info(request, "Nothing to ask: every input has its questions, or the step before is not done.")
    return redirect("datasets:step", pk=step.pk)
