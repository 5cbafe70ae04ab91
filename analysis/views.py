"""The analyst pages: runs, the Run analysis form, a run's progress, tables, plots and downloads.

Coordinators and analysts (the study team) use them; raters get 403.
"""

import io

import pandas as pd
from django.http import Http404, HttpResponse, JsonResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.text import slugify
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_GET, require_http_methods

from raters.access import study_team_required
from studies.exports import stream_csv
from studies.models import Study

from . import pages, plots, services
from .forms import PREDICTORS, RunAnalysisForm, StudyForm
from .loading import KINDS
from .models import TABLE_FIELDS, AnalysisRun
from .plans import plan_for_table
from .results import result_rows, results_table

RUNS_SHOWN = 50


@require_http_methods(["GET", "POST"])
@study_team_required
def index(request):
    # The reference levels offered are those of the chosen study's consumers (posted, or chosen above by GET).
    study = pages.chosen_study(request.POST.get("study") if request.method == "POST" else request.GET.get("study"))
    form = RunAnalysisForm(
        request.POST or None,
        initial={"study": study},
        levels=pages.consumer_levels(study),
        panel=pages.panel_categories(),
    )
    plans = pages.plans_note(study)
    if request.method == "POST" and plans.problem:
        form.add_error(None, plans.problem)  # refused now rather than failing on the worker
    if request.method == "POST" and form.is_valid():
        run = services.start_analysis(
            study=form.cleaned_data["study"], user=request.user, reference_levels=form.reference_levels()
        )
        return redirect("analysis:run", run.pk)
    runs = AnalysisRun.objects.select_related("study", "created_by")[:RUNS_SHOWN]
    status = 400 if form.errors else 200
    context = {
        "study_form": StudyForm(initial={"study": study}, auto_id="choose_%s"),
        "study": study,
        "form": form,
        "plans": plans,
        "runs": runs,
    }
    return render(request, "analysis/index.html", context, status=status)


@require_GET
@study_team_required
def run_detail(request, pk):
    run = get_object_or_404(AnalysisRun.objects.select_related("study", "created_by"), pk=pk)
    context = {
        "run": run,
        "ratings": [(kind, run.ratings[kind]) for kind in KINDS if kind in run.ratings],
        "reference_levels": [(PREDICTORS.get(p, p), level) for p, level in run.reference_levels.items()],
    }
    if run.status == AnalysisRun.Status.DONE:
        context.update(pages.run_tables(run, request.GET))
    return render(request, "analysis/run.html", context)


@require_GET
@study_team_required
def run_progress(request, pk):
    return JsonResponse(pages.progress_payload(get_object_or_404(AnalysisRun, pk=pk)))


@require_GET
@study_team_required
@cache_control(private=True, max_age=3600)  # a finished run never changes
def table_csv(request, pk, table):
    run = get_object_or_404(AnalysisRun, pk=pk, status=AnalysisRun.Status.DONE)
    # The report's four tables, the tables beside them (notebook_extras), or an analysis plan's (accuracy.csv).
    if table in TABLE_FIELDS:
        text = run.table_csv(table)
    else:
        text = pages.extra_table_text(run, table) or pages.plan_table_text(run, table)
    if text is None:
        raise Http404("No such table.")
    response = HttpResponse(text, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="analysis-{run.pk}-{table}.csv"'
    return response


@require_GET
@study_team_required
@cache_control(private=True, max_age=3600)
def plot(request, pk, rubric, outcome, aggregation, fmt):
    run = get_object_or_404(AnalysisRun, pk=pk, status=AnalysisRun.Status.DONE)
    rates = pages.read_table(run, "rates")
    if not pages.has_plot(rates, rubric=rubric, outcome=outcome, aggregation=aggregation):
        raise Http404("The run has no rates for this plot.")
    image = plots.rates_figure(rates, rubric=rubric, outcome=outcome, aggregation=aggregation, fmt=fmt)
    response = HttpResponse(image, content_type=pages.PLOT_FORMATS[fmt])
    name = f"analysis-{run.pk}-{rubric}-{outcome}-{aggregation}.{fmt}"
    response["Content-Disposition"] = f'inline; filename="{name}"'
    return response


@require_GET
@study_team_required
@cache_control(private=True, max_age=3600)
def plan_plot(request, pk, name, fmt):
    run = get_object_or_404(AnalysisRun, pk=pk, status=AnalysisRun.Status.DONE)
    plan = plan_for_table(f"{name}.csv")
    text = pages.plan_table_text(run, name)
    if plan is None or plan.plot is None or not text:
        raise Http404("The run has no table for this plot.")
    image = plan.figure(pd.read_csv(io.StringIO(text)), fmt=fmt)
    response = HttpResponse(image, content_type=pages.PLOT_FORMATS[fmt])
    response["Content-Disposition"] = f'inline; filename="analysis-{run.pk}-{name}.{fmt}"'
    return response


@require_GET
@study_team_required
def results_csv(request, pk):
    """The study's results table, as `export_results` writes it."""
    study = get_object_or_404(Study, pk=pk)
    rows = stream_csv(result_rows(results_table(study)))
    response = StreamingHttpResponse(rows, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{slugify(study.name) or f"study-{study.pk}"}-results.csv"'
    return response
