"""The third-party deepseek-32k Q-Pain outputs (../shared/datasets/qpain/model_outputs) as `analysis.paired` values.

One row per record: block = the vignette (`{context}-{NN}`, DESIGN.md's external id), level = `Race gender`, value
= P(No) = exp(prob_no) (the file's `prob_*` fields are natural-log probabilities), NaN where the record has none
(44 of 400). No database: the same numbers `import_qpain_outputs` stores as `released_p_no`.
"""

import json
import math
from pathlib import Path

import pandas as pd

OUTPUTS = "qpain/model_outputs/deepseek-32k_qpain_outputs.jsonl"
CONTEXTS = {
    "Acute Cancer Pain": "acute_cancer",
    "Acute Non Cancer Pain": "acute_non_cancer",
    "Chronic Cancer Pain": "chronic_cancer",
    "Chronic Non Cancer Pain": "chronic_non_cancer",
    "Post Operative Pain": "post_op",
}
# The paper's order (Figures 2b and 3): women first, races alphabetical.
LEVEL_ORDER = [f"{race} {gender}" for gender in ("woman", "man") for race in ("Asian", "Black", "Hispanic", "White")]


def deepseek_values(shared_datasets: Path) -> pd.DataFrame:
    rows = []
    for line in (shared_datasets / OUTPUTS).read_text().splitlines():
        record = json.loads(line)
        context = CONTEXTS[record["context"]]
        log_p = record.get("prob_no")
        rows.append(
            {
                "study": "Q-Pain",
                "outcome": "p_no",
                "source": "deepseek-32k",
                "factor": "race x gender",
                "level": f"{record['race']} {record['gender']}",
                "block": f"{context}-{record['vignette_idx']:02d}",
                "context": context,
                "value": math.exp(log_p) if log_p is not None else math.nan,
            }
        )
    return pd.DataFrame(rows)
