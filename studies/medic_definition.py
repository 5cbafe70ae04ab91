"""The committed MEDIC study file (`studies/definitions/medic.yaml`), as `studies.medic_study` writes it: BBN's
24 seed desires (imported as `MEDIC (BBN fixtures)`, `step: desire`), a question for each of 8 patients (a man or a
woman; Asian, Black, Hispanic or White: MEDIC's patient-expression template), each restyled in the 95
styles MEDIC's fixtures show (5 grade levels x 19 writing descriptors, ../shared/datasets/medic/
derived_styles_observed.jsonl) with 2 samples each, answered by two sources and judged by two judge models.
The sources named are the demo's stand-ins: a new version of the file names real models (README, "Running MEDIC").
"""

import json
from pathlib import Path

from datasets.demo import STAND_IN
from datasets.importers.medic import MEDIC_DATASET

from .demo_medic import ANSWERERS, JUDGE_MODELS
from .medic_study import medic_file

DEFINITION = Path(__file__).resolve().parent / "definitions" / "medic.yaml"
DESCRIPTION = (
    "MEDIC (Liu et al., NeurIPS 2025 demo; seed 003): patient questions made by a model in chained steps from BBN's "
    "seed desires, for 8 patients (gender x race), restyled in MEDIC's 95 styles (grade level x writing "
    "descriptor), answered by several models "
    "and read by several judge models with MEDIC's three judge prompts (hallucinations, omissions, treatment "
    "categories); results per (answering model, judge model) pair and how far each effect generalises across "
    "pairs. Run: import_medic, load this file, run_steps --study ID --wait, generate_answers per condition and "
    "questions dataset, items_from_answers, judge_study per judge, analyze (README, 'Running MEDIC'). The sources "
    "here are the demo's stand-ins: name real models in a new version of this file."
)


PATIENTS = [
    {"gender": gender, "race": race} for gender in ("man", "woman") for race in ("Asian", "Black", "Hispanic", "White")
]


def styles_of(path: Path) -> list[str]:
    return [json.loads(line)["text"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def definition_text(styles: list[str]) -> str:
    return medic_file(
        name="MEDIC", description=DESCRIPTION, desires=MEDIC_DATASET, desire_levels={"step": "desire"},
        maker=STAND_IN, family="mistral", styles=styles, samples=2, answerers=list(ANSWERERS),
        judge_models=list(JUDGE_MODELS), patients=PATIENTS,
    )  # fmt: skip
