"""What the analysis pages show: a run's tables read back from its CSV text, formatted, filtered and plotted.

The statistics (analysis.tables) decide the numbers; this module only shapes them for the pages.
"""

import io
from collections import Counter
from dataclasses import dataclass

import pandas as pd
from django.db.models import Count
from django.urls import reverse

from raters.models import DemographicOption
from studies.exports import exported_ratings
from studies.models import Study
from studies.release import INDEPENDENT, LIST_SEPARATOR

from . import regression, run_summary, services
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
# Beside the four (analysis/notebook_extras.py): stored by runs in `extra_tables`, shown only when they have rows.
EXTRA_TITLES = {
    "counterfactual_dimensions": "Counterfactual pairs per dimension of bias (from the answers' independent ratings)",
    "rates_filtered": "Rates over items with every rating (Filtered sets, the paper's primary analysis)",
}
RUBRICS = ["independent", "pairwise", "counterfactual"]
AGGREGATIONS = ["pooled", "majority", "any"]
CI_COLUMNS = ("ci_low", "ci_high")
PLOT_FORMATS = {"svg": "image/svg+xml", "png": "image/png"}
HEAT_LIGHT, HEAT_RANGE = 96, 36  # the heat cells' lightness: lowest value 96%, highest 60%
CONSUMER_POOL = "consumer"


def read_table(run: AnalysisRun, name: str) -> pd.DataFrame:
    """A finished run's table as `pandas.read_csv` reads the file `analyze` writes."""
    text = run.table_csv(name)
    if not text.strip():
        return pd.DataFrame()
    return pd.read_csv(io.StringIO(text))


# --- Formatting (analysis.run_summary: counts whole, no "-0.000"; the CSV keeps full precision) -----------------

number = run_summary.number
interval = run_summary.interval
CLIPPED_MARK = "†"


@dataclass
class DisplayTable:
    name: str
    title: str
    columns: list[str]
    rows: list[list[str]]
    total: int  # rows in the whole table, before any filter
    clipped: bool = False  # some interval was clipped to the table's bounds (marked CLIPPED_MARK)
    common: list[tuple[str, str]] | None = None  # text columns with one value in every row: said once, above


def common_columns(frame: pd.DataFrame) -> list[str]:
    """The text columns holding one value in every row (of two or more): on a phone they took the width the
    level, estimate and interval need, so the page names them once above the table (the CSV keeps them)."""
    if len(frame) < 2:
        return []
    return [
        column
        for column in frame.columns
        if column not in CI_COLUMNS
        and not pd.api.types.is_numeric_dtype(frame[column])
        and frame[column].notna().all()
        and frame[column].nunique() == 1
    ]


def display_table(
    name: str,
    frame: pd.DataFrame,
    total: int | None = None,
    title: str = "",
    bounds: tuple[float, float] | None = None,
) -> DisplayTable:
    """Every column of the CSV, ci_low/ci_high shown together as one "95% CI" column where they appear; with
    `bounds` (a plan of probabilities) an interval running past them is clipped to them and marked."""
    has_ci = all(column in frame.columns for column in CI_COLUMNS)
    folded = common_columns(frame)
    common = [(column.replace("_", " "), str(frame[column].iloc[0])) for column in folded]
    columns, labels = [], []
    for column in frame.columns:
        if column in folded:
            continue
        if column in CI_COLUMNS:
            if column == "ci_low":
                columns.append("ci")
                labels.append("95% CI")
            continue
        columns.append(column)
        labels.append(column.replace("_", " "))
    rows, any_clipped = [], False
    for record in frame.to_dict("records"):
        cells = []
        for column in columns:
            if column == "ci" and has_ci and bounds is not None:
                text, clipped = run_summary.clipped_interval(record["ci_low"], record["ci_high"], bounds)
                any_clipped |= clipped
                cells.append(f"{text} {CLIPPED_MARK}" if clipped else text)
            elif column == "ci" and has_ci:
                cells.append(interval(record["ci_low"], record["ci_high"]))
            else:
                cells.append(number(record[column], column))
        rows.append(cells)
    total = len(frame) if total is None else total
    title = title or TABLE_TITLES.get(name) or EXTRA_TITLES[name]
    return DisplayTable(name, title, labels, rows, total, any_clipped, common)


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
        if value and column in shown.columns:
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
    """Each analysis plan's table a run computed with rows (in the plans' order), with its headline for the
    summary, its compact views, its plot's links and, for paired tests, the level its Bonferroni intervals were
    computed at. A plan whose table is empty has nothing to show and is left out (`run_holds` says so)."""
    sections = []
    for plan in SCORE_PLANS.values():
        text = run.plan_tables.get(plan.table)
        if text is None or not text.strip():
            continue
        frame = pd.read_csv(io.StringIO(text))
        if frame.empty:
            continue
        table = display_table(plan.stem, frame, title=plan.title, bounds=plan.bounds)
        section: dict = {"plan": plan, "table": table, "headlines": plan.headline(frame) if plan.headline else []}
        if plan.summary is not None:
            section["heat_tables"] = [heat_display(title, view) for title, view in plan.summary(frame)]
        if plan.plot is not None:
            section.update({fmt: reverse("analysis:plan_plot", args=[run.pk, plan.stem, fmt]) for fmt in PLOT_FORMATS})
        if plan.correction == "bonferroni":
            section["bonferroni"] = bonferroni_note(run_summary.bonferroni_levels(frame))
        sections.append(section)
    return sections


def bonferroni_note(levels: list[tuple[int, float]]) -> str:
    """At what level this run's Bonferroni intervals were computed: 1 - 0.05/m for the m pairs present."""
    if not levels:
        return ""
    parts = [f"{100 * confidence:.2f}% (1 − 0.05/{m}, {m} pair{'s' if m != 1 else ''})" for m, confidence in levels]
    return "Bonferroni intervals computed at " + "; ".join(parts) + ": m counts the pairs of the groups present."


def heat_display(title: str, view: pd.DataFrame) -> dict:
    """A table of proportions shown as percentages, each cell shaded from the table's lowest (light) to highest
    value (orange), so the eye finds the extremes as in the paper's Figure 2a; the number is always written, and
    the key gives the two ends of the shading."""
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
            shade = f"background: hsl(25 90% {HEAT_LIGHT - HEAT_RANGE * share:.0f}%)"
            cells.append({"text": run_summary.percent(value), "style": shade})
        rows.append({"label": str(label), "cells": cells})
    key = {
        "low": run_summary.percent(low),
        "high": run_summary.percent(high),
        "gradient": f"linear-gradient(to right, hsl(25 90% {HEAT_LIGHT}%), hsl(25 90% {HEAT_LIGHT - HEAT_RANGE}%))",
    }
    return {"title": title, "columns": [str(column) for column in view.columns], "rows": rows, "key": key}


def extra_sections(run: AnalysisRun) -> list[DisplayTable]:
    """The run's tables beside the four, in EXTRA_TITLES' order (runs store only those with rows)."""
    found = [(name, run.extra_tables.get(f"{name}.csv")) for name in EXTRA_TITLES]
    return [display_table(name, pd.read_csv(io.StringIO(text))) for name, text in found if text and text.strip()]


def extra_table_text(run: AnalysisRun, name: str) -> str | None:
    return run.extra_tables.get(f"{name}.csv") if name in EXTRA_TITLES else None


def plan_table_text(run: AnalysisRun, name: str) -> str | None:
    """The CSV text of the plan table `<name>.csv` a run computed, None when it has none by that name."""
    plan = plan_for_table(f"{name}.csv")
    return run.plan_tables.get(plan.table) if plan is not None else None


def run_tables(run: AnalysisRun, query) -> dict:
    """Everything a finished run's page shows: the summary first (the headline estimates and what the run holds),
    then its sections. The rating tables only when the run has ratings: a Q-Pain run shows no empty EquityMedQA
    sections."""
    sections = plan_sections(run)
    context: dict = {"plan_sections": sections, "rating_tables": False}
    headlines = [headline for section in sections for headline in section["headlines"]]
    if services.has_rating_tables(run.study):
        rates = read_table(run, "rates")
        if not rates.empty:
            context["rating_tables"] = True
            context.update(rates_section(run, query))
            context["filtered"] = any(name in query for name in ("rubric", "dataset", "aggregation"))
            tables = [display_table(name, read_table(run, name)) for name in TABLE_FIELDS if name != "rates"]
            context["other_tables"] = tables + extra_sections(run)
            headlines = run_summary.rate_headlines(rates) + headlines
    context["headlines"] = headlines
    context["holds"] = run_holds(run, sections, rating_tables=context["rating_tables"])
    return context


def run_holds(run: AnalysisRun, sections: list[dict], *, rating_tables: bool) -> str:
    """One line saying what the run holds, so that a section left out is not a mystery."""
    parts = []
    if rating_tables:
        counted = ", ".join(f"{count} {kind}" for kind, count in run.ratings.items() if count) or "the ratings"
        parts.append(f"the rating tables ({counted} ratings)")
        parts += [EXTRA_TITLES[name] for name in EXTRA_TITLES if run.extra_tables.get(f"{name}.csv")]
    parts += [section["plan"].title for section in sections]
    line = "This run holds " + "; ".join(parts) + "." if parts else "This run holds no estimates."
    if not services.has_rating_tables(run.study):
        line += f" {run.study.name} has no rubric: nobody rates its answers, so there are no rating tables."
        if not sections:
            line += " Its definition names no analysis plan with scored answers either."
    elif not rating_tables:
        line += " There were no ratings, so the rating tables (rates, reliability, cross-tab, regression) are left out."
    return line


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


def panel_categories() -> dict[str, set[str]]:
    """Per regression predictor, the categories the panel's demographics form offers now (and DECLINED)."""
    offered: dict[str, set[str]] = {predictor: {regression.DECLINED} for predictor in PREDICTORS}
    for field, label in DemographicOption.objects.values_list("field", "label"):
        if f"rater_{field}" in offered:
            offered[f"rater_{field}"].add(label)
    return offered


def progress_payload(run: AnalysisRun) -> dict:
    return {
        "id": run.pk,
        "status": run.status,
        "status_display": run.get_status_display(),
        "finished": run.is_finished,
        "progress": run.progress,
        "step": run.step,
    }
