"""BiasMedQA's released responses import as answers of six sources with their released labels as scores."""

import csv
import gzip
import io

import pandas as pd
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db.models import Count

from datasets.importers import ImportRejected
from datasets.importers.questions import MEDQA_DATASET, QuestionOptions
from datasets.models import Answer, AnswerSource, Dataset, Question
from datasets.services import import_questions
from scoring.models import Score
from scoring.release_import import RELEASE, VARIANT_DATASET, import_biasmedqa_responses
from scoring.services import score_missing

pytestmark = pytest.mark.django_db

SUBSET_ROWS = 8_498


@pytest.fixture
def medqa(shared_datasets):
    path = shared_datasets / "biasmedqa" / "questions" / "test.jsonl"
    import_questions(data=path.read_bytes(), filename=path.name, options=QuestionOptions(format="medqa"))
    return Dataset.objects.get(name=MEDQA_DATASET)


@pytest.fixture
def subset_path(shared_datasets):
    return shared_datasets / "biasmedqa" / "model_responses" / "model_responses_qid0-49.csv"


@pytest.fixture
def subset(subset_path):
    return pd.read_csv(subset_path, dtype=str, keep_default_na=False)


def load(path):
    return import_biasmedqa_responses(lambda: path.open("rb"), path.name)


def expected_outcomes(frame) -> dict[str, int]:
    no_answer = frame.response.str.strip().isin(["", "NR"])
    outcome = frame.is_correct.map({"True": "correct", "False": "wrong", "NR": "non_response", "": "non_response"})
    return outcome.where(~no_answer, "non_response").value_counts().to_dict()


def test_the_qid_0_49_subset_imports_as_the_file_counts_say(medqa, subset_path, subset):
    assert len(subset) == SUBSET_ROWS
    report = load(subset_path)

    biased = subset[subset.bias_type != "none"]
    variants = biased[["qid", "bias_type", "bias_answer_idx"]].drop_duplicates()
    assert report.rows == SUBSET_ROWS
    assert sorted(report.sources_created) == sorted(subset.model.unique()) and len(report.sources_created) == 6
    assert AnswerSource.objects.filter(kind=AnswerSource.Kind.IMPORTED).count() == 6
    assert report.answers_created == Answer.objects.count() == SUBSET_ROWS
    assert report.questions_created == Question.objects.filter(dataset__name=VARIANT_DATASET).count() == len(variants)
    released = Score.objects.filter(scorer="released", version=1)
    assert released.count() == SUBSET_ROWS
    by_outcome = dict(released.values_list("outcome").annotate(n=Count("id")))
    assert by_outcome == expected_outcomes(subset)
    assert report.released_outcomes == by_outcome
    assert report.nr_responses == (subset.response == "NR").sum() == Answer.objects.filter(refusal=True).count()

    # Answers per source, bias and mitigation, as in the file.
    counts = subset.groupby(["model", "bias_type", "mitigation"]).size().to_dict()
    stored = {}
    for source, bias, mitigation in Answer.objects.values_list(
        "source__name", "parameters__bias_type", "parameters__condition__mitigation"
    ):
        stored[(source, bias, mitigation)] = stored.get((source, bias, mitigation), 0) + 1
    assert stored == counts


def test_an_answer_carries_its_condition_provenance_and_released_label(medqa, subset_path, subset):
    load(subset_path)
    row = subset[(subset.model == "gpt-4-0613") & (subset.bias_type == "confirmation") & (subset.qid == "0")
                 & (subset.mitigation == "education")].iloc[0]  # fmt: skip
    variant_id = f"0-confirmation-{row.bias_answer_idx}"
    answer = Answer.objects.get(source__name="gpt-4-0613", question__external_id=variant_id,
                                parameters__condition__mitigation="education")  # fmt: skip
    assert answer.text == row.response
    assert answer.parameters == {"release": RELEASE, "condition": {"mitigation": "education"},
                                 "bias_type": "confirmation"}  # fmt: skip
    assert answer.response_metadata == {"source_file": row.source_file, "is_correct_raw": row.is_correct_raw}
    assert row.source_file in answer.provenance_note
    variant = answer.question
    base = Question.objects.get(dataset=medqa, external_id="0")
    assert variant.base == base and variant.levels == {"bias": "confirmation"}
    assert variant.metadata["bias_answer_idx"] == row.bias_answer_idx
    assert variant.metadata["answer_idx"] == base.metadata["answer_idx"] == row.answer_idx
    sentence = variant.metadata["injected_sentence"]
    assert sentence.startswith("You are initially confident that the correct answer is ")
    first = base.text.index(". ") + 1
    assert variant.text == f"{base.text[:first]} {sentence} {base.text[first + 1 :]}"
    score = answer.scores.get(scorer="released")
    assert score.value == {"label": row.is_correct, "raw": row.is_correct_raw, "label_source": row.is_correct_source}
    unbiased = Answer.objects.get(source__name="gpt-4-0613", question=base, parameters__condition__mitigation="none")
    assert unbiased.parameters["bias_type"] == "none"


def test_a_second_import_creates_nothing(medqa, subset_path):
    load(subset_path)
    report = load(subset_path)
    assert (report.answers_created, report.questions_created, report.scores_created) == (0, 0, 0)
    assert report.sources_created == [] and report.datasets_created == []
    assert (report.answers_existing, report.scores_existing) == (SUBSET_ROWS, SUBSET_ROWS)
    assert report.questions_existing == Question.objects.filter(dataset__name=VARIANT_DATASET).count()
    assert Answer.objects.count() == Score.objects.count() == SUBSET_ROWS


def test_a_gzipped_file_imports_the_same(medqa, subset_path, tmp_path):
    path = tmp_path / "model_responses_qid0-49.csv.gz"
    with gzip.open(path, "wb") as handle:
        handle.write(subset_path.read_bytes())
    report = load(path)
    assert report.answers_created == SUBSET_ROWS == Score.objects.count()


def _write(path, rows):
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerows(rows)


def _good_rows(subset_path, n):
    with subset_path.open(newline="") as handle:
        reader = csv.reader(handle)
        header = next(reader)
        return header, [next(reader) for _ in range(n)]


@pytest.mark.parametrize(
    "column, value, message",
    [
        ("bias_type", "anchoring", "unknown bias_type 'anchoring'"),
        ("qid", "1273", "qid '1273' is not a question of 'MedQA (USMLE test)'"),
        ("bias_answer_idx", "F", "bias_answer_idx 'F' is not one of question"),
        ("mitigation", "two-shot", "unknown mitigation 'two-shot'"),
        ("is_correct", "maybe", "is_correct 'maybe' is not True, False, NR or empty"),
        ("answer_idx", "A", "answer_idx A differs from question"),
    ],
)
def test_a_bad_row_rejects_the_file_with_its_line_and_writes_nothing(medqa, subset_path, tmp_path, column, value,
                                                                      message):  # fmt: skip
    header, rows = _good_rows(subset_path, 4)
    rows[0][header.index("response")] = 'A\nsecond line, "quoted"\nthird line'  # the record spans lines 2-4
    bad = next(
        row for row in rows[1:] if row[header.index("bias_type")] != "none" and row[header.index("answer_idx")] != "A"
    )
    bad[header.index(column)] = value
    path = tmp_path / "bad.csv"
    _write(path, [header, *rows])
    line = 5 + rows[1:].index(bad)

    with pytest.raises(ImportRejected) as rejected:
        load(path)

    assert [(error.line, message in error.message) for error in rejected.value.errors] == [(line, True)]
    assert not Answer.objects.exists() and not Score.objects.exists() and not AnswerSource.objects.exists()
    assert not Dataset.objects.filter(name=VARIANT_DATASET).exists()


def test_a_second_response_for_one_condition_and_question_is_rejected(medqa, subset_path, tmp_path):
    header, rows = _good_rows(subset_path, 3)
    path = tmp_path / "twice.csv"
    _write(path, [header, *rows, rows[1]])
    with pytest.raises(ImportRejected) as rejected:
        load(path)
    assert [error.line for error in rejected.value.errors] == [5]
    assert "a second response of" in rejected.value.errors[0].message
    assert not Answer.objects.exists()


def test_a_file_with_other_columns_is_refused_at_its_header(medqa, tmp_path):
    path = tmp_path / "answers.csv"
    _write(path, [["question_id", "answer"], ["0", "A"]])
    with pytest.raises(ImportRejected, match="line 1: not a BiasMedQA responses file .*missing model"):
        load(path)


def test_a_damaged_gzip_file_is_refused(medqa, subset_path, tmp_path):
    path = tmp_path / "cut.csv.gz"
    path.write_bytes(gzip.compress(subset_path.read_bytes())[:20_000])
    with pytest.raises(ImportRejected, match="gzip file is damaged or cut short"):
        load(path)
    assert not Answer.objects.exists()


def test_without_the_base_questions_the_import_says_what_to_import_first(subset_path):
    with pytest.raises(ImportRejected, match="questions/test.jsonl"):
        load(subset_path)


def test_the_letter_scorer_agrees_with_the_released_first_character_labels_of_gpt_4(medqa, subset_path, subset):
    load(subset_path)
    gpt4 = Answer.objects.filter(source__name="gpt-4-0613")
    counts = score_missing(scorer="letter", answers=gpt4)
    assert counts["scored"] == (subset.model == "gpt-4-0613").sum()
    pairs = list(
        Score.objects.filter(answer__in=gpt4, scorer="letter").values_list("outcome", "answer__scores__value__label",
                                                                          "answer__scores__scorer")
    )  # fmt: skip
    released = [(outcome, label) for outcome, label, scorer in pairs if scorer == "released"]
    assert len(released) == counts["scored"]
    # The release's rule is response[0] == answer_idx: True exactly when our letter is the answer.
    assert all((outcome == "correct") == (label == "True") for outcome, label in released)
    assert {label for outcome, label in released if outcome == "wrong"} == {"False"}


def test_the_command_imports_a_path_and_prints_the_counts(medqa, subset_path):
    out = io.StringIO()
    call_command("import_biasmedqa_responses", str(subset_path), stdout=out)
    text = out.getvalue()
    assert f"Answers: {SUBSET_ROWS} new, 0 already present" in text
    assert f"Released scores: {SUBSET_ROWS} new" in text


def test_the_command_names_the_base_dataset_it_could_not_find(subset_path):
    with pytest.raises(CommandError, match="import_questions --format medqa"):
        call_command("import_biasmedqa_responses", str(subset_path), "--base-dataset", "MedQA (USMLE test)")
