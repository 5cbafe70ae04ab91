"""A study's MEDIC page (issue 20): first whether each effect generalises across (answering source, judge model)
pairs, with its plot, then the means with t-intervals per pair and the judge-pair agreement; the three tables as
CSV (as `analyze --study` writes them) and the plot as SVG/PNG. The study team's pages."""

from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from raters.access import study_team_required
from studies.models import Study

from . import medic_plots, medic_summary, services
from .downloads import table_download
from .medic import TABLE_FILES
from .medic_page import medic_page
from .pages import PLOT_FORMATS
from .plan_parameters import PlanParameterError

EFFECTS_SHOWN = 200  # rows of the generalisation table on the page; the CSV has every effect


def _study(pk) -> Study:
    return get_object_or_404(Study, pk=pk)


def _report_or_404(study):
    report = medic_page(study).report
    if report is None:
        raise Http404("No judge rated a MEDIC field of this study.")
    return report


@require_GET
@study_team_required
def medic_study(request, pk):
    study = _study(pk)
    data = medic_page(study)
    report = data.report
    problem = ""
    try:
        named = services.medic_plan(study) is not None
    except PlanParameterError as error:
        named, problem = False, str(error)
    context = {"study": study, "data": data, "report": report, "plan_named": named, "plan_problem": problem}
    if report is not None:
        effects = medic_summary.effect_rows(report.generalisation)
        context.update(
            effects=effects[:EFFECTS_SHOWN],
            n_effects=len(effects),
            n_pairs=report.means[["source", "judge"]].drop_duplicates().shape[0],
            means=medic_summary.means_sections(report.means),
            agreement=medic_summary.agreement_rows(report.agreement),
            plot_text=medic_plots.figure_description(report.tests),
            tables=[name.removesuffix(".csv") for name in TABLE_FILES.values()],
        )
    return render(request, "analysis/medic.html", context)


@require_GET
@study_team_required
def medic_table_csv(request, pk, table):
    """`generalisation.csv`, `judge_means.csv` or `judge_agreement.csv`, as `analyze --study` writes them
    (cells protected against formula injection, as every CSV download)."""
    name = f"{table}.csv"
    if name not in TABLE_FILES.values():
        raise Http404("No such table.")
    study = _study(pk)
    return table_download(_report_or_404(study).tables()[name], study=study, filename=name)


@require_GET
@study_team_required
def medic_plot(request, pk, fmt):
    study = _study(pk)
    narrow = request.GET.get("layout") == "narrow"  # the outcomes' panels stacked, for a phone
    image = medic_plots.generalisation_figure(_report_or_404(study).tests, fmt=fmt, narrow=narrow)
    response = HttpResponse(image, content_type=PLOT_FORMATS[fmt])
    response["Content-Disposition"] = f'inline; filename="study-{study.pk}-medic.{fmt}"'
    return response
