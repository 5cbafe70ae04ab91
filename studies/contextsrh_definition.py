"""The committed ContextSRH study file (`studies/definitions/contextsrh.yaml`), as `studies.contextsrh_study` writes
it: the 187 questions (imported as `ContextSRH (original questions)`) and their 1,518 context variants, answered by
two sources with ContextSRH's recipe, read by `minilm_cosine`, the answers without context rated by two health-equity
experts each (the paper's two researchers). The sources named are the demo's stand-ins: a new version of the file
names real models (README, "Running ContextSRH").
"""

from pathlib import Path

from datasets.importers.contextsrh import CONTEXTSRH_DATASET

from .contextsrh_study import contextsrh_file
from .demo_medic import ANSWERERS

DEFINITION = Path(__file__).resolve().parent / "definitions" / "contextsrh.yaml"
POOL = "Health equity expert"  # raters/defaults.py: the built-in pool of slug equity_expert
DESCRIPTION = (
    "ContextSRH (Levy, Karver, Adler, Kaufman & Dredze, Findings of EMNLP 2024, arXiv:2403.04858; seed 004): "
    "is a model's answer to a sexual and reproductive health question that depends on the asker's age, "
    "location or sex written for some groups more than others? Each of the 187 questions is asked as is and "
    "once per group of each attribute it depends on, with a context sentence appended (1,518 context "
    "questions), at temperature 0; each context answer is compared with its model's answer without context "
    "(cosine similarity of all-MiniLM-L6-v2 sentence embeddings, the scorer minilm_cosine); people mark the "
    "groups each answer without context is correct for. Run: import_contextsrh, generate_variants contextsrh "
    "--base 'ContextSRH (original questions)', load this file, generate_answers per condition and dataset, "
    "score_answers --scorer minilm_cosine --study ID, items_from_answers --study ID --base-only --expect "
    "relevant=all, assign the pool on the study's page, analyze (README, 'Running ContextSRH'). The sources here "
    "are the demo's stand-ins: name real models in a new version of this file."
)


def definition_text() -> str:
    return contextsrh_file(name="ContextSRH", description=DESCRIPTION, originals=CONTEXTSRH_DATASET,
                           answerers=list(ANSWERERS), pools={POOL: 2})  # fmt: skip
