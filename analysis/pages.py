"""What the analysis pages show: a run's tables read back from its CSV text, formatted, filtered and plotted.

The statistics (analysis.tables) decide the numbers; this module only shapes them for the pages.
"""

import io
import math
from collections import Counter
from dataclasses import dataclass

import pandas as pd
from django.db.models import Count
from django.urls import reverse

from studies.exports import exported_ratings
from studies.models import Study
from studies.release import INDEPENDENT, LIST_SEPARATOR

from . import regression, services
from .forms import PREDICTORS, RatesFilterForm
from .models import TABLE_FIELDS, AnalysisRun
from .plan_parameters import PlanParameterError
from .plans import SCORE_PLANS, plan_for_table

TABLE_TITLES = {
    "rates": "Rates with 95% CIs",
    "reliability": "Inter-rater reliability",
    "counterfactual_crosstab": "Counterfactual cross-tab",
    "consumer_regression": "Consumer regression",
}
RUBRICS = ["independent", "pairwise", "counterfactual"]
AGGREGATIONS = ["pooled", "majority", "any"]
COUNT_COLUMNS = {"n", "n_items", "n_raters", "correct", "non_response"}
CI_COLUMNS = ("ci_low", "ci_high")
PLOT_FORMATS = {"svg": "image/svg+xml", "png": "image/png"}
CONSUMER_POOL = "consumer"


def read_table(run: AnalysisRun, name: str) -> pd.DataFrame:
    """A finished run's table as `pandas.read_csv` reads the file `analyze` writes."""
    text = run.table_csv(name)
    if not text.strip():
        return pd.DataFrame()
    return pd.read_csv(io.StringIO(text))


# --- Formatting ----------------------------------------------------------------------------------------


def number(value, column: str = "") -> str:
    """Three decimals; counts as whole numbers; p-values below 0.001 as "<0.001"; missing as empty."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if column in COUNT_COLUMNS:
        return str(int(value))
    if column == "p_value" and value < 0.001:
        return "<0.001"
    return f"{value:.3f}"


def interval(low, high) -> str:
    low, high = number(low), number(high)
    return f"{low} – {high}" if low and high else ""


@dataclass
class DisplayTable:
    name: str
    title: str
    columns: list[str]
    rows: list[list[str]]
    total: int  # rows in the whole table, before any filter


def display_table(name: str, frame: pd.DataFrame, total: int | None = None, title: str = "") -> DisplayTable:
    """Every column of the CSV, ci_low/ci_high shown together as one "95% CI" column where they appear."""
    has_ci = all(column in frame.columns for column in CI_COLUMNS)
    columns, labels = [], []
    for column in frame.columns:
        if column in CI_COLUMNS:
            if column == "ci_low":
                columns.append("ci")
                labels.append("95% CI")
            continue
        columns.append(column)
        labels.append(column.replace("_", " "))
    rows = []
    for record in frame.to_dict("records"):
        cells = []
        for column in columns:
            if column == "ci" and has_ci:
                cells.append(interval(record["ci_low"], record["ci_high"]))
            else:
                cells.append(number(record[column], column))
        rows.append(cells)
    total = len(frame) if total is None else total
    return DisplayTable(name, title or TABLE_TITLES[name], labels, rows, total)


# --- The rates table: filters and plots ------------------------------------------------------------------


def _present(frame: pd.DataFrame, column: str, order: list[str] | None = None) -> list[str]:
    if column not in frame.columns:
        return []
    values = [str(value) for value in frame[column].dropna().unique()]
    if order:
        return [value for value in order if value in values] + sorted(set(values) - set(order))
    return sorted(values)


def rates_section(run: AnalysisRun, query) -> dict:
    """The rates table filtered by rubric / dataset / aggregation (GET), and the plots of that rubric."""
    rates = read_table(run, "rates")
    values = {
        "rubric": _present(rates, "rubric", RUBRICS),
        "dataset": _present(rates, "dataset"),
        "aggregation": _present(rates, "aggregation", AGGREGATIONS),
    }
    defaults = {"rubric": values["rubric"][0] if values["rubric"] else "", "dataset": "", "aggregation": "pooled"}
    form = RatesFilterForm(query, values=values, defaults=defaults)
    shown = rates
    for column, value in form.chosen.items():
        if value:
            shown = shown[shown[column].astype(str) == value]
    return {
        "rates_form": form,
        "rates_table": display_table("rates", shown, total=len(rates)),
        "plots": plot_links(run, rates, form.chosen),
    }


def plot_links(run: AnalysisRun, rates: pd.DataFrame, chosen: dict[str, str]) -> list[dict]:
    """One figure per outcome of the chosen rubric (all rubrics when none is) at the chosen aggregation."""
    if rates.empty:
        return []
    aggregation = chosen.get("aggregation") or "pooled"
    rubrics = [chosen["rubric"]] if chosen.get("rubric") else _present(rates, "rubric", RUBRICS)
    links = []
    for rubric in rubrics:
        cells = rates[(rates["rubric"] == rubric) & (rates["aggregation"] == aggregation)]
        for outcome in cells["outcome"].drop_duplicates():
            urls = {
                fmt: reverse("analysis:plot", args=[run.pk, rubric, outcome, aggregation, fmt]) for fmt in PLOT_FORMATS
            }
            title = f"{rubric.capitalize()} rubric: {outcome.replace('_', ' ')} ({aggregation})"
            links.append({"title": title, "name": f"{rubric}-{outcome}-{aggregation}", **urls})
    return links


def has_plot(rates: pd.DataFrame, *, rubric: str, outcome: str, aggregation: str) -> bool:
    if rates.empty:
        return False
    cells = rates[(rates["rubric"] == rubric) & (rates["outcome"] == outcome) & (rates["aggregation"] == aggregation)]
    return not cells.empty


def plan_sections(run: AnalysisRun) -> list[dict]:
    """Each analysis plan's table a run computed (in the plans' order), with its plot's links."""
    sections = []
    for plan in SCORE_PLANS.values():
        text = run.plan_tables.get(plan.table)
        if text is None:
            continue
        frame = pd.read_csv(io.StringIO(text)) if text.strip() else pd.DataFrame()
        section = {"plan": plan, "table": display_table(plan.stem, frame, title=plan.title)}
        if plan.summary is not None and not frame.empty:
            section["heat_tables"] = [heat_display(title, view) for title, view in plan.summary(frame)]
        if plan.plot is not None and not frame.empty:
            section.update({fmt: reverse("analysis:plan_plot", args=[run.pk, plan.stem, fmt]) for fmt in PLOT_FORMATS})
        sections.append(section)
    return sections


def heat_display(title: str, view: pd.DataFrame) -> dict:
    """A table of proportions shown as percentages, each cell shaded from the table's lowest (light) to highest
    value (orange), so the eye finds the extremes as in the paper's Figure 2a; the number is always written."""
    values = [float(value) for value in view.to_numpy().ravel() if pd.notna(value)]
    low, high = (min(values), max(values)) if values else (0.0, 0.0)
    rows = []
    for label, record in zip(view.index, view.to_numpy(), strict=True):
        cells = []
        for value in record:
            if pd.isna(value):
                cells.append({"text": "–", "style": ""})
                continue
            share = (float(value) - low) / (high - low) if high > low else 0.0
            shade = f"background: hsl(25 90% {96 - 36 * share:.0f}%)"
            cells.append({"text": f"{100 * float(value):.1f} %", "style": shade})
        rows.append({"label": str(label), "cells": cells})
    return {"title": title, "columns": [str(column) for column in view.columns], "rows": rows}


def plan_table_text(run: AnalysisRun, name: str) -> str | None:
    """The CSV text of the plan table `<name>.csv` a run computed, None when it has none by that name."""
    plan = plan_for_table(f"{name}.csv")
    return run.plan_tables.get(plan.table) if plan is not None else None


def run_tables(run: AnalysisRun, query) -> dict:
    """Everything a finished run's page shows: a study read by scorers only has its plans' tables alone."""
    context: dict = {"plan_sections": plan_sections(run), "rating_tables": services.has_rating_tables(run.study)}
    if context["rating_tables"]:
        context.update(rates_section(run, query))
        tables = [display_table(name, read_table(run, name)) for name in TABLE_FIELDS if name != "rates"]
        context["other_tables"] = tables
    return context


# --- The run form and the progress poll --------------------------------------------------------------------


def chosen_study(value) -> Study | None:
    """The study an id names (from the query or the posted form), None for all studies or an id that names none."""
    try:
        return Study.objects.filter(pk=int(value)).first() if value else None
    except (TypeError, ValueError, OverflowError):
        return None


@dataclass
class PlansNote:
    """What a run of the chosen study (None: all studies) computes besides the rating tables, for the run form."""

    plans: list[str]  # the plans' titles
    problem: str = ""  # why the study's plans cannot be computed, if they cannot
    rating_tables: bool = True


def plans_note(study: Study | None) -> PlansNote:
    if study is None:
        return PlansNote([plan.title for plan in SCORE_PLANS.values()])
    try:
        # A plan with a report of its own is shown on its own page (MEDIC's, ContextSRH's), computed when read.
        plans = [f"{plan.title} (on its page)" if plan.own_report else plan.title for plan in services.plans_of(study)]
    except PlanParameterError as error:
        return PlansNote([], problem=f"The analysis plans of {study.name} cannot be computed: {error}")
    return PlansNote(plans, rating_tables=services.has_rating_tables(study))


def consumer_levels(study: Study | None = None) -> dict[str, list[tuple[str, int]]]:
    """Per regression predictor, the levels among the current consumer ratings of `study` (None: all studies)
    with their counts, most frequent first (ties by name), as the regression names them: race/ethnicity by
    category, a rater who chose several counting at each (`regression.categories`)."""
    ratings = exported_ratings(INDEPENDENT, study).filter(assignment__rater__pool__slug=CONSUMER_POOL)
    counters = {predictor: Counter() for predictor in PREDICTORS}
    background = "assignment__rater__background__"
    # Counted in the database: the form is shown on every visit, and a study may hold many consumer ratings.
    fields = [f"{background}age_group", f"{background}gender", f"{background}race_ethnicity"]
    rows = ratings.order_by().values(*fields).annotate(n=Count("id")).values_list(*fields, "n")
    for age_group, gender, race_ethnicity, n in rows:
        races = regression.categories(LIST_SEPARATOR.join(race_ethnicity or []))
        for predictor, values in zip(PREDICTORS, ([age_group], [gender], races), strict=True):
            for value in values:
                if value:
                    counters[predictor][value] += n
    return {
        predictor: sorted(counter.items(), key=lambda item: (-item[1], item[0]))
        for predictor, counter in counters.items()
    }


def progress_payload(run: AnalysisRun) -> dict:
    return {
        "id": run.pk,
        "status": run.status,
        "status_display": run.get_status_display(),
        "finished": run.is_finished,
        "progress": run.progress,
        "step": run.step,
    }
