"""A study's ContextSRH page (issue 21): Table 1 of the paper (mean similarity, % Win, % Human per attribute x group
x answering source) with its plot, the group tests and the people's agreement; the three tables as CSV (as
`analyze --study` writes them) and the plot as SVG/PNG. The study team's pages."""

from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from raters.access import study_team_required
from studies.models import Study

from . import contextsrh_plots, contextsrh_summary, services
from .contextsrh import TABLE_FILES
from .contextsrh_page import contextsrh_page
from .downloads import table_download
from .pages import PLOT_FORMATS
from .plan_parameters import PlanParameterError


def _study(pk) -> Study:
    return get_object_or_404(Study, pk=pk)


def _report_or_404(study):
    report = contextsrh_page(study).report
    if report is None:
        raise Http404("No context answer of this study has a similarity yet.")
    return report


@require_GET
@study_team_required
def contextsrh_study(request, pk):
    study = _study(pk)
    data = contextsrh_page(study)
    report = data.report
    problem = ""
    try:
        plan = services.contextsrh_plan(study)
    except PlanParameterError as error:
        plan, problem = None, str(error)
    options = (plan.options if plan is not None else {}) or {}
    context = {"study": study, "data": data, "report": report, "plan_named": plan is not None,
               "plan_problem": problem, "k": options.get("k")}  # fmt: skip
    if report is not None:
        context.update(
            sections=contextsrh_summary.table1_sections(report.similarity),
            tests=contextsrh_summary.test_rows(report.group_tests),
            agreement=contextsrh_summary.agreement_rows(report.agreement),
            plot_text=contextsrh_plots.figure_description(report.similarity),
            tables=list(TABLE_FILES.items()),
            has_people=bool(len(report.verdicts)),
        )
    return render(request, "analysis/contextsrh.html", context)


@require_GET
@study_team_required
def contextsrh_table_csv(request, pk, table):
    """`similarity.csv`, `group_tests.csv` or `human_agreement.csv`, as `analyze --study` writes them (cells
    protected against formula injection, as every CSV download)."""
    if table not in TABLE_FILES:
        raise Http404("No such table.")
    study = _study(pk)
    name = TABLE_FILES[table]
    return table_download(_report_or_404(study).tables()[name], study=study, filename=name)


@require_GET
@study_team_required
def contextsrh_plot(request, pk, fmt):
    study = _study(pk)
    narrow = request.GET.get("layout") == "narrow"  # the attributes' panels stacked, for a phone
    image = contextsrh_plots.similarity_figure(_report_or_404(study).similarity, fmt=fmt, narrow=narrow)
    response = HttpResponse(image, content_type=PLOT_FORMATS[fmt])
    response["Content-Disposition"] = f'inline; filename="study-{study.pk}-contextsrh.{fmt}"'
    return response
