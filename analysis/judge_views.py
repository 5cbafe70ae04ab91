"""A study's judge page (issue 19): judges against people, the equity audit's flags, judge-assisted estimates,
where judges and people disagree, failed replies; its two tables as CSV and its plot. The study team's pages."""

from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from raters.access import study_team_required
from raters.roles import is_coordinator
from studies.models import JudgeReply, Study

from . import judge_plots, judge_summary
from .downloads import table_download
from .judge_page import judge_page
from .judge_report import TABLE_ATTRIBUTES
from .pages import PLOT_FORMATS

FAILURES_SHOWN = 50
RAW_REPLY_SHOWN = 400  # characters of a raw reply shown before "show all"


def _study(pk) -> Study:
    return get_object_or_404(Study.objects.select_related("rubric_version"), pk=pk)


@require_GET
@study_team_required
def judge_study(request, pk):
    study = _study(pk)
    data = judge_page(study)
    report = data.report
    failures = JudgeReply.objects.filter(item__study=study).exclude(errors={}).select_related("judge").order_by("-id")
    context = {
        "study": study,
        "data": data,
        "report": report,
        "judges": list(study.judges.order_by("name")),
        "failures": failures[:FAILURES_SHOWN],
        "n_failures": failures.count(),
        "raw_reply_shown": RAW_REPLY_SHOWN,
        "user_is_coordinator": is_coordinator(request.user),
    }
    if report is not None:
        context.update(
            metrics=list(judge_summary.METRIC_LABELS.values()),
            sections=judge_summary.agreement_sections(report.agreement),
            findings=judge_summary.flagged_findings(report.agreement),
            assisted=judge_summary.assisted_rows(report.judge_assisted),
            places=judge_summary.place_rows(report.place),
            consistency=judge_summary.consistency_rows(report.consistency),
            plot_text=judge_plots.figure_description(report.agreement),
        )
    return render(request, "analysis/judges.html", context)


def _report_or_404(study):
    report = judge_page(study).report
    if report is None:
        raise Http404("No item of this study was rated by both people and a judge.")
    return report


@require_GET
@study_team_required
def judge_table_csv(request, pk, table):
    """One of the study's judge tables (`agreement.csv`, `judge_assisted.csv`, `judge_place.csv`,
    `judge_consistency.csv`), as `analyze --study` writes them (cells protected against formula injection, as
    every CSV download)."""
    if table not in TABLE_ATTRIBUTES:
        raise Http404("No such table.")
    study = _study(pk)
    return table_download(_report_or_404(study).tables()[table], study=study, filename=f"{table}.csv")


@require_GET
@study_team_required
def judge_plot(request, pk, fmt):
    study = _study(pk)
    narrow = request.GET.get("layout") == "narrow"  # the metrics stacked, for a phone
    image = judge_plots.agreement_figure(_report_or_404(study).agreement, fmt=fmt, narrow=narrow)
    response = HttpResponse(image, content_type=PLOT_FORMATS[fmt])
    response["Content-Disposition"] = f'inline; filename="study-{study.pk}-judges.{fmt}"'
    return response
