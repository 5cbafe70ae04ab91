"""Issue 18's done-when flow through the committed study files and the README's commands: on the demo's database,
`load_study` BiasMedQA's and Q-Pain's definitions, import the released outputs INTO those studies (`--study ID`),
then `analyze --study ID --out DIR` for each. Each study writes its own plans' tables and not the other's, from its
results table, with the numbers the reproduction tests check."""

import io
from pathlib import Path

import pandas as pd
import pytest
from django.core.management import call_command

from analysis.choice_accuracy import ACCURACY_COLUMNS
from analysis.plan_loading import load_outcomes, table_csv
from analysis.plans import BIASMEDQA_ACCURACY
from datasets.models import Answer
from scoring.models import Score
from studies.models import Study, StudyAnswer

from .test_qpain_reproduction import (
    test_group_means_equal_the_files_means_per_group_and_context as check_group_means,
)
from .test_qpain_reproduction import (
    test_the_28_paired_tests_equal_scipy_over_the_same_vignettes as check_paired_tests,
)

pytestmark = pytest.mark.django_db

DEFINITIONS = Path(__file__).resolve().parents[2] / "studies" / "definitions"
# The first 50 questions' responses (8,498 of the 216,288; the whole file is tests/analysis/test_biasmedqa_reproduction)
BIASMEDQA = "biasmedqa/model_responses/model_responses_qid0-49.csv"
QPAIN = "qpain/model_outputs/deepseek-32k_qpain_outputs.jsonl"
RATING_TABLES = {"rates.csv", "reliability.csv", "counterfactual_crosstab.csv", "consumer_regression.csv"}
QPAIN_TABLES = {"paired_tests.csv", "paired_tests.png", "group_means.csv", "group_means.png"}


def command(*args) -> list[str]:
    out = io.StringIO()
    call_command(*map(str, args), stdout=out)
    return out.getvalue().splitlines()


def load_study(name: str) -> Study:
    """`load_study FILE` prints `study <id> <name>` first."""
    word, pk, name = command("load_study", DEFINITIONS / name)[0].split(" ", 2)
    assert word == "study"
    return Study.objects.get(pk=int(pk), name=name)


def test_load_import_and_analyze_each_reproduction_study_from_its_file(shared_datasets, tmp_path, settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    command("seed_demo")
    biasmedqa, qpain = load_study("biasmedqa.yaml"), load_study("qpain.yaml")
    assert (biasmedqa.name, qpain.name) == ("BiasMedQA", "Q-Pain")
    assert not StudyAnswer.objects.filter(study__in=[biasmedqa, qpain]).exists()

    command("import_biasmedqa_responses", shared_datasets / BIASMEDQA, "--study", biasmedqa.pk)
    command("import_qpain_outputs", shared_datasets / QPAIN, "--study", qpain.pk)

    assert biasmedqa.answers.count() == 8498 and qpain.answers.count() == 400
    assert not biasmedqa.answers.filter(studies=qpain).exists()
    printed = command("analyze", "--study", biasmedqa.pk, "--out", tmp_path / "biasmedqa")
    assert printed[0] == f"Study {biasmedqa.pk} has no rubric: no ratings, so no rating tables."
    assert printed[1] == "accuracy.csv: 170 rows (biasmedqa-accuracy)"
    printed = command("analyze", "--study", qpain.pk, "--out", tmp_path / "qpain")
    assert printed[1:5] == ["group_means.csv: 144 rows (qpain-group-means)", "group_means.png",
                            "paired_tests.csv: 84 rows (qpain-paired-tests)", "paired_tests.png"]  # fmt: skip

    # Each study writes its own plans' tables, never the other's, and no rating tables (it has no rubric).
    written = {path.name for path in (tmp_path / "biasmedqa").iterdir()}
    assert written == {"accuracy.csv", "accuracy.png"}
    assert {path.name for path in (tmp_path / "qpain").iterdir()} == QPAIN_TABLES
    assert not written & RATING_TABLES

    # BiasMedQA: every imported response once, both scorers kept, and the table today's plan loading gives.
    accuracy = (tmp_path / "biasmedqa" / "accuracy.csv").read_text(encoding="utf-8")
    table = pd.read_csv(io.StringIO(accuracy))
    assert list(table.columns) == ACCURACY_COLUMNS and int(table["n"].sum()) == 8498
    assert accuracy == table_csv(BIASMEDQA_ACCURACY.compute(load_outcomes(BIASMEDQA_ACCURACY, biasmedqa.pk)))
    scored = Score.objects.filter(answer__in=biasmedqa.answers.all())
    assert scored.filter(scorer="released").count() == scored.filter(scorer="letter").count() == 8498
    # Q-Pain: every mean and each of the 28 paired tests as the reproduction test checks them.
    check_paired_tests(shared_datasets, tmp_path / "qpain")
    check_group_means(shared_datasets, tmp_path / "qpain")
    assert Answer.objects.filter(studies=qpain, source__name="deepseek-32k").count() == 400
