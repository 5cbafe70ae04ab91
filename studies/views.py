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


@require_GET
@login_required
def queue(request):
    profile = rater_profile_or_404(request.user)
    if onboarding_step(profile):
        return redirect("raters:onboarding")
    assignments = (
        Assignment.objects.for_rater(profile)
        .select_related("item__study", "item__answer__question", "item__question", "item__pair__question_1")
        .order_by("item__study_id", "position", "id")
    )
    studies: dict = {}
    for assignment in assignments:
        entry = studies.setdefault(assignment.item.study, {"assignments": [], "done": 0})
        entry["assignments"].append(assignment)
        entry["done"] += assignment.is_done
    next_item = services.next_assignment(rater=profile)
    panel_study = request.session.get(ONBOARDING_STUDY)
    if next_item is None and profile.panel_participant_id and panel_study:
        return redirect("raters:panel_done", panel_study)  # their code, new items, or why there are none
    context = {"studies": studies, "next_item": next_item, "is_panel_participant": bool(profile.panel_participant_id)}
    return render(request, "studies/queue.html", context)


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
            messages.success(request, "Rating saved.")
            following = services.next_assignment(rater=assignment.rater, after=assignment)
            if following:
                return redirect("studies:rate", following.pk)
            if assignment.rater.panel_participant_id:
                return redirect("raters:panel_done", study.pk)  # their completion code
            return redirect("studies:queue")
        status = 400
    else:
        assignment.mark_viewed()
        current = assignment.ratings.filter(is_current=True).first()
        initial = current.values if current else assignment.draft
        form = rating_form(study.rubric_version, initial=initial, context=assignment_context(assignment))
        status = 200
    return render(request, "studies/rate.html", rate_context(assignment, form), status=status)


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
