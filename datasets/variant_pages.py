"""What the variant-run pages (and their API) show of the generator registry (`datasets.variants`)."""

from .models import VariantRun
from .variants import GENERATORS


def generator_choices() -> list[tuple[str, str]]:
    return [(name, f"{name} v{generator.version}: {generator.description}") for name, generator in
            sorted(GENERATORS.items())]  # fmt: skip


def levels_of(generator: str) -> tuple[str, ...]:
    found = GENERATORS.get(generator)
    return found.levels if found else ()


def level_choices() -> list[tuple[str, str]]:
    seen = dict.fromkeys(level for generator in GENERATORS.values() for level in generator.levels)
    return [(level, level.replace("_", " ")) for level in seen]


def run_options(*, generator: str, biases: list[str] | None, limit: int | None) -> dict:
    """A run's generator options from the page's or the API's fields (each level once, in the order given, under
    the generator's own option: BiasMedQA's `biases`, Q-Pain's `levels`)."""
    options: dict = {}
    if biases:
        found = GENERATORS.get(generator)
        options[found.levels_option if found else "levels"] = list(dict.fromkeys(biases))
    if limit:
        options["limit"] = limit
    return options


def run_percent(run: VariantRun) -> int:
    return round(100 * run.done / run.total) if run.total else (100 if run.is_finished else 0)


def option_rows(run: VariantRun) -> list[tuple[str, str]]:
    """A run's options as (name, text): lists joined with commas; the letters table only counted."""
    rows = []
    for key, value in (run.options or {}).items():
        if isinstance(value, dict):
            rows.append((key, f"{len(value)} entries"))
        else:
            rows.append((key, ", ".join(map(str, value)) if isinstance(value, list) else str(value)))
    return rows
