from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from datasets.text_diff import diff_segments
from raters.services import onboarding_step
from raters.views import ONBOARDING_STUDY

from . import services
from .access import own_assignment_or_404, rater_profile_or_404
from .models import Assignment
from .rubrics import assignment_context, rating_form

# How each rubric's items look, in the queue's words.
DISPLAY_LABELS = {
    "one_answer": "one answer to rate",
    "two_answers": "two answers to compare",
    "two_questions": "two questions and their answers to compare",
}
QUEUE_ROWS_SHOWN = 10  # items to do listed per study; the rest, and the done ones, fold away


@require_GET
@login_required
def queue(request):
    profile = rater_profile_or_404(request.user)
    if onboarding_step(profile):
        return redirect("raters:onboarding")
    next_item = services.next_assignment(rater=profile)
    panel_study = request.session.get(ONBOARDING_STUDY)
    if next_item is None and profile.panel_participant_id and panel_study:
        return redirect("raters:panel_done", panel_study)  # their code, new items, or why there are none
    assignments = (
        Assignment.objects.for_rater(profile)
        .select_related(
            "item__study__rubric_version__rubric", "item__answer__question", "item__question", "item__pair__question_1"
        )
        .order_by(*services.QUEUE_ORDER)
    )
    context = {
        "studies": _queue_studies(assignments),
        "next_item": next_item,
        "is_panel_participant": bool(profile.panel_participant_id),
    }
    return render(request, "studies/queue.html", context)


def _queue_studies(assignments) -> list[dict]:
    """The queue study by study: its rubric, progress, the items to do (the first few shown) and those done."""
    studies: dict = {}
    for assignment in assignments:
        study = assignment.item.study
        entry = studies.setdefault(study.pk, {"study": study, "todo": [], "done": []})
        entry["done" if assignment.is_done else "todo"].append(assignment)
    for entry in studies.values():
        study = entry["study"]
        entry["rubric"] = study.rubric_version.rubric.name if study.rubric_version_id else ""
        entry["shows"] = DISPLAY_LABELS.get(study.display, "")
        entry["total"] = len(entry["todo"]) + len(entry["done"])
        entry["shown"], entry["folded"] = entry["todo"][:QUEUE_ROWS_SHOWN], entry["todo"][QUEUE_ROWS_SHOWN:]
    return list(studies.values())


@require_http_methods(["GET", "POST"])
@login_required
def rate(request, pk):
    assignment = own_assignment_or_404(request.user, pk)
    study = assignment.item.study
    if onboarding_step(assignment.rater):
        return redirect("raters:onboarding")
    if request.method == "POST":
        if study.is_locked:
            messages.error(request, "This study is locked: ratings can no longer change.")
            return redirect("studies:queue")
        form = rating_form(study.rubric_version, data=request.POST, context=assignment_context(assignment))
        if form.is_valid():
            active = services.active_seconds_for_view(
                shown_at_token=request.POST.get("shown_at", ""), reported_active=request.POST.get("active_seconds")
            )
            try:
                services.submit_rating(assignment=assignment, values=form.values(), active_seconds=active)
            except services.StaleTransition as stale:  # locked or withdrawn since the page was opened
                messages.error(request, str(stale))
                return redirect("studies:queue")
            return _after_submit(request, assignment)
        status = 400
    else:
        assignment.mark_viewed()
        current = assignment.ratings.filter(is_current=True).first()
        initial = current.values if current else assignment.draft
        form = rating_form(study.rubric_version, initial=initial, context=assignment_context(assignment))
        status = 200
    return render(request, "studies/rate.html", rate_context(assignment, form), status=status)


def _after_submit(request, assignment):
    """The study's next item; once the study is done, say so and offer the queue (its next study)."""
    study, rater = assignment.item.study, assignment.rater
    following = services.next_assignment(rater=rater, after=assignment)
    if following and following.item.study_id == study.pk:
        messages.success(request, "Rating saved.")
        return redirect("studies:rate", following.pk)
    if rater.panel_participant_id:
        return redirect("raters:panel_done", study.pk)  # their completion code
    if services.study_finished(rater=rater, study=study):
        messages.success(request, f"Rating saved. You have rated every item of {study.name}: this study is done.")
    else:  # the study's other items were withdrawn or locked meanwhile
        messages.success(request, f"Rating saved. Nothing else of {study.name} is open to you now.")
    return redirect("studies:queue")


def rate_context(assignment, form) -> dict:
    item, study = assignment.item, assignment.item.study
    rater_items = Assignment.objects.for_rater(assignment.rater).filter(item__study=study)
    display = study.display
    context = {
        "assignment": assignment,
        "item": item,
        "study": study,
        "display": display,
        "form": form,
        "definition": study.rubric_version.definition,
        "shown_at": services.sign_shown_at(),
        "done_count": rater_items.filter(status=Assignment.Status.SUBMITTED).count(),
        "total_count": rater_items.count(),
        "has_rating": assignment.ratings.exists(),
    }
    if display == "two_answers":
        context["answers"] = assignment.displayed_answers()
    elif display == "two_questions":
        context["question_segments"] = diff_segments(item.pair.question_1.text, item.pair.question_2.text)
    return context


@require_POST
@login_required
def save_draft(request, pk):
    """Autosave from the page's script: whatever is filled in so far, never a rating (services.draft_values)."""
    assignment = own_assignment_or_404(request.user, pk)
    try:
        services.save_draft(assignment=assignment, data=request.POST)
    except services.DraftRefused as refused:
        return HttpResponse(str(refused), status=refused.status, content_type="text/plain; charset=utf-8")
    except services.StaleTransition as stale:  # locked, or the item was withdrawn meanwhile
        return HttpResponse(str(stale), status=409, content_type="text/plain; charset=utf-8")
    return HttpResponse(status=204)
