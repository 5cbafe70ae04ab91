"""The study-design API is bounded (issue 17): a recipe's rendered prompt, examples, replace pairs, factor names
and `where` keys, a job's levels, and the fields a recipe takes; each refused with a 400 naming the field."""

import pytest

from datasets.models import GenerationJob, PromptRecipe
from tests.api.client import client_for
from tests.factories import AnswerSourceFactory, DatasetFactory, QuestionFactory

pytestmark = pytest.mark.django_db

OPTIONS = {"A": "Aspirin", "B": "Heparin", "C": "Warfarin", "D": "Nothing"}
RECIPE_BODY = {"name": "Short answer", "item_template": "Q: {question}\nOptions: {options}\nA: ", "max_tokens": 4}


@pytest.fixture
def pool():
    dataset = DatasetFactory(name="Pool")
    metadata = {"options": OPTIONS, "answer_idx": "B", "kind": "yes"}
    for n in range(3):
        QuestionFactory(dataset=dataset, external_id=str(n), text=f"Question {n}: the patient needs treatment here?",
                        levels={"bias": "recency"}, metadata=metadata)  # fmt: skip
    return dataset


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"examples": [{"replace": [["e", "eeeeeeeeee"]] * 7}]}, "examples",
         "replacing 'e' would make the prompt longer than 1,000,000 characters"),
        ({"examples": [{"answer": "wrong"}] * 21}, "examples", "At most 20 worked examples, not 21."),
        ({"examples": [{"replace": [["a", "b"]] * 21}]}, "examples", '"replace" has at most 20 pairs, not 21.'),
        ({"examples": [{"replace": [["a", "b" * 201]]}]}, "examples", "is at most 200 characters"),
        ({"examples": [{"where": {"query__regex": "^(.+)(.+)(.+)(.+)\\4\\3\\2\\1$"}}]}, "examples",
         "not a metadata field name"),
        ({"examples": [{"where": {f"k{n}": "x" for n in range(21)}}]}, "examples", "at most 20 fields, not 21"),
        ({"level_factor": "bias__isnull"}, "level_factor", "'bias__isnull' is not a factor name"),
        ({"examples_match_factor": "race__range"}, "examples_match_factor", "'race__range' is not a factor name"),
        ({"item_template": "{question}" * 30_000}, "item_template", "the prompt would be longer than 1,000,000"),
        ({"evil": 1}, "evil", "Unknown field; the fields are: name, description, mode,"),
    ],
)  # fmt: skip
def test_a_recipe_out_of_bounds_is_400_naming_the_field(coordinator, pool, change, field, message):
    response = client_for(coordinator).post("/api/recipes/", {**RECIPE_BODY, "examples_pool": pool.pk, **change},
                                            format="json")  # fmt: skip
    assert response.status_code == 400, response.json()
    assert message in " ".join(response.json()[field])
    assert not PromptRecipe.objects.exists()


def test_an_update_naming_an_unknown_field_is_400_and_changes_nothing(coordinator):
    recipe = PromptRecipe.objects.create(name="Plain", max_tokens=8)
    client = client_for(coordinator)
    response = client.patch(f"/api/recipes/{recipe.pk}/", {"max_tokens": 2, "max_token": 3}, format="json")
    assert response.status_code == 400 and "Unknown field" in response.json()["max_token"][0]
    recipe.refresh_from_db()
    assert recipe.max_tokens == 8
    sent_back = client.get(f"/api/recipes/{recipe.pk}/").json()  # what was read may be sent back as it is
    assert client.put(f"/api/recipes/{recipe.pk}/", {**sent_back, "max_tokens": 2}, format="json").status_code == 200


@pytest.mark.parametrize(
    ("levels", "message"),
    [
        ({"bias__isnull": "x"}, "is not a factor name"),
        ({"bias__regex": "("}, "is not a factor name"),
        ({"race__range": "abc"}, "is not a factor name"),
        ({"query__regex": "^(.+)(.+)(.+)(.+)\\4\\3\\2\\1$"}, "is not a factor name"),
        ({"bias\n": "x"}, "is not a factor name"),
        ({f"factor{n}": "x" for n in range(10_000)}, "At most 20 factors, not 10000."),
        ({"bias": "x" * 201}, "no more than 200 characters"),
    ],
)
def test_a_job_with_levels_out_of_bounds_is_400(coordinator, pool, levels, message):
    recipe = PromptRecipe.objects.create(name="Plain")
    source = AnswerSourceFactory(base_url="http://127.0.0.1:9/v1")
    response = client_for(coordinator).post(
        f"/api/recipes/{recipe.pk}/generate/", {"dataset": pool.pk, "source": source.pk, "levels": levels},
        format="json",
    )  # fmt: skip
    assert response.status_code == 400
    assert message in str(response.json()["levels"])
    assert not GenerationJob.objects.exists()


def test_the_preview_of_a_stored_recipe_naming_a_lookup_is_400(coordinator, pool):
    recipe = PromptRecipe.objects.create(name="Old", examples=[{"where": {"kind__regex": "("}}], examples_pool=pool)
    response = client_for(coordinator).post(f"/api/recipes/{recipe.pk}/preview/",
                                            {"question_id": pool.questions.first().pk}, format="json")  # fmt: skip
    assert response.status_code == 400
    assert "'kind__regex', not a metadata field name" in response.json()["detail"]
