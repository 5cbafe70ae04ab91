"""The demo's simulated ratings: triple-rated in every pool, labelled as simulated, imported once."""

from collections import Counter

import pytest

from analysis.loading import load_frame
from analysis.tables import consumer_regression_table
from datasets.demo import seed_demo
from raters.defaults import DEFAULT_DEMOGRAPHIC_OPTIONS
from raters.forms import demographic_choices
from raters.models import PREFER_NOT_TO_SAY, RaterBackground
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


def test_simulated_consumers_answer_with_the_panel_forms_categories_only(demo):
    """Simulated and real consumers share levels: the categories of raters/defaults.py (DemographicOption rows)
    and "Prefer not to say", race/ethnicity with several categories at once as the form allows."""
    seed_simulated_ratings()
    offered = {field: {label for label, _ in demographic_choices(field)} for field in ("age_group", "gender",
                                                                                    "race_ethnicity")}  # fmt: skip
    backgrounds = RaterBackground.objects.filter(profile__pseudonym__startswith="sim-consumer-")
    answers = list(backgrounds.values_list("age_group", "gender", "race_ethnicity"))

    assert len(answers) == 12
    for age_group, gender, races in answers:
        assert age_group in offered["age_group"] and gender in offered["gender"], (age_group, gender)
        assert races and set(races) <= offered["race_ethnicity"], races
        assert PREFER_NOT_TO_SAY not in races or races == [PREFER_NOT_TO_SAY]  # as the form validates
    assert {age for age, _, _ in answers} <= set(DEFAULT_DEMOGRAPHIC_OPTIONS["age_group"])
    assert any(len(races) == 2 for _, _, races in answers)
    assert [PREFER_NOT_TO_SAY] in [races for _, _, races in answers]


def test_the_demo_consumer_regression_is_estimable(demo):
    """Every level has at least two simulated consumers, so the demo's regression has odds ratios to show."""
    seed_simulated_ratings()
    study = Study.objects.get(name=f"{STUDY_NAME} (independent)")

    table = consumer_regression_table(load_frame("independent", study))

    estimated = table[table["note"] == ""]
    assert set(estimated["predictor"]) == {"rater_age_group", "rater_gender", "rater_race_ethnicity"}
    assert not table["note"].str.contains("rater|singular").any()
    race = table[table["predictor"] == "rater_race_ethnicity"].set_index("level")
    assert {"Hispanic or Latino", "White", PREFER_NOT_TO_SAY} <= set(race.index)


def test_a_second_run_adds_nothing(demo):
    seed_simulated_ratings()
    count = Rating.objects.count()

    report = seed_simulated_ratings()

    assert report.created["ratings"] == 0 and report.already_present == 864 and Rating.objects.count() == count
