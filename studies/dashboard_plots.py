"""The dashboard's plots (studies/DESIGN.md, "Dashboard plots"): ratings per day per pool, progress toward each
pool's target, and time per item. The data come from the study's counted ratings (submitted, not withdrawn);
the drawing functions take plain data and draw on a `matplotlib.figure.Figure` without pyplot, as
analysis/plots.py does, so any thread may draw one. Each plot has a text alternative that says its numbers.
"""

import io
from dataclasses import dataclass
from datetime import date
from statistics import median

from django.db.models import Count
from django.db.models.functions import TruncDate
from matplotlib.figure import Figure

from .dashboard import PoolProgress, pool_progress
from .models import Assignment, Rating, Study

SUBMITTED = Assignment.Status.SUBMITTED
COLOURS = ["#1b6ca8", "#d1495b", "#3a9d5d", "#edae49", "#7b4b94", "#66a5ad", "#8c564b", "#555555"]
SIZE = (6.0, 3.2)  # inches: readable at a phone's width once scaled down to it


@dataclass(frozen=True)
class Plot:
    name: str
    title: str
    alt: str


# --- Data ------------------------------------------------------------------------------------------


def ratings_per_day(study: Study) -> dict[str, dict[date, int]]:
    """{pool name: {day: ratings submitted that day}} of the study's counted items, days in order."""
    rows = (
        Assignment.objects.filter(item__study=study, status=SUBMITTED, submitted_at__isnull=False)
        .annotate(day=TruncDate("submitted_at"))
        .values_list("rater__pool__name", "day")
        .annotate(n=Count("pk"))
        .order_by("rater__pool__name", "day")
    )
    per_pool: dict[str, dict[date, int]] = {}
    for pool, day, n in rows:
        per_pool.setdefault(pool, {})[day] = n
    return per_pool


def active_minutes(study: Study) -> list[float]:
    """Active time per item, in minutes, of the current ratings of counted items."""
    seconds = Rating.objects.filter(
        assignment__item__study=study, assignment__status=SUBMITTED, is_current=True
    ).values_list("active_seconds", flat=True)
    return [value / 60 for value in seconds.order_by()]


# --- Figures (plain data in, SVG bytes out) --------------------------------------------------------------


def _svg(figure: Figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="svg", metadata={"Date": None})
    figure.clear()
    return buffer.getvalue()


def per_day_figure(per_pool: dict[str, dict[date, int]]) -> bytes:
    figure = Figure(figsize=SIZE, layout="constrained")
    ax = figure.add_subplot()
    days = sorted({day for counts in per_pool.values() for day in counts})
    width = 0.8 / max(len(per_pool), 1)
    for index, (pool, counts) in enumerate(per_pool.items()):
        xs = [days.index(day) + (index - (len(per_pool) - 1) / 2) * width for day in counts]
        ax.bar(xs, list(counts.values()), width=width, color=COLOURS[index % len(COLOURS)], label=pool)
    step = max(1, len(days) // 6)  # at most about six date labels, so they never overlap
    ax.set_xticks(range(0, len(days), step), [day.strftime("%d %b") for day in days[::step]])
    ax.set_ylabel("Ratings")
    ax.grid(axis="y", color="#dddddd")
    ax.set_axisbelow(True)
    ax.legend(fontsize=8, frameon=False)
    return _svg(figure)


def progress_figure(pools: list[tuple[str, int, int]]) -> bytes:
    """(pool, done, needed): one bar per pool, the share done of its target, the counts written beside it."""
    figure = Figure(figsize=(SIZE[0], 0.7 + 0.55 * len(pools)), layout="constrained")
    ax = figure.add_subplot()
    names = [name for name, _done, _needed in pools]
    shares = [done / needed if needed else 0 for _name, done, needed in pools]
    ax.barh(names, [1] * len(pools), color="#e6e9f0", height=0.6)
    ax.barh(names, shares, color=[COLOURS[i % len(COLOURS)] for i in range(len(pools))], height=0.6)
    for index, (_name, done, needed) in enumerate(pools):
        ax.text(0.01, index, f"{done} of {needed}", va="center", fontsize=9)
    ax.set_xlim(0, 1)
    ax.set_xticks([0, 0.25, 0.5, 0.75, 1], ["0 %", "25 %", "50 %", "75 %", "100 %"])
    ax.invert_yaxis()
    return _svg(figure)


def time_figure(minutes: list[float]) -> bytes:
    figure = Figure(figsize=SIZE, layout="constrained")
    ax = figure.add_subplot()
    ax.hist(minutes, bins=min(20, max(5, len(minutes) // 3)), color=COLOURS[0])
    middle = median(minutes)
    ax.axvline(middle, color=COLOURS[1], linestyle="--", label=f"median {middle:.1f} min")
    ax.set_xlabel("Active minutes per item")
    ax.set_ylabel("Items")
    ax.legend(fontsize=8, frameon=False)
    return _svg(figure)


# --- What the page shows ----------------------------------------------------------------------------


def per_day_alt(per_pool: dict[str, dict[date, int]]) -> str:
    parts = []
    for pool, counts in per_pool.items():
        busiest = max(counts, key=lambda day: counts[day])
        parts.append(f"{pool}: {sum(counts.values())} ratings over {len(counts)} day(s), most on "
                     f"{busiest:%d %b %Y} ({counts[busiest]})")  # fmt: skip
    return "; ".join(parts) + "."


def progress_alt(pools: list[tuple[str, int, int]]) -> str:
    return "; ".join(f"{name}: {done} of {needed} ratings" for name, done, needed in pools) + "."


def time_alt(minutes: list[float]) -> str:
    return (f"{len(minutes)} rated items; median {median(minutes):.1f} min, from {min(minutes):.1f} to "
            f"{max(minutes):.1f} min.")  # fmt: skip


def _pool_rows(pools: list[PoolProgress]) -> list[tuple[str, int, int]]:
    return [(p.pool.name, p.ratings_done, p.ratings_needed) for p in pools]


def plots(study: Study, pools: list[PoolProgress]) -> list[Plot]:
    """The plots the dashboard has data for, with their titles and text alternatives."""
    shown = []
    if pools:
        shown.append(Plot("progress", "Progress toward each pool's target", progress_alt(_pool_rows(pools))))
    if per_pool := ratings_per_day(study):
        shown.append(Plot("per-day", "Ratings per day, by pool", per_day_alt(per_pool)))
    if minutes := active_minutes(study):
        shown.append(Plot("time", "Time per item", time_alt(minutes)))
    return shown


def draw(study: Study, name: str) -> bytes | None:
    """The named plot's SVG, or None when it has no data (or no such plot)."""
    if name == "progress":
        pools = pool_progress(study)
        return progress_figure(_pool_rows(pools)) if pools else None
    if name == "per-day":
        per_pool = ratings_per_day(study)
        return per_day_figure(per_pool) if per_pool else None
    if name == "time":
        minutes = active_minutes(study)
        return time_figure(minutes) if minutes else None
    return None
