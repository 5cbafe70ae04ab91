"""MEDIC's fixture files (../shared/datasets/medic): desires, prompts and restyled prompts imported as questions with
their chain, answers as answers of a source per chatbot; all files or nothing, by file and line; idempotent."""

import json
import time
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from datasets.importers import ImportRejected
from datasets.importers.medic import MEDIC_DATASET, derived_desire_id, import_medic_files, medic_file
from datasets.medic_styles import style_levels
from datasets.models import Answer, AnswerSource, Dataset, Question

DESIRES = "kratkiew_0016gen_desires_all.jsonl"
STANDARD = "kratkiew_0016gen_standard_prompts_00.jsonl"
RESTYLED = "kratkiew_0016gen_prompts_0_all.jsonl"
MIXED = "50004_prompt_gen_timing_test_desires_and_prompts.jsonl"
GRADES = ["6", "8", "10", "12", "14"]


@pytest.fixture
def medic(shared_datasets) -> Path:
    return shared_datasets / "medic"


def io_files(medic: Path, *names: str):
    return [medic_file(medic / "tests" / "unit" / "io" / name) for name in names]


def levels_of(external_id: str) -> dict:
    return Question.objects.get(external_id=external_id).levels


def base_of(external_id: str) -> str | None:
    base = Question.objects.get(external_id=external_id).base
    return base.external_id if base else None


# --- Styles (pure) -------------------------------------------------------------------------------------


def test_a_person_style_gives_its_grade_and_descriptor():
    style = "person with a 10th grade level of education who writes with a formal tone"
    assert style_levels(style) == {"style": style, "grade": "10", "descriptor": "writes with a formal tone"}
    assert style_levels("person with a 11th grade level of education who writes concisely")["grade"] == "11"


def test_standard_absent_and_other_styles_give_the_style_alone():
    assert style_levels(None) == style_levels("") == style_levels("standard") == {"style": "standard"}
    assert style_levels("7th grade level of education") == {"style": "7th grade level of education"}


def test_the_95_observed_styles_are_5_grades_by_19_descriptors(medic):
    records = [json.loads(line) for line in (medic / "derived_styles_observed.jsonl").read_text().splitlines()]
    parsed = [style_levels(record["text"]) for record in records]
    assert len(parsed) == 95 and all({"grade", "descriptor"} <= levels.keys() for levels in parsed)
    assert sorted({levels["grade"] for levels in parsed}, key=int) == GRADES
    descriptors = {levels["descriptor"] for levels in parsed}
    assert len(descriptors) == 19 and "writes with excessive capitalization" in descriptors
    assert len({(levels["grade"], levels["descriptor"]) for levels in parsed}) == 95


# --- The three big files ----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_three_files_import_as_the_chain_of_desires_questions_and_restyled_questions(medic, capsys):
    files = io_files(medic, DESIRES, STANDARD, RESTYLED)
    started = time.perf_counter()
    report = import_medic_files(files)
    elapsed = time.perf_counter() - started
    with capsys.disabled():
        print(f"\nMEDIC import of the three files: {elapsed:.1f} s")

    questions = Question.objects.filter(dataset__name=MEDIC_DATASET)
    assert report.questions_created == 5076 and questions.count() == 5076
    steps = {step: questions.filter(levels__step=step).count() for step in
             ("desire", "expanded_desire", "question", "restyled")}  # fmt: skip
    assert steps == {"desire": 24, "expanded_desire": 96, "question": 400, "restyled": 4556}
    assert not questions.filter(levels__step="desire", base__isnull=False).exists()
    assert not questions.exclude(levels__step="desire").filter(base__isnull=True).exists()
    # Every restyled question comes from a standard question, every question and expanded desire from a desire.
    assert not questions.filter(levels__step="restyled").exclude(base__levels__step="question").exists()
    assert not questions.filter(levels__step="question").exclude(base__metadata__type="Desire").exists()

    # The ids of the files, as SOURCE.md's examples give them.
    assert base_of("0x51fdd45117b35c82") == "0x48f0cf0e927bebc4"  # an expanded desire and its seed
    assert levels_of("0x51fdd45117b35c82") == {"step": "expanded_desire", "style": "standard"}
    assert base_of("0x971351f612800ce7") == "0x48f0cf0e927bebc4"  # a standard question and its desire
    assert levels_of("0x971351f612800ce7") == {"step": "question", "style": "standard"}
    assert base_of("0x95f7bbbfa1bb6c73") == "0x7c50444e7d3c0da6"  # a restyled question and its question
    assert levels_of("0x95f7bbbfa1bb6c73") == {
        "step": "restyled", "grade": "10", "descriptor": "writes with a formal tone",
        "style": "person with a 10th grade level of education who writes with a formal tone",
    }  # fmt: skip
    seed = Question.objects.get(external_id="0x48f0cf0e927bebc4")
    assert seed.metadata == {"type": "Desire", "metadata": {}, "file": DESIRES} and seed.base is None
    restyled = questions.filter(levels__step="restyled")
    assert sorted({levels["grade"] for levels in restyled.values_list("levels", flat=True)}, key=int) == GRADES
    assert restyled.values("levels__descriptor").distinct().count() == 19
    # Two restyled samples of one text under two styles stay two questions (their ids differ).
    assert questions.filter(text="Can I take cold medicines while pregnant?").count() == 2

    again = import_medic_files(files)
    assert (again.questions_created, again.questions_existing) == (0, 5076)
    assert questions.count() == 5076


@pytest.mark.django_db
def test_the_files_in_any_order_link_every_variant_to_its_base(medic):
    import_medic_files(io_files(medic, RESTYLED, STANDARD, DESIRES))

    assert base_of("0x95f7bbbfa1bb6c73") == "0x7c50444e7d3c0da6"
    assert base_of("0x971351f612800ce7") == "0x48f0cf0e927bebc4"
    assert not Question.objects.filter(base__isnull=True).exclude(levels__step="desire").exists()


@pytest.mark.django_db
def test_a_variant_whose_base_is_already_in_the_dataset_links_to_it(medic):
    import_medic_files(io_files(medic, DESIRES))
    report = import_medic_files(io_files(medic, STANDARD))

    assert report.questions_created == 400
    assert base_of("0x971351f612800ce7") == "0x48f0cf0e927bebc4"


# --- Rejections -----------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_malformed_file_is_rejected_by_line_and_nothing_is_imported_even_with_a_valid_file(medic):
    with pytest.raises(ImportRejected) as rejected:
        import_medic_files(io_files(medic, MIXED, "sample_prompts_malformed.jsonl"))

    problems = [error.message for error in rejected.value.errors]
    assert problems == [
        "sample_prompts_malformed.jsonl, line 1: a Prompt needs a text (a non-empty string)",
        "sample_prompts_malformed.jsonl, line 2: metadata must be a JSON object, found a string",
        "sample_prompts_malformed.jsonl, line 2: no type; each record names its type: Desire, Prompt, Answer, Style",
        # The last line is a valid record for MEDIC's reader, not here: a Prompt names its id and source.
        "sample_prompts_malformed.jsonl, line 3: a Prompt needs metadata naming its source "
        "(Desire_source_id or Prompt_source_id)",
    ]
    assert not Dataset.objects.exists() and not Question.objects.exists()


def write_jsonl(path: Path, records: list[dict | str]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return path


@pytest.mark.django_db
def test_metadata_given_as_a_string_and_other_bad_records_are_named_by_file_and_line(tmp_path):
    path = write_jsonl(tmp_path / "bad.jsonl", [
        {"type": "Prompt", "text": "q", "id": "p1", "metadata": "test"},
        "{not json",
        {"type": "Disorder", "text": "agoraphobia"},
        {"type": "Prompt", "text": "q", "id": "p2", "metadata": {"style": "standard"}},
        {"type": "Answer", "text": "a", "prompt_id": "p1", "id": "a1"},
        {"type": "Desire", "text": "d", "id": "d1", "metadata": {"Prompt_source_id": "p1"}},
        {"type": "Desire", "text": "d", "id": "d2", "prompts": [{"type": "Prompt", "text": "nested"}]},
        {"type": "Style", "text": "standard"},
        {"type": "Desire", "text": "e", "id": "d3"},
        {"type": "Style", "text": ""},
    ])  # fmt: skip
    with pytest.raises(ImportRejected) as rejected:
        import_medic_files([medic_file(path)])

    problems = {error.message.split(":")[0]: error.message for error in rejected.value.errors}
    assert list(problems)[-2:] == ["bad.jsonl, line 7, prompts[0]", "bad.jsonl, line 10"]  # in reading order
    assert set(problems) == {f"bad.jsonl, line {n}" for n in (1, 2, 3, 4, 5, 6, 10)} | {"bad.jsonl, line 7, prompts[0]"}
    assert problems["bad.jsonl, line 1"].endswith("metadata must be a JSON object, found a string")
    assert "not valid JSON" in problems["bad.jsonl, line 2"]
    assert "unknown type 'Disorder'" in problems["bad.jsonl, line 3"]
    assert "names its source" in problems["bad.jsonl, line 4"]
    assert "chatbot_name must be a non-empty string" in problems["bad.jsonl, line 5"]
    assert "cannot have Prompt_source_id" in problems["bad.jsonl, line 6"]
    assert problems["bad.jsonl, line 10"].endswith("a Style needs a text (a non-empty string)")
    assert not Question.objects.exists()


@pytest.mark.django_db
def test_a_source_or_prompt_found_nowhere_is_an_error_by_line(tmp_path):
    path = write_jsonl(tmp_path / "links.jsonl", [
        {"type": "Desire", "text": "d", "id": "d1"},
        {"type": "Prompt", "text": "q", "id": "p1", "metadata": {"Desire_source_id": "nowhere"}},
        {"type": "Prompt", "text": "r", "id": "p2", "metadata": {"Prompt_source_id": "d1"}},
        {"type": "Answer", "text": "a", "prompt_id": "missing", "chatbot_name": "m", "id": "a1"},
    ])  # fmt: skip
    with pytest.raises(ImportRejected) as rejected:
        import_medic_files([medic_file(path)])

    assert [error.message for error in rejected.value.errors] == [
        "links.jsonl, line 2: its source 'nowhere' is neither in these files nor in the dataset",
        "links.jsonl, line 3: its source 'd1' is a Desire, not a Prompt",
        "links.jsonl, line 4: its prompt 'missing' is neither in these files nor in the dataset",
    ]
    assert not Question.objects.exists() and not AnswerSource.objects.exists()


@pytest.mark.django_db
def test_a_changed_text_is_refused_and_never_overwritten(medic, tmp_path):
    original = medic / "tests" / "unit" / "io" / MIXED
    import_medic_files([medic_file(original)])
    lines = original.read_text().splitlines()
    record = json.loads(lines[4])
    record["text"] = "A changed text"
    lines[4] = json.dumps(record)
    changed = tmp_path / MIXED
    changed.write_text("\n".join(lines) + "\n")

    with pytest.raises(ImportRejected) as rejected:
        import_medic_files([medic_file(changed)])

    assert [error.message for error in rejected.value.errors] == [
        f"{MIXED}, line 5: 'MEDIC (BBN fixtures)' holds {record['id']!r} with another text; never overwritten"
    ]
    assert Question.objects.get(external_id=record["id"]).text != "A changed text"
    # Within the files too: one id, two texts.
    twice = write_jsonl(tmp_path / "twice.jsonl", [{"type": "Desire", "text": "a", "id": "x"},
                                                    {"type": "Desire", "text": "b", "id": "x"}])  # fmt: skip
    with pytest.raises(ImportRejected, match="twice.jsonl, line 2: id 'x' is also twice.jsonl, line 1"):
        import_medic_files([medic_file(twice)])


# --- Other fixtures -----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_mixed_file_imports_its_desires_and_prompts(medic):
    report = import_medic_files(io_files(medic, MIXED), dataset="MEDIC timing test")

    questions = Question.objects.filter(dataset__name="MEDIC timing test")
    assert report.questions_created == 40 == questions.count()
    assert questions.filter(levels__step="desire").count() == 2  # jhu00, jhu01
    assert base_of("0xe3867c01199fd947") == "jhu00"
    assert not questions.exclude(levels__step="desire").filter(base__isnull=True).exists()


@pytest.mark.django_db
def test_nested_prompts_derived_ids_and_style_records(medic):
    generation = medic / "tests" / "generation"
    files = [*io_files(medic, "sample_desires.jsonl"), medic_file(generation / "desires.jsonl"),
             medic_file(generation / "styles.jsonl"), medic_file(medic / "derived_styles_observed.jsonl")]  # fmt: skip
    report = import_medic_files(files)

    assert report.questions_created == 4 + 4 + 3  # four desires, their four nested prompts, three desires without id
    assert base_of("test-prompt-4") == "test-desire-3"
    assert Question.objects.get(external_id="test-prompt-3").levels == {
        "step": "question", "style": "14th grade level of education"
    }  # fmt: skip
    nested = Question.objects.get(external_id="test-prompt-1").metadata
    assert nested["nested_in"] == "test-desire-1" and nested["file"] == "sample_desires.jsonl"
    derived = derived_desire_id("help me with my nutrition during pregnancy")
    assert derived.startswith("desire-sha256-") and len(derived) == len("desire-sha256-") + 16
    question = Question.objects.get(external_id=derived)
    assert question.metadata["derived_id"] is True and question.metadata["metadata"] == {"domain": "nutrition"}
    assert "Style records: 98 read and counted; styles are stored as levels" in report.notes
    assert import_medic_files(files).questions_created == 0  # the derived ids are stable


PROMPTS_OF_SAMPLE_ANSWERS = [
    {"type": "Desire", "text": "medication side effects", "id": "d-answers"},
    *({"type": "Prompt", "text": f"question {n}", "id": prompt, "metadata": {"Desire_source_id": "d-answers"}}
      for n, prompt in enumerate(["0x6148e921e870e496", "0x5c0c8756d08d3d3e", "0x45bc284dc5d5a0c6"])),
]  # fmt: skip


@pytest.mark.django_db
def test_answers_import_for_their_prompts_once_as_answers_of_the_chatbots_source(medic, tmp_path):
    prompts = write_jsonl(tmp_path / "prompts.jsonl", PROMPTS_OF_SAMPLE_ANSWERS)
    files = [*io_files(medic, "sample_answers.jsonl"), medic_file(prompts)]  # answers first: found all the same
    report = import_medic_files(files)

    source = AnswerSource.objects.get()
    assert (source.name, source.kind) == ("Mistral-7B-Instruct-v0.1-GPTQ", AnswerSource.Kind.IMPORTED)
    assert report.answers_created == 3 and report.sources_created == [source.name]
    answer = Answer.objects.get(question__external_id="0x6148e921e870e496")
    assert answer.source == source and answer.text.startswith("Certainly! It is important to address")
    assert answer.response_metadata["medic_answer_id"] == "0x8b77f7401923607"
    assert answer.provenance_note == "MEDIC answer 0x8b77f7401923607 from sample_answers.jsonl"

    again = import_medic_files(files)
    assert (again.answers_created, again.answers_existing, again.questions_created) == (0, 3, 0)
    assert Answer.objects.count() == 3
    # Alone, later: the prompts are in the dataset.
    assert import_medic_files(io_files(medic, "sample_answers.jsonl")).answers_existing == 3

    record = json.loads((medic / "tests" / "unit" / "io" / "sample_answers.jsonl").read_text().splitlines()[0])
    changed = write_jsonl(tmp_path / "changed.jsonl", [{**record, "id": "0xother"}])
    with pytest.raises(ImportRejected, match="changed.jsonl, line 1: 'Mistral-7B-Instruct-v0.1-GPTQ' already has"):
        import_medic_files([medic_file(changed)])


# --- The command --------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_command_prints_the_counts_and_every_error_line(medic, tmp_path):
    unit = medic / "tests" / "unit" / "io"
    out = StringIO()
    call_command("import_medic", str(unit / MIXED), "--dataset", "Timing", stdout=out)
    assert "Questions: 40 new, 0 already present" in out.getvalue()

    with pytest.raises(CommandError) as rejected:
        call_command("import_medic", str(unit / MIXED), str(unit / "sample_prompts_malformed.jsonl"), stdout=out)
    message = str(rejected.value)
    assert "sample_prompts_malformed.jsonl, line 1:" in message and "sample_prompts_malformed.jsonl, line 2:" in message
    assert not Dataset.objects.filter(name=MEDIC_DATASET).exists()
    with pytest.raises(CommandError, match="nowhere.jsonl: no such file"):
        call_command("import_medic", str(tmp_path / "nowhere.jsonl"))


@pytest.mark.django_db
def test_the_command_links_the_answers_to_a_study(medic, tmp_path):
    from studies.models import StudyAnswer
    from tests.factories import StudyFactory

    prompts = write_jsonl(tmp_path / "prompts.jsonl", PROMPTS_OF_SAMPLE_ANSWERS)
    study = StudyFactory(name="MEDIC answers", rubric_version=None)
    call_command("import_medic", str(prompts), str(medic / "tests" / "unit" / "io" / "sample_answers.jsonl"),
                 "--study", str(study.pk), stdout=StringIO())  # fmt: skip

    assert StudyAnswer.objects.filter(study=study).count() == 3
    with pytest.raises(CommandError, match="There is no study with id 999999"):
        call_command("import_medic", str(prompts), "--study", "999999", stdout=StringIO())
