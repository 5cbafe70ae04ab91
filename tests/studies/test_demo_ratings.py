"""The demo's simulated ratings: triple-rated in every pool, labelled as simulated, imported once."""

from collections import Counter

import pytest

from datasets.demo import seed_demo
from studies.demo import seed_demo_studies
from studies.demo_ratings import STUDY_NAME, seed_simulated_ratings
from studies.models import Rating, Study

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    seed_demo()
    seed_demo_studies()


def test_every_item_is_rated_three_times_per_pool_by_simulated_raters(demo):
    report = seed_simulated_ratings()

    assert report.created["ratings"] == 48 * 9 + 48 * 6 + 24 * 6
    ratings = Rating.objects.filter(assignment__item__study__name__startswith=STUDY_NAME)
    per_item_and_pool = Counter(ratings.values_list("assignment__item_id", "assignment__rater__pool__name"))
    assert set(per_item_and_pool.values()) == {3}
    assert {rater.split("-")[1] for rater in ratings.values_list("assignment__rater__pseudonym", flat=True)} == {
        "physician", "equity", "consumer"}  # fmt: skip
    assert set(Study.objects.filter(name__startswith=STUDY_NAME).values_list("name", flat=True)) == {
        f"{STUDY_NAME} ({kind})" for kind in ("independent", "pairwise", "counterfactual")}  # fmt: skip
    assert all(study.is_locked for study in Study.objects.filter(name__startswith=STUDY_NAME))


def test_consumers_carry_the_demographics_the_regression_needs(demo):
    seed_simulated_ratings()
    consumers = Rating.objects.filter(
        assignment__item__study__name__startswith=STUDY_NAME, assignment__rater__pool__slug="consumer"
    )
    ages = set(consumers.values_list("assignment__rater__background__age_group", flat=True))
    assert ages == {"18-29", "30-44", "45-64", "65+"}


def test_a_second_run_adds_nothing(demo):
    seed_simulated_ratings()
    count = Rating.objects.count()

    report = seed_simulated_ratings()

    assert report.created["ratings"] == 0 and report.already_present == 864 and Rating.objects.count() == count
