"""What the variant-run pages (and their API) need of the generator registry: names, levels, and a progress view."""

from .models import VariantRun
from .variants import biasmedqa

# TODO(merge fix/variants): read these from the registry in datasets.variants.
GENERATORS = {biasmedqa.NAME: (biasmedqa.VERSION, (*biasmedqa.BIASES, *biasmedqa.V2_BIASES))}


def generator_choices() -> list[tuple[str, str]]:
    return [(name, f"{name} v{version}") for name, (version, _) in sorted(GENERATORS.items())]


def levels_of(generator: str) -> tuple[str, ...]:
    return GENERATORS[generator][1]


def level_choices() -> list[tuple[str, str]]:
    seen = dict.fromkeys(level for _, levels in GENERATORS.values() for level in levels)
    return [(level, level.replace("_", " ")) for level in seen]


def run_percent(run: VariantRun) -> int:
    return round(100 * run.done / run.total) if run.total else (100 if run.is_finished else 0)


def option_rows(run: VariantRun) -> list[tuple[str, str]]:
    """A run's options as (name, text): lists joined with commas."""
    return [
        (key, ", ".join(map(str, value)) if isinstance(value, list) else str(value))
        for key, value in (run.options or {}).items()
    ]
