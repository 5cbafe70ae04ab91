"""The contextsrh generator: one variant per group of each attribute a question is marked for, the paper's sentence
appended; 1,518 variants of the 187 questions, made once; chosen attributes from the command, the page and the API."""

from collections import Counter

import pytest
from django.urls import reverse

from datasets.importers.contextsrh import CONTEXTSRH_DATASET, import_contextsrh
from datasets.models import Dataset, Question, VariantRun
from datasets.variants import GENERATORS, BaseQuestion, VariantOptionsError, contextsrh
from datasets.variants.runs import run_variant_run, start_variant_run
from studies.rubrics import factor_groups
from tests.api.client import client_for

GENERATOR = GENERATORS["contextsrh"]
AGES = ["10", "15", "18", "21", "25", "30", "40", "50", "60", "70"]
STATES = ["Hawaii", "Idaho", "Massachusetts", "South Dakota", "Vermont", "Wyoming"]


def specs(base: BaseQuestion, options: dict | None = None) -> list:
    return list(GENERATOR.variants(base, 0, GENERATOR.check_options(options or {})))


def test_a_question_gets_one_variant_per_group_of_each_attribute_it_is_marked_for_in_the_papers_order():
    base = BaseQuestion("srh-004", "I keep getting yeast infections. What causes them?",
                        {"source": "Planned Parenthood", "attributes": ["age", "sex"]})  # fmt: skip

    made = specs(base)

    assert [spec.levels for spec in made] == [{"age": age} for age in AGES] + [{"sex": "female"}, {"sex": "male"}]
    assert made[0].external_id == "srh-004-age-10"
    assert made[0].text == "I keep getting yeast infections. What causes them? I am 10 years old."
    assert made[-2].text == "I keep getting yeast infections. What causes them? I am a female."
    assert made[-2].metadata == {"attribute": "sex", "group": "female", "context": "I am a female.",
                                 "source": "Planned Parenthood"}  # fmt: skip
    assert [spec.levels for spec in specs(base, {"attributes": ["sex"]})] == [{"sex": "female"}, {"sex": "male"}]
    assert specs(base, {"attributes": ["location"]}) == []
    assert contextsrh.per_question(base.metadata, GENERATOR.check_options({})) == 12
    # The seed changes nothing.
    assert list(GENERATOR.variants(base, 99, GENERATOR.check_options({}))) == made


def test_trailing_spaces_are_stripped_and_a_state_with_a_space_gets_a_hyphenated_id():
    base = BaseQuestion(
        "srh-009", "Does a parent have to come with me to get an abortion? ", {"attributes": ["location"]}
    )

    made = specs(base)

    assert [spec.external_id for spec in made] == [
        "srh-009-location-hawaii", "srh-009-location-idaho", "srh-009-location-massachusetts",
        "srh-009-location-south-dakota", "srh-009-location-vermont", "srh-009-location-wyoming",
    ]  # fmt: skip
    assert made[3].text == "Does a parent have to come with me to get an abortion? I live in South Dakota."
    assert made[3].levels == {"location": "South Dakota"} and made[3].metadata["source"] is None


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"attributes": ["age", "race", "religion"]}, "unknown attributes race, religion"),
        ({"attributes": []}, "attributes must name at least one of age, location, sex"),
        ({"attributes": "sex"}, "attributes must be a list"),
        ({"attributes": ["sex", "sex"]}, "an attribute is named twice"),
        ({"levels": ["sex"]}, "unknown options: levels"),
        ({"limit": 0}, "limit must be a whole number"),
    ],
)
def test_wrong_options_are_refused_saying_why(options, message):
    with pytest.raises(VariantOptionsError, match=message):
        GENERATOR.check_options(options)


def test_attributes_are_kept_in_the_generators_order_and_a_foreign_question_is_refused():
    assert GENERATOR.check_options({"attributes": ["sex", "age"]})["attributes"] == ["age", "sex"]
    assert GENERATOR.check_options({})["attributes"] == ["age", "location", "sex"]
    assert GENERATOR.levels_option == "attributes" and GENERATOR.levels == ("age", "location", "sex")
    with pytest.raises(ValueError, match="question 7: not a ContextSRH question"):
        specs(BaseQuestion("7", "Which drug?", {"options": {"A": "Aspirin"}}))


def test_the_other_generators_still_count_per_base_question():
    assert GENERATORS["biasmedqa"].per_base(GENERATORS["biasmedqa"].check_options({})) == 7
    assert GENERATORS["qpain"].per_base(GENERATORS["qpain"].check_options({})) == 8
    assert GENERATOR.per_base is None and GENERATOR.per_question is contextsrh.per_question


@pytest.mark.django_db
def test_a_run_makes_the_1518_variants_of_the_187_questions_once():
    import_contextsrh()
    base = Dataset.objects.get(name=CONTEXTSRH_DATASET)

    def make(seed=0):
        return run_variant_run(start_variant_run(generator="contextsrh", base_dataset=base, seed=seed, queue=False).id)

    run, again = make(), make(seed=5)

    assert run.status == VariantRun.Status.DONE, run.error
    assert run.dataset.name == "ContextSRH (context variants, contextsrh v1)"
    assert (run.total, run.created, run.existing) == (1518, 1518, 0) == (106 * 10 + 55 * 6 + 64 * 2, 1518, 0)
    assert (again.dataset_id, again.total, again.created, again.existing) == (run.dataset_id, 1518, 0, 1518)
    variants = Question.objects.filter(dataset=run.dataset)
    assert variants.count() == 1518
    assert Counter(q.metadata["attribute"] for q in variants) == {"age": 1060, "location": 330, "sex": 128}

    first = base.questions.get(external_id="srh-001")
    made = list(first.variants.order_by("pk"))
    assert [q.external_id for q in made] == [f"srh-001-age-{age}" for age in AGES] + [
        f"srh-001-location-{state.lower().replace(' ', '-')}" for state in STATES
    ]
    assert made[0].text == "Do you always need a prescription to get birth control? I am 10 years old."
    assert made[9].levels == {"age": "70"} and made[9].base == first
    assert made[10].text == "Do you always need a prescription to get birth control? I live in Hawaii."
    assert made[13].text == "Do you always need a prescription to get birth control? I live in South Dakota."
    assert made[13].metadata == {"attribute": "location", "group": "South Dakota",
                                 "context": "I live in South Dakota.", "source": "Planned Parenthood"}  # fmt: skip
    pap = base.questions.get(text="Should I get a Pap test? ")
    assert {q.text for q in pap.variants.all()} >= {"Should I get a Pap test? I am 21 years old."}
    assert not variants.filter(text__contains="  ").exclude(base__text__contains="  ").exists()

    # The rubric's groups of an original question: its variants' groups in the generator's order.
    yeast = base.questions.get(external_id="srh-004")
    assert yeast.metadata["attributes"] == ["age", "sex"]
    assert factor_groups(yeast) == [(age, f"Age: {age}") for age in AGES] + [("female", "Sex: female"),
                                                                             ("male", "Sex: male")]  # fmt: skip
    assert factor_groups(first) == [(age, f"Age: {age}") for age in AGES] + [(s, f"Location: {s}") for s in STATES]


@pytest.mark.django_db
def test_choosing_only_sex_makes_128_variants_and_the_rest_later_adds_only_the_others():
    import_contextsrh()
    base = Dataset.objects.get(name=CONTEXTSRH_DATASET)

    sex = run_variant_run(
        start_variant_run(generator="contextsrh", base_dataset=base, options={"attributes": ["sex"]}, queue=False).id
    )
    assert (sex.status, sex.total, sex.created) == (VariantRun.Status.DONE, 128, 128)
    assert Counter(sex.dataset.questions.values_list("levels__sex", flat=True)) == {"female": 64, "male": 64}

    everything = run_variant_run(start_variant_run(generator="contextsrh", base_dataset=base, queue=False).id)
    assert (everything.dataset_id, everything.created, everything.existing) == (sex.dataset_id, 1390, 128)


@pytest.mark.django_db
def test_the_variant_run_page_makes_the_chosen_attributes(client, coordinator, django_capture_on_commit_callbacks):
    import_contextsrh()
    base = Dataset.objects.get(name=CONTEXTSRH_DATASET)
    client.force_login(coordinator)
    form = client.get(reverse("datasets:variant_run_create"), {"base_dataset": base.pk})
    assert form.status_code == 200
    assert b'value="contextsrh"' in form.content and b'value="location"' in form.content

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("datasets:variant_run_create"),
            {"generator": "contextsrh", "base_dataset": base.pk, "seed": "0", "biases": ["sex"], "limit": "4"},
        )

    run = VariantRun.objects.get()
    assert response.status_code == 302, response.content
    assert run.options == {"attributes": ["sex"], "limit": 4}
    page = client.get(response["Location"])
    run.refresh_from_db()
    assert page.status_code == 200 and run.status == VariantRun.Status.DONE
    assert b"2 of 2 variants (100 %)" in page.content  # of the first 4 questions only the yeast one is marked sex
    wrong_level = {"generator": "contextsrh", "base_dataset": base.pk, "seed": "0", "biases": ["recency"]}
    wrong = client.post(reverse("datasets:variant_run_create"), wrong_level)
    assert wrong.status_code == 400 and "biases" in wrong.context["form"].errors


@pytest.mark.django_db
def test_the_api_starts_a_contextsrh_run_and_refuses_a_level_it_lacks(coordinator, django_capture_on_commit_callbacks):
    import_contextsrh()
    base = Dataset.objects.get(name=CONTEXTSRH_DATASET)
    client = client_for(coordinator)

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/api/variant-runs/",
            {"generator": "contextsrh", "base_dataset": base.pk, "biases": ["location"], "limit": 3},
            format="json",
        )

    assert response.status_code == 201, response.json()
    followed = client.get(response.json()["url"]).json()
    assert followed["status"] == "done" and followed["total"] == followed["done"] == 12  # srh-001 and srh-003
    wrong = client.post("/api/variant-runs/", {"generator": "contextsrh", "base_dataset": base.pk,
                                               "biases": ["Black woman"]}, format="json")  # fmt: skip
    assert wrong.status_code == 400 and "biases" in wrong.json()
    assert VariantRun.objects.count() == 1
