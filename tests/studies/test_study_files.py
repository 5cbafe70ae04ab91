"""Study files: read safely, checked against the schema and the database, every problem with its line and key,
nothing created from a file with a problem; loading is idempotent, a changed file for a study with data is
refused (or becomes a new version), and a study's export loads back unchanged."""

import io
import textwrap

import pytest
from django.core.management import CommandError, call_command

from datasets.models import AnswerSource, Dataset, PromptRecipe
from studies.models import Study, StudyAnswer, StudyPool
from studies.study_files import StudyRefused, canonical_sha256, export_study, load_study_text, read_definition
from studies.study_yaml import StudyFileError, parse_yaml
from tests.factories import AnswerFactory, AnswerSourceFactory, DatasetFactory, QuestionFactory

VALID = """\
format: 1
name: Small study
description: A study small enough to read.
questions:
- dataset: Questions
conditions:
- source: Model A
  recipe: Recipe A
- source: Released run
  imported: true
scorers:
- {name: letter, version: 2}
- {name: released, version: 1}
plans:
- plan: biasmedqa-accuracy
"""


def problems_of(text: str) -> list[str]:
    with pytest.raises(StudyFileError) as raised:
        load_study_text(textwrap.dedent(text))
    return [str(problem) for problem in raised.value.problems]


@pytest.fixture
def names(db):
    DatasetFactory(name="Questions")
    AnswerSourceFactory(name="Model A")
    PromptRecipe.objects.create(name="Recipe A")


def counts() -> tuple[int, ...]:
    return (Study.objects.count(), StudyPool.objects.count(), Dataset.objects.count(), AnswerSource.objects.count())


# --- Reading: no objects, no duplicates, every problem with its line ----------------------------------------


def test_an_object_tag_is_refused_with_its_line_and_nothing_is_constructed(tmp_path):
    marker = tmp_path / "constructed"
    text = (
        f"format: 1\nname: !!python/object/apply:pathlib.Path.touch [!!python/object/apply:pathlib.Path ['{marker}']]\n"
    )

    with pytest.raises(StudyFileError) as raised:
        parse_yaml(text)

    [problem] = raised.value.problems
    assert str(problem).startswith("line 2, name: the tag !!python/object/apply:pathlib.Path.touch is refused")
    assert "data only, never objects" in problem.message
    assert not marker.exists()


def test_a_duplicate_key_is_refused_with_both_lines():
    with pytest.raises(StudyFileError) as raised:
        parse_yaml("format: 1\nname: A\nquestions: []\nname: B\n")

    assert [str(p) for p in raised.value.problems] == ["line 4, name: the key 'name' appears twice (first on line 2)"]


def test_every_reading_problem_is_listed_at_once():
    text = "format: 1\nname: &n A\ndescription: *n\nrating: !custom {}\nquestions:\n- dataset: 2024-01-01\n"

    with pytest.raises(StudyFileError) as raised:
        parse_yaml(text)

    assert [str(p) for p in raised.value.problems] == [
        "line 3, description: anchors and aliases (&name, *name) are not allowed: write the value out",
        "line 4, rating: the tag !custom is not allowed: a study file holds plain data only",
        "line 6, questions[0].dataset: a date or time: put it in quotes to keep it as text",
    ]


def test_a_yaml_syntax_error_gives_its_line():
    with pytest.raises(StudyFileError) as raised:
        parse_yaml("format: 1\nname: A\nquestions: [\n")

    [problem] = raised.value.problems
    assert problem.line == 4 and problem.message.startswith("not valid YAML")


def test_wrong_types_and_unknown_keys_are_each_reported_with_line_and_key():
    text = """\
    format: 2
    name: ""
    questions:
    - dataset: Questions
      levels: {bias: no}
    conditions:
    - source: Model A
      recipes: Recipe A
    scorers:
    - {name: letter, version: "2"}
    pools:
    - pool: Physician
      replication: 0
    colour: blue
    """

    with pytest.raises(StudyFileError) as raised:
        read_definition(textwrap.dedent(text))

    assert [str(p) for p in raised.value.problems] == [
        "line 1, format: must be one of 1",
        "line 2, name: must not be empty",
        "line 5, questions[0].levels.bias: expected text, not false (put it in quotes)",
        "line 8, conditions[0].recipes: unknown key 'recipes' (known here: source, recipe, imported)",
        'line 10, scorers[0].version: expected a whole number, not "2"',
        "line 13, pools[0].replication: must be at least 1",
        "line 14, colour: unknown key 'colour' (known here: format, name, description, steps, questions, conditions, "
        "scorers, rubric, pools, human_slice, judges, references, plans, rating)",
    ]


def test_a_missing_required_key_is_reported_at_its_mapping():
    with pytest.raises(StudyFileError) as raised:
        read_definition("format: 1\nname: A\nconditions:\n- recipe: R\n")

    assert [str(p) for p in raised.value.problems] == ["line 4, conditions[0]: the key 'source' is missing"]


def test_defaults_are_filled_in_the_schema_order():
    definition, _ = read_definition("name: A\nformat: 1\nconditions:\n- {recipe: R, source: S}\n")

    assert list(definition) == ["format", "name", "description", "questions", "conditions", "scorers", "rubric",
                                "pools", "plans", "rating"]  # fmt: skip
    assert definition["conditions"] == [{"source": "S", "recipe": "R", "imported": False}]
    assert definition["rating"]["claim_timeout_minutes"] == 1440


# --- Names against the database -----------------------------------------------------------------------------


def test_every_missing_name_is_listed_with_its_line_and_key_and_nothing_is_created(names):
    before = counts()
    text = """\
    format: 1
    name: Nothing from this
    questions:
    - dataset: No such dataset
    - dataset: Questions
    - dataset: Made later
      variant_run: {generator: biasmedqa, version: 3, base_dataset: Questions}
    - dataset: Released
      imported: true
    conditions:
    - source: Model A
      recipe: X
    - source: Nobody
    - source: Released run
      imported: true
      recipe: Recipe A
    scorers:
    - {name: letter, version: 9}
    - {name: vibes, version: 1}
    rubric: {name: EquityMedQA pairwise, version: 7}
    pools:
    - pool: Astronauts
    plans:
    - plan: biasmedqa-accuracy
    - plan: tea-leaves
    rating:
      panel_return_url: not a link
    """

    problems = problems_of(text)

    assert problems[:3] == [
        "line 4, questions[0].dataset: no dataset named 'No such dataset'",
        "line 6, questions[2].dataset: no dataset named 'Made later': make it first with generate_variants "
        'biasmedqa --base "Questions" --seed 0',
        "line 7, questions[2].variant_run.version: biasmedqa is at version 1, not 3",
    ]
    assert "line 7, questions[2].variant_run: this run makes the dataset 'BiasMedQA (biasmedqa v1, seed 0)', " \
           "not 'Made later'" in problems  # fmt: skip
    assert "line 12, conditions[0].recipe: no prompt recipe named 'X'" in problems
    assert "line 13, conditions[1].source: no answer source named 'Nobody'" in problems
    assert (
        "line 16, conditions[2].recipe: an imported condition has no recipe: its answers were made elsewhere"
        in problems
    )
    assert "line 18, scorers[0].version: the scorer 'letter' has no version 9 (versions: [1, 2])" in problems
    assert any(p.startswith("line 19, scorers[1].name: no scorer named 'vibes' (known: ") for p in problems)
    assert "line 20, rubric.version: the rubric 'EquityMedQA pairwise' has no version 7 (versions: [1])" in problems
    assert any(
        p.startswith("line 22, pools[0].pool: no rater pool named 'Astronauts' (known: Consumer, ") for p in problems
    )
    assert any(p.startswith("line 25, plans[1].plan: no analysis plan named 'tea-leaves' (known: ") for p in problems)
    assert "line 27, rating.panel_return_url: not a web address: 'not a link'" in problems
    assert len(problems) == 13
    assert counts() == before  # the declared imported dataset and source were not created either


def test_a_pool_without_a_rubric_and_repeated_entries_are_problems(names):
    text = """\
    format: 1
    name: Repeats
    questions:
    - dataset: Questions
    - dataset: Questions
    pools:
    - pool: Physician
    """

    assert problems_of(text) == [
        "line 5, questions[1]: the same entry as questions[0]",
        "line 6, pools: rater pools rate a rubric: give the study a rubric, or no pools",
    ]


def test_a_variant_run_is_checked_against_the_generator_and_the_dataset_it_makes(names):
    DatasetFactory(name="BiasMedQA (biasmedqa v1, seed 0)")
    text = """\
    format: 1
    name: Variants
    questions:
    - dataset: BiasMedQA (biasmedqa v1, seed 0)
      variant_run: {generator: biasmedqa, version: 1, seed: 0, base_dataset: Questions, options: {biases: [gossip]}}
    """

    [problem] = problems_of(text)
    assert problem.startswith("line 5, questions[0].variant_run.options: unknown bias gossip")


# --- Loading -------------------------------------------------------------------------------------------------


def test_load_creates_the_study_and_the_declared_imports_then_again_changes_nothing(names):
    first = load_study_text(VALID)

    study = first.study
    assert first.outcome == "created"
    assert first.created == ["source Released run"]
    assert AnswerSource.objects.get(name="Released run").kind == AnswerSource.Kind.IMPORTED
    assert study.rubric_version is None
    assert study.description == "A study small enough to read."
    assert study.definition["conditions"][1] == {"source": "Released run", "recipe": None, "imported": True}
    assert study.definition_sha256 == canonical_sha256(study.definition)
    before = counts()

    again = load_study_text(VALID)

    assert (again.study.pk, again.outcome, again.created) == (study.pk, "unchanged", [])
    assert counts() == before


def test_the_command_prints_the_study_and_says_unchanged_the_second_time(names, tmp_path):
    path = tmp_path / "small.yaml"
    path.write_text(VALID, encoding="utf-8")
    outputs = []
    for _ in range(2):
        out = io.StringIO()
        call_command("load_study", str(path), stdout=out)
        outputs.append(out.getvalue().splitlines())

    study = Study.objects.get(name="Small study")
    assert outputs[0][0] == outputs[1][0] == f"study {study.pk} Small study"
    assert outputs[0][1].startswith("created")
    assert outputs[1][1] == "unchanged: the study already holds this file"


def test_the_command_lists_every_problem_and_fails(names, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(VALID.replace("Recipe A", "Recipe B").replace("Questions", "Answers"), encoding="utf-8")

    with pytest.raises(CommandError) as raised:
        call_command("load_study", str(path), stdout=io.StringIO())

    message = str(raised.value)
    assert "nothing was created; 2 problem(s)" in message
    assert "line 5, questions[0].dataset: no dataset named 'Answers'" in message
    assert "line 8, conditions[0].recipe: no prompt recipe named 'Recipe B'" in message
    assert not Study.objects.exists()


def test_a_changed_file_updates_a_study_without_data(names):
    study = load_study_text(VALID).study

    changed = load_study_text(VALID.replace("A study small", "A study still small"))

    assert (changed.study.pk, changed.outcome) == (study.pk, "updated")
    study.refresh_from_db()
    assert study.description == "A study still small enough to read."
    assert study.definition["description"] == study.description


def test_a_changed_file_for_a_study_with_data_is_refused_and_changes_nothing(names):
    study = load_study_text(VALID).study
    StudyAnswer.objects.create(study=study, answer=AnswerFactory(), via=StudyAnswer.Via.IMPORTED)
    stored = (study.definition, study.definition_sha256)

    with pytest.raises(StudyRefused) as refused:
        load_study_text(VALID.replace("version: 2}", "version: 1}"))

    assert str(refused.value) == (
        f"the study 'Small study' (id {study.pk}) has 1 answer and its file differs (changed: scorers): load it "
        "with --new-version to make a new study beside it, or give the study another name"
    )
    study.refresh_from_db()
    assert (study.definition, study.definition_sha256) == stored
    assert load_study_text(VALID).outcome == "unchanged"


def test_new_version_makes_a_study_beside_the_one_with_data_and_finds_it_again(names, tmp_path):
    study = load_study_text(VALID).study
    StudyAnswer.objects.create(study=study, answer=AnswerFactory(), via=StudyAnswer.Via.IMPORTED)
    changed = VALID.replace("version: 2}", "version: 1}")

    second = load_study_text(changed, new_version=True)
    again = load_study_text(changed, new_version=True)
    third = load_study_text(changed.replace("plans:\n- plan: biasmedqa-accuracy\n", ""), new_version=True)

    assert (second.outcome, second.study.name) == ("new version", "Small study (v2)")
    assert (again.outcome, again.study.pk) == ("unchanged", second.study.pk)
    assert third.study.name == "Small study (v3)"
    assert second.study.definition["name"] == "Small study (v2)"
    assert load_study_text(export_study(second.study)).outcome == "unchanged"


def test_a_rated_study_gets_its_pools_and_items_from_its_datasets_and_sources(names):
    dataset = Dataset.objects.get(name="Questions")
    source = AnswerSource.objects.get(name="Model A")
    for _ in range(3):
        AnswerFactory(question=QuestionFactory(dataset=dataset), source=source)
    text = """\
    format: 1
    name: Rated
    questions: [{dataset: Questions}]
    conditions: [{source: Model A}]
    rubric: {name: EquityMedQA independent, version: 1}
    pools: [{pool: Physician, replication: 3}, {pool: Consumer, items_per_rater: 2}]
    rating: {instructions: Read carefully., claim_timeout_minutes: 60}
    """

    loaded = load_study_text(textwrap.dedent(text))

    study = loaded.study
    assert loaded.items == 3 == study.items.count()
    assert str(study.rubric_version) == "EquityMedQA independent v1"
    assert sorted(study.study_pools.values_list("pool__name", "replication", "items_per_rater")) == [
        ("Consumer", 1, 2), ("Physician", 3, None),
    ]  # fmt: skip
    assert (study.instructions, study.claim_timeout_minutes) == ("Read carefully.", 60)
    assert study.slots.count() == 3 * 4


def test_a_problem_found_while_writing_undoes_everything(names):
    before = counts()
    text = """\
    format: 1
    name: Pairwise with one source
    questions: [{dataset: Questions}]
    conditions: [{source: Model A}, {source: Released run, imported: true}, {source: Another, imported: true}]
    rubric: {name: EquityMedQA pairwise, version: 1}
    """

    assert problems_of(text) == [
        "line 4, conditions: A study of two answers side by side compares exactly two answer sources."
    ]
    assert counts() == before


def test_an_export_loads_back_unchanged_and_reads_the_same(names):
    study = load_study_text(VALID).study

    exported = export_study(study)

    assert load_study_text(exported).outcome == "unchanged"
    assert read_definition(exported)[0] == study.definition
    assert export_study(Study.objects.get(pk=study.pk)) == exported
    assert "#" not in exported


def test_the_export_command_writes_the_file(names, tmp_path):
    study = load_study_text(VALID).study
    out = tmp_path / "small.yaml"

    call_command("export_study", str(study.pk), "--out", str(out), stdout=io.StringIO())

    assert out.read_text(encoding="utf-8") == export_study(study)
    with pytest.raises(CommandError, match="no study with id 999"):
        call_command("export_study", "999", stdout=io.StringIO())


def test_the_command_refuses_a_changed_file_for_a_rated_study_with_the_reason(names, tmp_path):
    dataset = Dataset.objects.get(name="Questions")
    AnswerFactory(question=QuestionFactory(dataset=dataset), source=AnswerSource.objects.get(name="Model A"))
    rated = "format: 1\nname: Rated\nquestions: [{dataset: Questions}]\nconditions: [{source: Model A}]\n" \
            "rubric: {name: EquityMedQA independent, version: 1}\npools: [{pool: Physician}]\n"  # fmt: skip
    path = tmp_path / "rated.yaml"
    path.write_text(rated, encoding="utf-8")
    call_command("load_study", str(path), stdout=io.StringIO())
    path.write_text(rated.replace("{pool: Physician}", "{pool: Physician, replication: 3}"), encoding="utf-8")

    with pytest.raises(CommandError) as raised:
        call_command("load_study", str(path), stdout=io.StringIO())

    assert "refused: the study 'Rated'" in str(raised.value)
    assert "has 1 answer, 1 item and its file differs (changed: pools)" in str(raised.value)
    assert Study.objects.get(name="Rated").study_pools.get().replication == 1
    out = io.StringIO()
    call_command("load_study", str(path), "--new-version", stdout=out)
    study = Study.objects.get(name="Rated (v2)")
    assert out.getvalue().splitlines() == [
        f"study {study.pk} Rated (v2)",
        "created as a new version: the study of that name has data and its file changed; 1 item to rate",
    ]


def test_levels_must_select_questions_of_the_dataset(names):
    dataset = Dataset.objects.get(name="Questions")
    QuestionFactory(dataset=dataset, levels={"bias": "recency"})
    QuestionFactory(dataset=dataset)  # no bias: at the reference level, none
    text = """\
    format: 1
    name: Levels
    questions:
    - {dataset: Questions, levels: {bias: recency}}
    - {dataset: Questions, levels: {bias: none}}
    - {dataset: Questions, levels: {bias: recnecy, race__gender: x}}
    """

    assert problems_of(text) == [
        "line 6, questions[2].levels.bias: no question of 'Questions' is at bias = 'recnecy'",
        "line 6, questions[2].levels.race__gender: a factor's name is letters, digits and single underscores",
    ]


def test_tricky_text_round_trips_through_export(names):
    text = """\
    format: 1
    name: 'Tricky: "quotes", #hash, yes'
    description: "Line one: with a colon\\n  indented line # not a comment\\nlast line without newline"
    questions:
    - dataset: Questions
    plans:
    - plan: biasmedqa-accuracy
      params: {correction: holm, levels: ['no', 'yes', '1.0', null, 0.1, -3], nested: {"": "", "é": [true]}}
    rating:
      instructions: "  leading spaces and trailing  "
      consent_text: "tab\\there\\r\\nwindows line"
    """
    study = load_study_text(textwrap.dedent(text)).study

    exported = export_study(study)

    assert read_definition(exported)[0] == study.definition
    assert load_study_text(exported).outcome == "unchanged"
    assert study.definition["plans"][0]["params"]["levels"] == ["no", "yes", "1.0", None, 0.1, -3]
    assert study.instructions == "  leading spaces and trailing  "


def test_reading_problems_and_schema_problems_and_missing_names_are_all_reported_together(names):
    text = """\
    format: 1
    name: All at once
    ? [not, text]
    : 1
    description: !!binary aGVsbG8=
    questions: 5
    conditions:
    - source: Nobody
    """

    assert problems_of(text) == [
        "line 3, (the file): a key must be text, not a list or mapping",
        "line 5, description: binary data is not allowed",
        "line 6, questions: expected a list, not 5",
        "line 8, conditions[0].source: no answer source named 'Nobody'",
    ]


def test_the_command_says_when_the_file_cannot_be_read(tmp_path):
    with pytest.raises(CommandError, match="missing.yaml: No such file or directory"):
        call_command("load_study", str(tmp_path / "missing.yaml"), stdout=io.StringIO())
    big = tmp_path / "big.yaml"
    big.write_bytes(b"#" * (600 * 1024))
    with pytest.raises(CommandError, match="line 1, \\(the file\\): the file is larger than 512 KB"):
        call_command("load_study", str(big), stdout=io.StringIO())
