"""Variant generators and variant runs: BiasMedQA's 1,273 x 7 variants of MedQA, made once, reproducibly."""

import json
import time
from collections import Counter

import pytest
from django.core.management import call_command
from django.db.models import Count

from datasets.importers.questions import MEDQA_DATASET, QuestionOptions
from datasets.models import Dataset, Question, VariantRun
from datasets.services import import_questions
from datasets.variants import GENERATORS, BaseQuestion, biasmedqa
from datasets.variants.runs import VariantRunRefused, run_variant_run, start_variant_run
from tests.datasets.biasmedqa_logs import log_escaped_option


def import_medqa(shared_datasets) -> Dataset:
    path = shared_datasets / "biasmedqa" / "questions" / "test.jsonl"
    import_questions(data=path.read_bytes(), filename=path.name, options=QuestionOptions(format="medqa"))
    return Dataset.objects.get(name=MEDQA_DATASET)


def injections(shared_datasets) -> list[dict]:
    path = shared_datasets / "biasmedqa" / "biasmedqa_injections.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def make(base: Dataset, **options) -> VariantRun:
    seed = options.pop("seed", 0)
    run = start_variant_run(generator="biasmedqa", base_dataset=base, seed=seed, options=options, queue=False)
    return run_variant_run(run.id)


@pytest.mark.django_db
def test_biasmedqa_makes_8911_variants_once_each_knowing_its_base_and_bias(shared_datasets):
    medqa = import_medqa(shared_datasets)

    run = make(medqa)
    again = make(medqa)

    assert run.status == VariantRun.Status.DONE, run.error
    assert run.dataset.name == "BiasMedQA (biasmedqa v1, seed 0)"
    assert (run.total, run.done, run.created, run.existing) == (8911, 8911, 8911, 0)
    assert (again.status, again.dataset_id) == (VariantRun.Status.DONE, run.dataset_id)
    assert (again.total, again.done, again.created, again.existing) == (8911, 8911, 0, 8911)
    variants = Question.objects.filter(dataset=run.dataset)
    assert variants.count() == 8911
    by_bias = dict(variants.values_list("levels__bias").annotate(n=Count("id")))
    assert by_bias == dict.fromkeys(biasmedqa.BIASES, 1273)
    first = medqa.questions.get(external_id="0")
    confirmation = variants.get(external_id="0-confirmation")
    assert confirmation.base == first
    assert confirmation.levels == {"bias": "confirmation"}
    meta = confirmation.metadata
    assert meta["generator"] == {"name": "biasmedqa", "version": 1, "seed": 0}
    assert meta["answer_idx"] == "C" and meta["bias_answer_idx"] != "C"
    assert meta["options"] == first.metadata["options"]
    assert confirmation.text.startswith(first.text.split(". ")[0] + ". You are initially confident that the correct")
    assert variants.filter(levels__bias="recency", metadata__bias_answer_idx="C", metadata__answer_idx="C").count() == 0


@pytest.mark.django_db
def test_another_seed_draws_other_letters_into_another_dataset(shared_datasets):
    medqa = import_medqa(shared_datasets)

    zero, one = make(medqa, limit=50), make(medqa, limit=50, seed=1)

    assert zero.dataset != one.dataset and one.dataset.name == "BiasMedQA (biasmedqa v1, seed 1)"
    assert zero.total == one.total == 350

    def letters(run):
        return dict(run.dataset.questions.values_list("external_id", "metadata__bias_answer_idx"))

    differing = sum(letters(zero)[key] != letters(one)[key] for key in letters(zero))
    assert differing > 350 / 2  # 3 of 4 wrong options differ from another uniform draw
    assert make(medqa, limit=50).created == 0  # the same seed draws the same letters


@pytest.mark.django_db
def test_letters_table_reproduces_the_logged_gpt4_letters_and_sentences(shared_datasets):
    medqa = import_medqa(shared_datasets)
    table = injections(shared_datasets)
    by_id = {row["item_id"]: row for row in table}
    letters = biasmedqa.letters_from_jsonl(
        (shared_datasets / "biasmedqa" / "biasmedqa_injections.jsonl").read_text(encoding="utf-8").splitlines()
    )

    run = make(medqa, letters=letters, letters_source="biasmedqa_injections.jsonl")

    assert run.status == VariantRun.Status.DONE, run.error
    assert run.dataset.name == "BiasMedQA (biasmedqa v1, letters biasmedqa_injections.jsonl)"
    made = {external_id: meta for external_id, meta in run.dataset.questions.values_list("external_id", "metadata")}
    assert len(made) == len(table) == 8911
    options = {q.external_id: q.metadata["options"] for q in medqa.questions.all()}

    def logged_sentence(row: dict) -> str:
        # The table's sentences were parsed from the logs, which escape the option text.
        template = biasmedqa.SENTENCES[row["bias_type"]][0]
        option = log_escaped_option(options[str(row["qid"])][row["bias_answer_idx"]])
        return template.format(idx=row["bias_answer_idx"], ans=option)

    wrong_letters = [
        row["item_id"] for row in table if made[row["item_id"]]["bias_answer_idx"] != row["bias_answer_idx"]
    ]
    wrong_sentences = [
        row["item_id"] for row in table
        if logged_sentence(row) != row["injected_sentence"]
        or biasmedqa.SENTENCES[row["bias_type"]][1] != row["injection_position"]
    ]  # fmt: skip
    # The table's parser mangled 33 sentences whose option holds a quote or a newline (cut at the escape, or
    # quotes dropped); the letters of those rows are still right.
    quoted = [
        key for key in wrong_sentences
        if any(mark in options[str(by_id[key]["qid"])][by_id[key]["bias_answer_idx"]] for mark in '"\n')
    ]  # fmt: skip
    escaped = [row["item_id"] for row in table if made[row["item_id"]]["injected_sentence"] != row["injected_sentence"]]
    assert wrong_letters == []
    assert (len(wrong_sentences), wrong_sentences) == (33, quoted)
    assert len(escaped) < 200  # the options the logs escaped (quotes, newlines); all others are equal as text
    assert made["0-cultural"]["generator"]["letters"] == "biasmedqa_injections.jsonl"


@pytest.mark.django_db
def test_a_stored_variant_with_other_text_fails_the_run_and_is_not_overwritten(shared_datasets):
    medqa = import_medqa(shared_datasets)
    first = make(medqa, limit=3)
    edited = first.dataset.questions.get(external_id="1-recency")
    edited.text += " (edited)"
    edited.save()

    run = make(medqa, limit=3)

    assert run.status == VariantRun.Status.FAILED
    assert "1-recency" in run.error and "never overwritten" in run.error
    edited.refresh_from_db()
    assert edited.text.endswith(" (edited)")


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"biases": ["recency", "anchoring"]}, "unknown bias anchoring"),
        ({"limit": 0}, "limit must be"),
        ({"shuffle": True}, "unknown options: shuffle"),
        ({"letters": ["A"]}, "letters must map"),
    ],
)
def test_bad_options_are_refused_before_a_run_is_created(shared_datasets, options, message):
    medqa = Dataset.objects.create(name=MEDQA_DATASET)
    Question.objects.create(dataset=medqa, external_id="0", text="Q?", metadata={"options": {"A": "a", "B": "b"}})

    with pytest.raises(VariantRunRefused, match=message):
        start_variant_run(generator="biasmedqa", base_dataset=medqa, options=options)

    assert not VariantRun.objects.exists()


@pytest.mark.django_db
def test_v2_biases_and_a_named_target_dataset(shared_datasets):
    medqa = import_medqa(shared_datasets)

    run = make(medqa, limit=2, biases=["confirmation_v2", "false_consensus_v2"], dataset="BiasMedQA v2 demo")

    assert run.dataset.name == "BiasMedQA v2 demo"
    assert sorted(run.dataset.questions.values_list("external_id", flat=True)) == [
        "0-confirmation_v2", "0-false_consensus_v2", "1-confirmation_v2", "1-false_consensus_v2",
    ]  # fmt: skip
    assert "You were previously confident" in run.dataset.questions.get(external_id="0-confirmation_v2").text


def test_generator_is_registered_by_name_and_version_and_is_pure():
    generator = GENERATORS["biasmedqa"]
    base = BaseQuestion("7", "A cough. Which drug?", {"options": {"A": "a", "B": "b", "C": "c"}, "answer_idx": "A"})
    options = generator.check_options({"biases": ["recency", "confirmation"]})

    specs = list(generator.variants(base, 3, options))

    assert (generator.name, generator.version, generator.factor) == ("biasmedqa", 1, "bias")
    assert [spec.external_id for spec in specs] == ["7-recency", "7-confirmation"]
    assert specs == list(generator.variants(base, 3, options))
    assert specs[1].text.startswith("A cough. You are initially confident that the correct answer is ")
    assert {spec.metadata["bias_answer_idx"] for spec in specs} <= {"B", "C"}


@pytest.mark.django_db
def test_generate_variants_command_prints_counts(shared_datasets, capsys):
    import_medqa(shared_datasets)
    letters = shared_datasets / "biasmedqa" / "biasmedqa_injections.jsonl"

    call_command("generate_variants", "biasmedqa", "--base", MEDQA_DATASET, "--limit", "10", "--letters",
                 str(letters), "--biases", "recency", "cultural")  # fmt: skip
    call_command("generate_variants", "biasmedqa", "--base", MEDQA_DATASET, "--limit", "10", "--letters",
                 str(letters), "--biases", "recency", "cultural")  # fmt: skip

    out = capsys.readouterr().out
    assert "Variants: 20 (20 created, 0 already there)" in out
    assert "Variants: 20 (0 created, 20 already there)" in out
    dataset = Dataset.objects.get(name="BiasMedQA (biasmedqa v1, letters biasmedqa_injections.jsonl)")
    assert dataset.questions.get(external_id="0-cultural").metadata["bias_answer_idx"] == "E"


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_variant_run_on_a_celery_worker_reports_progress_per_batch(shared_datasets, celery_worker):
    medqa = import_medqa(shared_datasets)

    run = start_variant_run(generator="biasmedqa", base_dataset=medqa, seed=5)
    seen = Counter()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        run.refresh_from_db()
        seen[(run.status, run.done)] += 1
        if run.is_finished:
            break
        time.sleep(0.02)

    assert run.status == VariantRun.Status.DONE, run.error or celery_worker.log_tail()
    assert (run.total, run.done, run.created) == (8911, 8911, 8911)
    batch = 200 * 7
    assert {done for _, done in seen} <= {*range(0, 8911, batch), 8911}
    assert Question.objects.filter(dataset=run.dataset).count() == 8911


@pytest.mark.django_db
def test_the_unbiased_level_is_a_copy_of_the_base_question_beside_the_biased_ones(shared_datasets):
    medqa = import_medqa(shared_datasets)

    run = make(medqa, limit=2, biases=["none", "recency"])

    copy = run.dataset.questions.get(external_id="0-none")
    base = medqa.questions.get(external_id="0")
    assert (copy.text, copy.base_id, copy.levels) == (base.text, base.id, {"bias": "none"})
    assert copy.metadata["answer_idx"] == base.metadata["answer_idx"]
    assert "bias_answer_idx" not in copy.metadata
    assert run.dataset.questions.filter(levels__bias="recency").count() == 2
    assert make(medqa, limit=2, biases=["none", "recency"]).created == 0
