"""What the variant-run pages (and their API) show of the generator registry (`datasets.variants`)."""

from .models import VariantRun
from .variants import GENERATORS, biasmedqa

# The levels a coordinator may tick, per generator (the registry's generators do not list them).
LEVELS = {biasmedqa.NAME: (*biasmedqa.SENTENCES, biasmedqa.UNBIASED)}


def generator_choices() -> list[tuple[str, str]]:
    return [(name, f"{name} v{generator.version}: {generator.description}") for name, generator in
            sorted(GENERATORS.items())]  # fmt: skip


def levels_of(generator: str) -> tuple[str, ...]:
    return LEVELS.get(generator, ())


def level_choices() -> list[tuple[str, str]]:
    seen = dict.fromkeys(level for levels in LEVELS.values() for level in levels)
    return [(level, level.replace("_", " ")) for level in seen]


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
