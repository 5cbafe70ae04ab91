"""The study team's pages: the studies, each study's dashboard, and the coordinator's actions on them.

Analysts see everything here; only coordinators act. Every action is a POST that redirects with a message.
"""

import tempfile
from pathlib import Path

from django.contrib import messages
from django.http import FileResponse, Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.text import slugify
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from raters.access import coordinator_required, study_team_required

from . import coordination, dashboard, dashboard_plots, exports
from .assignment import LOCKED, AssignmentError, AssignReport, assign_study, reassign_assignment, withdraw_assignment
from .forms import AssignForm, LockForm, ReassignForm, StudyFileForm, StudyForm, reassign_candidates
from .models import Assignment, Study
from .panel import RESUME_LINK_DAYS, is_panel_participant_of, panel_resume_path
from .release import study_table
from .study_files import StudyRefused, decode_file, describe, export_study, load_study_text
from .study_yaml import StudyFileError
from .transitions import StaleTransition

OPEN = [Assignment.Status.ASSIGNED, Assignment.Status.STARTED]


@require_GET
@study_team_required
def study_list(request):
    return render(request, "coordination/study_list.html", {"studies": dashboard.studies_with_progress()})


@require_http_methods(["GET", "POST"])
@coordinator_required
def study_create(request):
    form = StudyForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            study = coordination.create_study(
                name=data["name"],
                description=data["description"],
                rubric_version=data["rubric_version"],
                dataset_ids=[d.pk for d in data["datasets"]],
                source_ids=[s.pk for s in data["sources"]],
                pools=form.pool_settings(),
            )
        except AssignmentError as error:
            form.add_error(None, str(error))
        else:
            messages.success(request, f"Study created with {study.items.count()} items.")
            return redirect("coordination:dashboard", study.pk)
    status = 400 if form.errors else 200
    return render(request, "coordination/study_form.html", {"form": form}, status=status)


@require_http_methods(["GET", "POST"])
@coordinator_required
def study_file_upload(request):
    """Load a study file: every problem with its line and key on the page, and nothing created; else the study."""
    form = StudyFileForm(request.POST or None, request.FILES or None)
    problems: list = []
    if request.method == "POST" and form.is_valid():
        try:
            text = decode_file(form.cleaned_data["file"].read())
            loaded = load_study_text(text, new_version=form.cleaned_data["new_version"])
        except StudyFileError as error:
            problems = error.problems
        except StudyRefused as refused:
            form.add_error(None, f"Refused: {refused}.")
        else:
            messages.success(request, f"Study file loaded: {describe(loaded)}.")
            return redirect("coordination:dashboard", loaded.study.pk)
    status = 400 if form.errors or problems else 200
    return render(request, "coordination/study_file.html", {"form": form, "problems": problems}, status=status)


@require_GET
@study_team_required
def study_dashboard(request, pk):
    return _dashboard_page(request, _study_or_404(pk), LockForm())


@require_GET
@study_team_required
def dashboard_plot(request, pk, name):
    """One of the dashboard's plots as SVG (dashboard_plots); 404 for a plot without data."""
    svg = dashboard_plots.draw(_study_or_404(pk), name)
    if svg is None:
        raise Http404("No such plot for this study.")
    response = HttpResponse(svg, content_type="image/svg+xml")
    response["Cache-Control"] = "private, no-cache"
    return response


@require_GET
@study_team_required
def export_csv(request, pk):
    """The study's current ratings in the release format, streamed (memory does not grow with the rows)."""
    study = _study_or_404(pk)
    if study.is_scorers_only:
        return _export_refused(request, study, exports.NO_RATINGS_TO_EXPORT)
    try:
        return exports.csv_download_response(study_table(study), study)
    except exports.ExportError as error:
        return _export_refused(request, study, error)


@require_GET
@study_team_required
def export_workbook(request, pk):
    """The release workbook (three sheets), written to a temporary file in write-only mode, then streamed."""
    study = _study_or_404(pk)
    if study.is_scorers_only:
        return _export_refused(request, study, exports.NO_RATINGS_TO_EXPORT)
    with tempfile.NamedTemporaryFile(suffix=".xlsx", delete=False) as handle:
        path = Path(handle.name)
    try:
        exports.write_workbook(path, study=study)
    except exports.ExportError as error:
        path.unlink()
        return _export_refused(request, study, error)
    workbook = path.open("rb")
    path.unlink()  # the open file stays readable until the response closes it
    name = f"{slugify(study.name) or f'study-{study.pk}'}-equitymedqa_ratings.xlsx"
    return FileResponse(workbook, as_attachment=True, filename=name)


@require_GET
@study_team_required
def export_study_file(request, pk):
    """The study's definition as its YAML study file (what export_study writes)."""
    study = _study_or_404(pk)
    response = HttpResponse(export_study(study), content_type="application/yaml; charset=utf-8")
    name = slugify(study.name) or f"study-{study.pk}"
    response["Content-Disposition"] = f'attachment; filename="{name}.yaml"'
    return response


def _export_refused(request, study, error):
    messages.error(request, f"The export was not made: {error}")
    return redirect("coordination:dashboard", study.pk)


@require_POST
@coordinator_required
def assign(request, pk):
    study = _study_or_404(pk)
    form = AssignForm(request.POST, study=study)
    if study.is_locked:
        messages.error(request, LOCKED)
    elif not form.is_valid():
        messages.error(request, "Choose one of the study's rater pools.")
    else:
        pool = form.cleaned_data["pool"]
        try:
            report = assign_study(study=study, pool_id=pool.pk)
        except (AssignmentError, StaleTransition) as error:
            messages.error(request, str(error))
        else:
            level = messages.WARNING if report.unassignable else messages.SUCCESS
            messages.add_message(request, level, _assign_message(pool, report))
    return redirect("coordination:dashboard", study.pk)


@require_POST
@coordinator_required
def lock(request, pk):
    study = _study_or_404(pk)
    form = LockForm(request.POST)
    if not form.is_valid():
        return _dashboard_page(request, study, form, status=400)
    if coordination.lock_study(study=study):
        messages.success(request, "Study locked: ratings can no longer be submitted or changed.")
    else:
        messages.info(request, "This study was already locked.")
    return redirect("coordination:dashboard", study.pk)


@require_GET
@study_team_required
def rater_detail(request, pk, rater_id):
    study = _study_or_404(pk)
    return _rater_page(request, study, _study_rater_or_404(study, rater_id))


@require_POST
@coordinator_required
def resume_link(request, pk, rater_id):
    """A link that opens a panel participant's account in another browser; shown once, never stored."""
    study = _study_or_404(pk)
    rater = _study_rater_or_404(study, rater_id)
    if not is_panel_participant_of(profile=rater, study=study):
        messages.error(request, "Only panel participants of this study have resume links.")
        return redirect("coordination:rater", study.pk, rater.pk)
    path = panel_resume_path(study=study, participant_id=rater.panel_participant_id)
    return _rater_page(request, study, rater, resume_link=request.build_absolute_uri(path))


def _rater_page(request, study, rater, resume_link=""):
    assignments = Assignment.objects.filter(item__study=study, rater=rater).order_by("position", "id")
    context = {
        "study": study,
        "rater": rater,
        "assignments": assignments,
        "candidates": list(reassign_candidates(rater).select_related("user")),
        "open_statuses": OPEN,
        "open_count": sum(1 for assignment in assignments if assignment.status in OPEN),
        "is_panel_participant": is_panel_participant_of(profile=rater, study=study),
        "resume_link": resume_link,
        "resume_link_days": RESUME_LINK_DAYS,
    }
    return render(request, "coordination/rater.html", context)


@require_POST
@coordinator_required
def mark_dropped_out(request, pk, rater_id):
    study = _study_or_404(pk)
    rater = _study_rater_or_404(study, rater_id)
    try:
        freed = coordination.mark_dropped_out(study=study, profile=rater)
    except StaleTransition as stale:  # locked meanwhile
        messages.error(request, str(stale))
    else:
        messages.success(request, f"{rater.pseudonym} marked as dropped out; {freed} unrated item(s) went back "
                                  "to the pool.")  # fmt: skip
    return redirect("coordination:dashboard", study.pk)


@require_POST
@coordinator_required
def withdraw(request, pk, assignment_id):
    study = _study_or_404(pk)
    assignment = _assignment_or_404(study, assignment_id)
    # The status the page showed: an item rated since then is not withdrawn without a second look.
    seen = request.POST.get("seen_status")
    seen = seen if seen in Assignment.Status.values else None
    try:
        withdraw_assignment(assignment=assignment, seen_status=seen)
    except StaleTransition as stale:
        messages.error(request, str(stale))
    else:
        messages.success(request, f"Item {assignment.item_id} withdrawn from {assignment.rater.pseudonym}; "
                                  "it can be assigned again.")  # fmt: skip
    return redirect("coordination:rater", study.pk, assignment.rater_id)


@require_POST
@coordinator_required
def reassign(request, pk, assignment_id):
    study = _study_or_404(pk)
    assignment = _assignment_or_404(study, assignment_id)
    form = ReassignForm(request.POST, candidates=reassign_candidates(assignment.rater))
    if study.is_locked:
        messages.error(request, LOCKED)
    elif assignment.status not in OPEN:
        messages.error(request, "Only items the rater holds and has not rated can be reassigned.")
    elif not form.is_valid():
        messages.error(request, "Choose another rater of the same pool who has not dropped out.")
    else:
        to_rater = form.cleaned_data["to_rater"]
        try:
            reassign_assignment(assignment=assignment, to_rater=to_rater)
        except (AssignmentError, StaleTransition) as error:
            messages.error(request, str(error))
        else:
            messages.success(request, f"Item {assignment.item_id} moved to {to_rater.pseudonym}.")
    return redirect("coordination:rater", study.pk, assignment.rater_id)


@require_POST
@coordinator_required
def withdraw_open(request, pk, rater_id):
    """Withdraw every item the rater holds unrated (coordination.withdraw_open_items)."""
    study = _study_or_404(pk)
    rater = _study_rater_or_404(study, rater_id)
    try:
        count = coordination.withdraw_open_items(study=study, profile=rater)
    except StaleTransition as stale:
        messages.error(request, str(stale))
    else:
        messages.success(request, f"{count} unrated item(s) withdrawn from {rater.pseudonym}; they can be assigned "
                                  "again. Ratings are kept.")  # fmt: skip
    return redirect("coordination:rater", study.pk, rater.pk)


@require_POST
@coordinator_required
def reassign_open(request, pk, rater_id):
    """Move every item the rater holds unrated to one other rater of the pool, all or none."""
    study = _study_or_404(pk)
    rater = _study_rater_or_404(study, rater_id)
    form = ReassignForm(request.POST, candidates=reassign_candidates(rater))
    if not form.is_valid():
        messages.error(request, "Choose another rater of the same pool who has not dropped out.")
        return redirect("coordination:rater", study.pk, rater.pk)
    to_rater = form.cleaned_data["to_rater"]
    try:
        count = coordination.reassign_open_items(study=study, profile=rater, to_rater=to_rater)
    except (AssignmentError, StaleTransition) as error:
        messages.error(request, str(error))
    else:
        messages.success(request, f"{count} unrated item(s) moved from {rater.pseudonym} to {to_rater.pseudonym}.")
    return redirect("coordination:rater", study.pk, rater.pk)


# --- Helpers -------------------------------------------------------------------------------------


def _study_or_404(pk) -> Study:
    return get_object_or_404(Study.objects.select_related("rubric_version__rubric"), pk=pk)


def _study_rater_or_404(study, rater_id):
    return get_object_or_404(dashboard.study_raters(study).select_related("pool", "user"), pk=rater_id)


def _assignment_or_404(study, assignment_id) -> Assignment:
    return get_object_or_404(Assignment.objects.select_related("rater"), pk=assignment_id, item__study=study)


def _dashboard_page(request, study, lock_form, status=200):
    figures = dashboard.study_dashboard(study)
    plots = [] if study.is_scorers_only else dashboard_plots.plots(study, figures.pools)
    context = {"study": study, "dashboard": figures, "lock_form": lock_form, "plots": plots}
    return render(request, "coordination/dashboard.html", context, status=status)


def _assign_message(pool, report: AssignReport) -> str:
    text = f"{report.assigned} rating(s) of the {pool.name} pool assigned"
    if report.by_rater:
        shares = [f"{name}: {n}" for name, n in sorted(report.by_rater.items())]
        text += " (" + ", ".join(shares[:10]) + (", …" if len(shares) > 10 else "") + ")"
    if report.unassignable:
        text += (f"; {report.unassignable} could not be assigned: every remaining rater already has the item "
                 "or wrote one of its answers. Invite more raters, then assign again")  # fmt: skip
    return text + "."
