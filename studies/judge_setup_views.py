"""Coordinators set up a study's judges (issue 19, "Pages"): the judges the study holds with their progress, a
form to add or edit one (source, recipe, repeats) with a preview of the exact request for the study's first item,
and a Run button queueing its calls (`judge_kind.submit_judge`)."""

import json

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.db import transaction
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from raters.access import coordinator_required

from .judge_forms import JudgeForm
from .judge_kind import submit_judge
from .judge_progress import judge_progress
from .judges import JudgeError, build_judge_request
from .models import Judge, JudgeReply, Study, StudyItem, StudyJudge
from .transitions import StudyLocked

PREVIEW = "preview"


def _rated_study_or_404(pk) -> Study:
    # A scorers-only study has no rubric: nothing for a judge to answer.
    return get_object_or_404(Study.objects.select_related("rubric_version"), pk=pk, rubric_version__isnull=False)


def _held_judge_or_404(study: Study, judge_id) -> Judge:
    return get_object_or_404(Judge.objects.select_related("source", "rubric_version"), pk=judge_id,
                             study_judges__study=study)  # fmt: skip


def first_item(study: Study) -> StudyItem | None:
    """The item a preview shows: the study's first (not an attention check when it has others)."""
    items = StudyItem.objects.filter(study=study).select_related("study").order_by("is_attention_check", "pk")
    return items.first()


def request_preview(judge: Judge, study: Study) -> tuple[str, str]:
    """(the request body as pretty JSON, or why there is none): exactly what `build_judge_request` sends."""
    item = first_item(study)
    if item is None:
        return "", "The study has no items yet."
    try:
        body = build_judge_request(judge, item, 0)
    except JudgeError as error:
        return "", str(error)
    return json.dumps(body, indent=2, ensure_ascii=False), ""


@require_GET
@coordinator_required
def judges(request, pk):
    study = _rated_study_or_404(pk)
    progress = judge_progress([study], {study.pk: study.items.count()})[study.pk]
    return render(request, "coordination/judges.html", {"study": study, "progress": progress})


@require_http_methods(["GET", "POST"])
@coordinator_required
def judge_create(request, pk):
    study = _rated_study_or_404(pk)
    return _judge_form(request, study, Judge())


@require_http_methods(["GET", "POST"])
@coordinator_required
def judge_edit(request, pk, judge_id):
    study = _rated_study_or_404(pk)
    return _judge_form(request, study, _held_judge_or_404(study, judge_id))


def _judge_form(request, study: Study, judge: Judge):
    creating = judge.pk is None
    replied = 0 if creating else JudgeReply.objects.filter(judge=judge).count()
    form = JudgeForm(request.POST or None, instance=judge, study=study, replied=replied)
    preview, preview_error = ("", "") if creating else request_preview(judge, study)
    if request.method == "POST" and form.is_valid():
        if request.POST.get("action") == PREVIEW:  # the form's values, unsaved: nothing is sent or stored
            preview, preview_error = request_preview(form.instance, study)
        else:
            try:
                with transaction.atomic():
                    judge = form.save()
                    if creating:
                        StudyJudge.objects.create(study=study, judge=judge)
            except ValidationError as error:  # replies arrived since the form was shown: the recipe is fixed now
                form.add_error(None, error)
            else:
                messages.success(request, f"Judge {judge.name!r} {'added to the study' if creating else 'saved'}.")
                return redirect("coordination:judge", study.pk, judge.pk)
    context = {"study": study, "judge": judge, "form": form, "creating": creating, "replied": replied,
               "preview": preview, "preview_error": preview_error}  # fmt: skip
    return render(request, "coordination/judge_form.html", context, status=400 if form.errors else 200)


@require_POST
@coordinator_required
def judge_run(request, pk, judge_id):
    study = _rated_study_or_404(pk)
    judge = _held_judge_or_404(study, judge_id)
    try:
        queued = submit_judge(judge, study)
    except (JudgeError, StudyLocked) as refused:
        messages.error(request, f"The judge {judge.name} was not run: {refused}")
    else:
        why = "." if queued else " (every item and repeat already has a reply or a call under way)."
        messages.success(request, f"Judge {judge.name}: {queued} call{'' if queued == 1 else 's'} queued{why}")
    if request.POST.get("next") == "list":
        return redirect("coordination:judges", study.pk)
    return redirect("coordination:judge", study.pk, judge.pk)
