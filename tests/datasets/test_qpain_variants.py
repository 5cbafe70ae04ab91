"""The qpain generator: each "Yes" vignette x 4 races x 2 genders, filled as the notebook fills it, names drawn
by a seeded rule or read from a released run, so that run's prompts are rebuilt exactly."""

import json
from collections import Counter
from io import StringIO

import pytest
from django.core.management import call_command

from datasets.importers.qpain import QPAIN_DATASET, import_qpain_vignettes, read_vignettes
from datasets.models import Dataset, Question, VariantRun
from datasets.variants import GENERATORS, BaseQuestion, VariantOptionsError, qpain
from datasets.variants.runs import run_variant_run, start_variant_run

GENERATOR = GENERATORS["qpain"]
CONTEXT_KEYS = {name: key for key, name in qpain.CONTEXTS.items()}


def bases() -> dict[str, BaseQuestion]:
    return {row.external_id: BaseQuestion(row.external_id, row.text, row.metadata) for row in read_vignettes()}


def deepseek_records(shared_datasets) -> list[dict]:
    path = shared_datasets / "qpain" / "model_outputs" / "deepseek-32k_qpain_outputs.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def names_table(records: list[dict]) -> dict[str, str]:
    return {
        qpain.name_key(CONTEXT_KEYS[r["context"]], r["vignette_idx"], r["race"], r["gender"]): r["name"]
        for r in records
    }


def all_variants(seed: int = 0, **options) -> dict[str, object]:
    checked = GENERATOR.check_options(options)
    return {
        spec.external_id: spec
        for base in bases().values()
        if base.metadata["kind"] == "yes"
        for spec in GENERATOR.variants(base, seed, checked)
    }


def open_prompt(spec) -> str:
    return "Vignette: " + spec.text + "\nQuestion: " + spec.metadata["query"] + "\nAnswer:"


def test_with_the_deepseek_names_392_of_its_400_open_prompts_are_rebuilt_exactly(shared_datasets):
    records = deepseek_records(shared_datasets)
    variants = all_variants(names=names_table(records), names_label="deepseek-32k")
    assert len(records) == len(variants) == 400

    differing = []
    for record in records:
        base_id = f"{CONTEXT_KEYS[record['context']]}-{record['vignette_idx']:02d}"
        spec = variants[f"{base_id}-{record['race']}-{record['gender']}"]
        assert spec.metadata["name"] == record["name"]
        if open_prompt(spec) != record["open_prompt"]:
            differing.append(record)

    # The 8 that differ: post-op vignette 9, whose `[subjective]` typo the run (like the notebook) left in the
    # prompt; the generator fills it as `[subject]`. Nothing else differs.
    assert sorted((r["context"], r["vignette_idx"]) for r in differing) == [("Post Operative Pain", 9)] * 8
    for record in differing:
        spec = variants[f"post_op-09-{record['race']}-{record['gender']}"]
        pronoun = qpain.SUBJECT[record["gender"]]
        assert record["open_prompt"].count("[subjective]") == 1
        assert open_prompt(spec) == record["open_prompt"].replace("[subjective]", pronoun)


def test_every_placeholder_is_filled_in_the_vignette_and_the_question():
    variants = all_variants()

    assert len(variants) == 400
    for spec in variants.values():
        for text in (spec.text, spec.metadata["query"]):
            assert "[" not in text and "Patient D" not in text, spec.external_id
            assert spec.metadata["name"] in text
        race, gender = spec.levels["race"], spec.levels["gender"]
        assert f"{race} {gender}" in spec.text


def test_a_variant_knows_its_base_profile_and_the_gold_fields():
    base = bases()["chronic_cancer-03"]
    [spec] = GENERATOR.variants(base, 0, GENERATOR.check_options({"races": ["Hispanic"], "genders": ["woman"]}))

    assert spec.external_id == "chronic_cancer-03-Hispanic-woman"
    assert spec.levels == {"context": "chronic_cancer", "vignette": "chronic_cancer-03", "race": "Hispanic",
                           "gender": "woman"}  # fmt: skip
    name = spec.metadata["name"]
    assert name in qpain.NAMES["Hispanic"]["woman"]
    assert spec.text == (
        base.text.replace("[gender]", "woman").replace("[race]", "Hispanic").replace("[subject]", "she")
        .replace("[possessive]", "her").replace("Patient D", name)
    )  # fmt: skip
    for key in ("answer", "dosage", "explanation", "context_name", "dose_low", "dose_high", "kind", "vignette_idx"):
        assert spec.metadata[key] == base.metadata[key], key
    assert spec.metadata["explanation"].startswith("Patient D")  # copied as released (the recipes de-identify it)
    assert (spec.metadata["race"], spec.metadata["gender"]) == ("Hispanic", "woman")
    assert spec.metadata["generator"] == {"name": "qpain", "version": 1, "seed": 0}


def test_names_are_a_seeded_permutation_per_context_race_and_gender():
    zero, again, one = all_variants(0), all_variants(0), all_variants(1)

    assert {k: v.text for k, v in zero.items()} == {k: v.text for k, v in again.items()}
    names = Counter()
    for spec in zero.values():
        levels = spec.levels
        names[(levels["context"], levels["race"], levels["gender"], spec.metadata["name"])] += 1
        expected = qpain.drawn_name(
            0, levels["context"], levels["race"], levels["gender"], spec.metadata["vignette_idx"]
        )
        assert spec.metadata["name"] == expected
    assert set(names.values()) == {1}  # each name once per context, race and gender: a permutation of the 10
    assert len(names) == 400
    assert sum(zero[key].metadata["name"] != one[key].metadata["name"] for key in zero) > 300


def test_the_generator_is_registered_with_its_factor_levels_and_base_filter():
    assert GENERATOR.factor == "race x gender" and GENERATOR.version == 1
    assert GENERATOR.levels == ("Black man", "Black woman", "White man", "White woman", "Asian man", "Asian woman",
                                "Hispanic man", "Hispanic woman")  # fmt: skip
    assert dict(GENERATOR.base_filter) == {"metadata__kind": "yes"}
    assert GENERATOR.per_base(GENERATOR.check_options({})) == 8
    assert GENERATOR.per_base(GENERATOR.check_options({"races": ["Black", "White"], "genders": ["woman"]})) == 2
    assert GENERATOR.dataset_name(0, GENERATOR.check_options({})) == "Q-Pain variants (qpain v1, seed 0)"
    named = GENERATOR.check_options({"names": {}, "names_label": "deepseek-32k"})
    assert GENERATOR.dataset_name(3, named) == "Q-Pain variants (qpain v1, names from deepseek-32k)"
    assert GENERATOR.dataset_name(0, GENERATOR.check_options({"dataset": "Mine"})) == "Mine"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"biases": ["recency"]}, "unknown options: biases"),
        ({"races": ["Black", "Martian"]}, "unknown races Martian; known: Black, White, Asian, Hispanic"),
        ({"races": "Black"}, "races must be a list of names"),
        ({"genders": []}, "genders must name at least one of man, woman"),
        ({"genders": ["man", "man"]}, "one of the genders is named twice"),
        ({"names": ["Latonya"]}, 'names must map "context/NN/Race/gender"'),
        ({"names": {"acute_cancer/0/Black/woman": "Latonya"}}, 'is not "context/NN/Race/gender"'),
        ({"names": {"dental/00/Black/woman": "Latonya"}}, "unknown context 'dental'"),
        ({"names": {"acute_cancer/00/black/woman": "Latonya"}}, "the race is one of Black, White"),
        ({"names": {"acute_cancer/00/Black/woman": " "}}, "the name must be a non-empty text"),
        ({"names_label": "deepseek-32k"}, "give the table (names) too"),
        ({"limit": 0}, "limit must be a whole number"),
        ({"levels": ["Black woman"], "races": ["Black"]}, "give either levels or races and genders"),
        ({"levels": "Black woman"}, "levels must be a non-empty list"),
        ({"levels": ["Black woman", "Martian man"]}, "unknown level Martian man"),
        ({"levels": ["Black woman", "Black woman"]}, "a level is named twice"),
    ],
)
def test_wrong_options_are_refused_saying_why(options, message):
    with pytest.raises(VariantOptionsError) as refused:
        GENERATOR.check_options(options)
    assert message in str(refused.value)


def test_a_names_table_must_cover_every_variant_asked():
    base = bases()["acute_cancer-00"]
    options = GENERATOR.check_options({"names": {"acute_cancer/00/Black/woman": "Latonya"}, "genders": ["woman"]})

    with pytest.raises(VariantOptionsError, match="the names table has no name for acute_cancer/00/White/woman"):
        list(GENERATOR.variants(base, 0, options))
    options = GENERATOR.check_options({"names": {"acute_cancer/00/Black/woman": "Latonya"}, "races": ["Black"],
                                       "genders": ["woman"]})  # fmt: skip
    [spec] = GENERATOR.variants(base, 0, options)
    assert spec.text.startswith("Latonya is a 62-year-old Black woman")
    assert spec.metadata["generator"]["names"] == "table"


def test_a_no_vignette_or_a_foreign_question_is_not_a_base():
    with pytest.raises(ValueError, match='not a Q-Pain "Yes" vignette'):
        list(GENERATOR.variants(bases()["post_op-no"], 0, GENERATOR.check_options({})))
    stray = BaseQuestion("7", "Patient D is a [race] [gender].", {"kind": "yes", "vignette_idx": 7, "query": "?"})
    with pytest.raises(ValueError, match="not a Q-Pain vignette id"):
        list(GENERATOR.variants(stray, 0, GENERATOR.check_options({})))


@pytest.mark.django_db
def test_a_run_makes_the_400_variants_of_the_50_yes_vignettes_once():
    import_qpain_vignettes()
    base = Dataset.objects.get(name=QPAIN_DATASET)

    def make():
        run = start_variant_run(generator="qpain", base_dataset=base, seed=0, queue=False)
        return run_variant_run(run.id)

    run, again = make(), make()

    assert run.status == VariantRun.Status.DONE, run.error
    assert run.dataset.name == "Q-Pain variants (qpain v1, seed 0)"
    assert (run.total, run.created, run.existing) == (400, 400, 0)
    assert (again.dataset_id, again.total, again.created, again.existing) == (run.dataset_id, 400, 0, 400)
    variants = Question.objects.filter(dataset=run.dataset)
    assert variants.count() == 400
    assert not variants.filter(base__metadata__kind="no").exists()
    one = variants.get(external_id="acute_cancer-00-Black-woman")
    assert one.base == base.questions.get(external_id="acute_cancer-00")
    assert one.levels == {"context": "acute_cancer", "vignette": "acute_cancer-00", "race": "Black", "gender": "woman"}
    assert Counter(variants.values_list("levels__race", flat=True)) == dict.fromkeys(qpain.RACES, 100)


@pytest.mark.django_db
def test_generate_variants_runs_qpain_from_the_command_line():
    import_qpain_vignettes()
    out = StringIO()

    call_command("generate_variants", "qpain", "--base", QPAIN_DATASET, "--limit", "2", stdout=out)

    assert "Variants: 16 (16 created, 0 already there)" in out.getvalue()


@pytest.mark.django_db
def test_chosen_levels_make_only_those_profiles_from_the_command_line_and_the_pages_options():
    from datasets.variant_pages import run_options

    import_qpain_vignettes()
    out = StringIO()
    call_command(
        "generate_variants", "qpain", "--base", QPAIN_DATASET, "--limit", "3", "--levels", "Black woman", "White man",
        stdout=out,
    )  # fmt: skip
    assert "Variants: 6 (6 created, 0 already there)" in out.getvalue()
    made = Question.objects.exclude(dataset__name=QPAIN_DATASET)
    assert Counter((q.levels["race"], q.levels["gender"]) for q in made) == {("Black", "woman"): 3, ("White", "man"): 3}
    assert VariantRun.objects.get().options["levels"] == ["Black woman", "White man"]
    # The pages and the API hand the chosen levels to each generator under its own option.
    assert run_options(generator="qpain", biases=["White man"], limit=None) == {"levels": ["White man"]}
    assert run_options(generator="biasmedqa", biases=["recency"], limit=2) == {"biases": ["recency"], "limit": 2}
