"""A released Q-Pain run's outputs (deepseek-32k) import in one command: base vignettes, the run's variants, one
answer per record and the released log-probabilities as numeric scores; all or nothing, once."""

import json
import math
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from datasets.importers import ImportRejected
from datasets.importers.qpain import QPAIN_DATASET, import_qpain_vignettes
from datasets.models import Answer, AnswerSource, Dataset, Question, VariantRun
from scoring.models import Score
from scoring.qpain_import import KNOWN_RELEASES, import_qpain_outputs

pytestmark = pytest.mark.django_db

VARIANTS = "Q-Pain variants (qpain v1, names from deepseek-32k)"
SCORERS = {"prob_no": "released_p_no", "prob_yes": "released_p_yes", "prob_high": "released_p_high",
           "prob_low": "released_p_low"}  # fmt: skip
CONTEXT_KEYS = {"Acute Cancer Pain": "acute_cancer", "Acute Non Cancer Pain": "acute_non_cancer",
                "Chronic Cancer Pain": "chronic_cancer", "Chronic Non Cancer Pain": "chronic_non_cancer",
                "Post Operative Pain": "post_op"}  # fmt: skip


@pytest.fixture
def outputs(shared_datasets):
    return shared_datasets / "qpain" / "model_outputs" / "deepseek-32k_qpain_outputs.jsonl"


@pytest.fixture
def records(outputs) -> list[dict]:
    return [json.loads(line) for line in outputs.read_text(encoding="utf-8").splitlines()]


def load(path, **options):
    return import_qpain_outputs(lambda: path.open("rb"), path.name, **options)


def row_counts() -> dict[str, int]:
    return {model.__name__: model.objects.count() for model in (Dataset, Question, VariantRun, AnswerSource, Answer,
                                                                 Score)}  # fmt: skip


def variant_id(record: dict) -> str:
    return f"{CONTEXT_KEYS[record['context']]}-{record['vignette_idx']:02d}-{record['race']}-{record['gender']}"


def test_the_deepseek_file_imports_as_400_answers_to_its_variants_with_1600_released_scores(outputs, records):
    report = load(outputs)

    assert (report.rows, report.answers_created, report.scores_created) == (400, 400, 1600)
    assert report.datasets_created == [QPAIN_DATASET, VARIANTS] and report.questions_created == 55
    assert (report.variants_created, report.variants_existing) == (400, 0)
    assert report.outcomes == {"released_p_no": {"measured": 356, "missing": 44},
                               "released_p_yes": {"measured": 356, "missing": 44},
                               "released_p_high": {"measured": 200, "missing": 200},
                               "released_p_low": {"measured": 200, "missing": 200}}  # fmt: skip
    # open prompts rebuilt: all but post-op vignette 9's, where the run left the `[subjective]` typo unfilled
    assert report.prompts_matching == 392
    assert sorted(report.prompts_differing) == sorted(f"post_op-09-{race}-{gender}" for race in
                                                      ("Black", "White", "Asian", "Hispanic")
                                                      for gender in ("man", "woman"))  # fmt: skip
    source = AnswerSource.objects.get(name="deepseek-32k")
    assert (source.kind, source.base_url) == ("imported", "")
    assert report.sources_created == ["deepseek-32k"]
    answers = {answer.question.external_id: answer for answer in
               Answer.objects.filter(source=source).select_related("question__dataset")}  # fmt: skip
    assert len(answers) == 400 and {a.question.dataset.name for a in answers.values()} == {VARIANTS}
    release = KNOWN_RELEASES["deepseek-32k"][0]
    for record in records:
        answer = answers[variant_id(record)]
        assert answer.question.metadata["name"] == record["name"]
        assert answer.prompt == answer.response_metadata["prompt"] == record["closed_prompt"] + record["open_prompt"]
        assert answer.response_metadata["release"] == release == answer.parameters["release"]
        assert answer.response_metadata["source_path"] == record["source_path"]
        if "generated_text" in record:
            assert answer.text == record["generated_text"]
        else:
            parts = [record["answer"], f"Dosage: {record['dosage']}" if record["dosage"] else "",
                     record["explanation"] or ""]  # fmt: skip
            assert answer.text == "\n".join(part for part in parts if part)
        assert answer.refusal == (not answer.text.strip())
        scores = {score.scorer: score for score in answer.scores.all()}
        assert set(scores) == set(SCORERS.values())
        for field, scorer in SCORERS.items():
            score, logprob = scores[scorer], record.get(field)
            assert (score.version, score.value["logprob"], score.value["field"]) == (1, logprob, field)
            if logprob is None:
                assert (score.outcome, score.number) == ("missing", None)
            else:
                assert score.outcome == "measured" and score.number == pytest.approx(math.exp(logprob), rel=1e-12)
    huy = answers["acute_cancer-00-Asian-man"]
    assert huy.text.startswith("Yes\nDosage: High\nExplanation: Huy has a pathologic fracture")
    assert huy.scores.get(scorer="released_p_no").number == pytest.approx(math.exp(-4.579445838928223))
    assert answers["chronic_non_cancer-04-Black-man"].text == "No."  # one of the 3 the run could not parse


def test_a_second_import_creates_nothing_and_says_so(outputs):
    load(outputs)
    counts = row_counts()

    again = load(outputs)

    assert row_counts() == counts
    assert (again.answers_created, again.answers_existing, again.scores_created, again.scores_existing) == (
        0, 400, 0, 1600)  # fmt: skip
    assert (again.variants_created, again.variants_existing, again.datasets_created) == (0, 400, [])
    assert "Nothing new: everything in this file was already imported." in again.summary_lines()


def test_the_base_vignettes_already_there_are_used_not_imported_again(outputs):
    import_qpain_vignettes()

    report = load(outputs)

    assert report.datasets_created == [VARIANTS] and report.questions_created == 0
    assert Question.objects.filter(dataset__name=QPAIN_DATASET).count() == 55


@pytest.mark.parametrize(
    ("line", "change", "message"),
    [
        (17, lambda r: "{not json", "line 17: not valid JSON"),
        (40, lambda r: {**r, "context": "Dental Pain"}, "line 40: context 'Dental Pain' is not a Q-Pain context"),
        (3, lambda r: {**r, "race": "Martian"}, "line 3: race 'Martian' is not one of Black, White, Asian"),
        (9, lambda r: {**r, "prob_no": 0.5}, "line 9: prob_no is 0.5: a natural-log probability is at most 0"),
        (9, lambda r: {**r, "prob_yes": "high"}, "line 9: prob_yes must be a number"),
        (12, lambda r: {k: v for k, v in r.items() if k != "explanation"}, "line 12: no explanation"),
        (400, lambda r: {**r, "vignette_idx": "9"}, "line 400: vignette_idx must be a whole number"),
    ],
)
def test_a_bad_line_rejects_the_file_with_its_line_number_and_nothing_is_written(
    outputs, records, tmp_path, line, change, message
):
    lines = [json.dumps(record, ensure_ascii=False) for record in records]
    changed = change(records[line - 1])
    lines[line - 1] = changed if isinstance(changed, str) else json.dumps(changed, ensure_ascii=False)
    bad = tmp_path / "outputs.jsonl"
    bad.write_text("\n".join(lines) + "\n", encoding="utf-8")

    with pytest.raises(ImportRejected) as rejected:
        load(bad)

    assert message in str(rejected.value)
    assert row_counts() == dict.fromkeys(row_counts(), 0)


def test_a_repeated_or_missing_profile_is_refused_and_nothing_is_written(records, tmp_path):
    twice = tmp_path / "twice.jsonl"
    twice.write_text("\n".join(json.dumps(r) for r in [*records, records[5]]) + "\n", encoding="utf-8")
    short = tmp_path / "short.jsonl"
    short.write_text("\n".join(json.dumps(r) for r in records[:-1]) + "\n", encoding="utf-8")

    again, last = records[5], records[-1]
    with pytest.raises(ImportRejected) as repeated:
        load(twice)
    with pytest.raises(ImportRejected) as missing:
        load(short)

    assert (f"line 401: a second record for {CONTEXT_KEYS[again['context']]} vignette {again['vignette_idx']}, "
            f"{again['race']} {again['gender']}") in str(repeated.value)  # fmt: skip
    last_key = f"{CONTEXT_KEYS[last['context']]}/{last['vignette_idx']:02d}/{last['race']}/{last['gender']}"
    assert f"the names table has no name for {last_key}" in str(missing.value)
    assert row_counts() == dict.fromkeys(row_counts(), 0)


def test_a_stored_answer_with_another_text_is_an_error_and_the_import_is_rolled_back(outputs):
    load(outputs)
    answer = Answer.objects.get(question__external_id="post_op-03-White-man")
    Answer.objects.filter(pk=answer.pk).update(text="Edited.")
    Score.objects.filter(answer__question__external_id="acute_cancer-00-Black-man").delete()
    counts = row_counts()

    with pytest.raises(ImportRejected, match="already has a different answer to post_op-03-White-man"):
        load(outputs)

    assert row_counts() == counts  # the 4 deleted scores were not written back either
    assert Answer.objects.get(pk=answer.pk).text == "Edited."


def test_a_source_of_that_name_that_can_generate_is_not_used(outputs):
    AnswerSource.objects.create(name="deepseek-32k", kind="model", base_url="http://127.0.0.1:9/v1")

    with pytest.raises(ImportRejected, match="is a model with an endpoint"):
        load(outputs)

    assert not Answer.objects.exists() and not Dataset.objects.exists()


def test_the_command_prints_the_counts_and_takes_another_source_name(outputs):
    out = StringIO()
    call_command("import_qpain_outputs", str(outputs), stdout=out)
    printed = out.getvalue()
    assert "Answers: 400 new, 0 already present" in printed
    assert "released_p_no v1: 356 measured, 44 missing (null in the file)" in printed
    assert "Open prompts equal to their variant's (Vignette/Question/Answer:): 392 of 400" in printed
    assert f"Variants ({VARIANTS}): 400 new, 0 already present" in printed

    out = StringIO()
    call_command("import_qpain_outputs", str(outputs), "--source", "deepseek rerun", stdout=out)
    assert "Answer sources created: deepseek rerun" in out.getvalue()
    assert Dataset.objects.filter(name="Q-Pain variants (qpain v1, names from deepseek rerun)").exists()
    assert AnswerSource.objects.get(name="deepseek rerun").answers.count() == 400

    with pytest.raises(CommandError, match="no such file"):
        call_command("import_qpain_outputs", str(outputs) + ".missing")
