"""MEDIC as a study file (issue 20; DESIGN.md, "MEDIC"): one function writes the design, so the committed
`studies/definitions/medic.yaml` and the demo's small MEDIC study are the same design at two sizes.

The chain: desires (MEDIC's seed desires, `step: desire`) -> a patient question each (the style "standard") ->
each question restyled in every style (grade level x writing descriptor) and sample; the study's questions are
the standard and the restyled ones, answered by every answering source; three judges per judge model (the
hallucination, omission and treatment-category parts of the "MEDIC answer review" rubric, each with MEDIC's own
prompt); the `medic` plan reports per (answering source, judge model) pair.
"""

from typing import Any

from datasets.chains.medic_templates import EXTRA_STRING, PATIENT_EXPRESSION, RESTYLE_EXTRA_STRING, recipe_name
from datasets.medic_styles import STANDARD, style_levels

from . import medic
from .study_schema import complete
from .study_yaml import dump_yaml


def medic_definition(
    *,
    name: str,
    description: str,
    desires: str,
    desire_levels: dict[str, str],
    maker: str,
    family: str,
    styles: list[str],
    samples: int,
    answerers: list[str],
    judge_models: list[str],
    patients: list[dict[str, str]] | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """The study file's definition (complete, in the schema's order). `maker`: the source generating questions
    with the templates of its `family` (mistral, llama, qwen); `judge_models`: sources, three judges each;
    `patients`: the patients' levels (`gender`, `race`: "I'm a {gender}. I'm {race}" before the desire, MEDIC's
    patient-expression template), or none (MEDIC's desire-to-question template)."""
    asked, restyled = f"{name}: questions", f"{name}: restyled questions"
    first = {
        "name": f"{name}: desire to question",
        "source": maker,
        "recipe": recipe_name("desire to question", family),
        "input_dataset": desires,
        "input_levels": desire_levels,
        "output": asked,
        "expansions": [{"style": STANDARD}],
        "phrases": {"extra_string": EXTRA_STRING},
        "output_levels": {"step": "question"},
    }
    if patients:
        first["recipe"] = recipe_name("desire and patient to question", family)
        first["expansions"] = [{**patient, "style": STANDARD} for patient in patients]
        first["phrases"] = {**first["phrases"], "patient_expression": PATIENT_EXPRESSION}
    steps = [
        first,
        {
            "name": f"{name}: restyle",
            "source": maker,
            "recipe": recipe_name("restyle", family),
            "after": f"{name}: desire to question",
            "output": restyled,
            "expansions": [style_levels(style) for style in styles],
            "phrases": {"extra_string": RESTYLE_EXTRA_STRING},
            "output_levels": {"step": "restyled"},
            "samples": samples,
            "seed": seed,
        },
    ]
    judges = [
        {
            "name": f"MEDIC {part} judge ({model})",
            "source": model,
            "instructions": medic.INSTRUCTIONS[part],
            "shown_fields": medic.SHOWN_FIELDS[part],
            "questions": medic.PARTS[part],
        }
        for model in judge_models
        for part in medic.PARTS
    ]
    definition = {
        "format": 1,
        "name": name,
        "description": description,
        "steps": steps,
        "questions": [{"dataset": asked}, {"dataset": restyled}],
        "conditions": [{"source": source} for source in answerers],
        "rubric": {"name": medic.RUBRIC_NAME, "version": 1},
        "judges": judges,
        "plans": [{"plan": "medic"}],
    }
    return complete(definition)


def medic_file(**options: Any) -> str:
    return dump_yaml(medic_definition(**options))
