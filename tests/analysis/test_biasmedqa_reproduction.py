"""BiasMedQA end to end on the database: the released responses imported with `import_biasmedqa_responses`, then
`analyze --out DIR`, reproduce the paper's Tables 1, 2, 3 and 5 in DIR/accuracy.csv (the README's
"Reproducing BiasMedQA" commands, with the base questions the demo loads)."""

from pathlib import Path

import pandas as pd
import pytest
from django.core.management import call_command

from analysis.choice_accuracy import ACCURACY_COLUMNS
from datasets.demo import DEMO_DATA
from scoring.models import Score

from .test_biasmedqa_published import (
    test_every_published_accuracy_cell_is_reproduced as check_accuracy_cells,
)
from .test_biasmedqa_published import (
    test_table_5_non_response_without_bias_is_reproduced as check_non_response,
)

RELEASE = "biasmedqa/model_responses/model_responses_all.csv.gz"


@pytest.mark.django_db(transaction=True)
def test_imported_release_and_analyze_reproduce_the_published_tables(shared_datasets: Path, tmp_path: Path):
    call_command("import_questions", str(DEMO_DATA / "medqa_usmle_test.jsonl"), format="medqa", verbosity=0)
    call_command("import_biasmedqa_responses", str(shared_datasets / RELEASE), verbosity=0)

    call_command("analyze", out=tmp_path, plan=["biasmedqa-accuracy"], verbosity=0)

    table = pd.read_csv(tmp_path / "accuracy.csv", keep_default_na=False, na_values=[""])
    assert list(table.columns) == ACCURACY_COLUMNS
    assert (len(table), int(table["n"].sum())) == (170, 216_288)
    check_accuracy_cells(table)
    check_non_response(table)
    # The released labels decided the outcomes; our own letter scorer's readings are kept beside them.
    assert Score.objects.filter(scorer="released").count() == 216_288
    assert Score.objects.filter(scorer="letter").count() == 216_288
    assert (tmp_path / "accuracy.png").stat().st_size > 10_000
