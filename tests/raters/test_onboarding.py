"""Onboarding: consent for consumers, then demographics (consumers) or professional background (experts)."""

import re

import pytest
from django.urls import reverse

from raters.models import PREFER_NOT_TO_SAY, DemographicOption, RaterBackground, RaterPool
from raters.views import ONBOARDING_STUDY
from tests.factories import RaterFactory, StudyFactory

pytestmark = pytest.mark.django_db

ONBOARDING = "/onboarding/"
QUEUE = "/rate/"
DEMOGRAPHICS = {"step": "demographics", "age_group": "25-34", "gender": "Woman", "race_ethnicity": ["Asian", "White"]}
BACKGROUND = {
    "step": "background",
    "years_in_practice": "12",
    "specialty": "Family medicine",
    "country": "Kenya",
    "qualifications": "MBChB; MPH",
}


@pytest.fixture
def consumer(db):
    return RaterFactory(pool="consumer")


def _consent(client):
    return client.post(ONBOARDING, {"step": "consent", "agree": "on"})


def test_the_onboarding_url_and_the_queue_it_leads_to():
    assert reverse("raters:onboarding") == ONBOARDING
    assert reverse("studies:queue") == QUEUE


def test_onboarding_requires_login(client):
    response = client.get(ONBOARDING)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_onboarding_is_only_for_raters(client, coordinator):
    client.force_login(coordinator)
    assert client.get(ONBOARDING).status_code == 403
    assert client.post(ONBOARDING, BACKGROUND).status_code == 403


def test_onboarding_refuses_other_methods(client, consumer):
    client.force_login(consumer)
    assert client.delete(ONBOARDING).status_code == 405


def test_a_consumer_is_asked_for_consent_first(client, consumer):
    client.force_login(consumer)
    response = client.get(ONBOARDING)
    assert response.status_code == 200
    assert b'name="agree"' in response.content
    assert b'<label for="id_agree">I agree</label>' in response.content
    assert b'name="age_group"' not in response.content


def test_consent_shows_the_study_consent_text(client, consumer):
    study = StudyFactory(consent_text="We keep your ratings for five years.\n\nYou may stop at any time.")
    client.force_login(consumer)
    session = client.session
    session[ONBOARDING_STUDY] = study.pk
    session.save()

    response = client.get(ONBOARDING)

    assert b"<p>We keep your ratings for five years.</p>" in response.content
    assert b"<p>You may stop at any time.</p>" in response.content


def test_consent_cannot_be_skipped(client, consumer):
    client.force_login(consumer)

    unticked = client.post(ONBOARDING, {"step": "consent"})
    skipped = client.post(ONBOARDING, DEMOGRAPHICS)

    assert unticked.status_code == 200
    assert b'role="alert"' in unticked.content
    assert "Tick “I agree” to take part" in unticked.content.decode()
    assert skipped.status_code == 302
    assert skipped["Location"] == ONBOARDING
    consumer.rater_profile.refresh_from_db()
    assert consumer.rater_profile.consented_at is None
    assert not RaterBackground.objects.exists()


def test_consent_is_recorded_once_and_the_demographics_survey_follows(client, consumer):
    client.force_login(consumer)

    response = _consent(client)
    profile = consumer.rater_profile
    profile.refresh_from_db()
    first_consent = profile.consented_at
    again = _consent(client)  # the same form sent twice
    survey = client.get(ONBOARDING)

    assert response.status_code == 302
    assert response["Location"] == ONBOARDING
    assert first_consent is not None
    assert again["Location"] == ONBOARDING
    profile.refresh_from_db()
    assert profile.consented_at == first_consent
    assert b'name="age_group"' in survey.content
    assert profile.onboarded_at is None


def test_demographics_are_stored_and_onboarding_ends_at_the_queue(client, consumer):
    client.force_login(consumer)
    _consent(client)

    response = client.post(ONBOARDING, DEMOGRAPHICS)

    assert response.status_code == 302
    assert response["Location"] == QUEUE
    background = RaterBackground.objects.get(profile=consumer.rater_profile)
    assert (background.age_group, background.gender) == ("25-34", "Woman")
    assert background.race_ethnicity == ["Asian", "White"]
    assert background.years_in_practice is None
    consumer.rater_profile.refresh_from_db()
    assert consumer.rater_profile.onboarded_at is not None


def test_every_demographic_question_offers_prefer_not_to_say_in_a_fieldset(client, consumer):
    DemographicOption.objects.create(field="gender", label="Two-spirit", position=9)
    client.force_login(consumer)
    _consent(client)

    html = client.get(ONBOARDING).content.decode()

    assert html.count("<fieldset") == 3
    assert [legend.split(" <")[0] for legend in re.findall(r"<legend>(.*?)</legend>", html)] == [
        "Your age group",
        "Your gender",
        "Your race or ethnicity",
    ]
    assert html.count(f">{PREFER_NOT_TO_SAY}</label>") == 3
    assert ">Two-spirit</label>" in html
    assert 'type="checkbox" name="race_ethnicity"' in html
    assert 'type="radio" name="gender"' in html
    for input_id in re.findall(r'<input type="(?:radio|checkbox)"[^>]* id="([^"]+)"', html):
        assert f'<label for="{input_id}">' in html


def test_prefer_not_to_say_alone_is_accepted(client, consumer):
    client.force_login(consumer)
    _consent(client)

    response = client.post(
        ONBOARDING,
        {"step": "demographics", "age_group": PREFER_NOT_TO_SAY, "gender": PREFER_NOT_TO_SAY,
         "race_ethnicity": [PREFER_NOT_TO_SAY]},
    )  # fmt: skip

    assert response["Location"] == QUEUE
    background = consumer.rater_profile.background
    assert (background.age_group, background.gender, background.race_ethnicity) == (
        PREFER_NOT_TO_SAY,
        PREFER_NOT_TO_SAY,
        [PREFER_NOT_TO_SAY],
    )


def test_prefer_not_to_say_cannot_be_combined_with_other_answers(client, consumer):
    client.force_login(consumer)
    _consent(client)

    response = client.post(ONBOARDING, {**DEMOGRAPHICS, "race_ethnicity": ["Asian", PREFER_NOT_TO_SAY]})

    assert response.status_code == 200
    html = response.content.decode()
    assert '<div class="error" id="id_race_ethnicity_error" role="alert">' in html
    assert "“Prefer not to say” cannot be combined with other answers" in html
    assert 'aria-describedby="id_race_ethnicity_helptext id_race_ethnicity_error"' in html
    assert not RaterBackground.objects.exists()


def test_an_unknown_or_missing_demographic_answer_is_refused(client, consumer):
    client.force_login(consumer)
    _consent(client)

    response = client.post(ONBOARDING, {"step": "demographics", "age_group": "Teenager"})

    assert response.status_code == 200
    assert b"Select a valid choice." in response.content
    assert "Choose your gender, or “Prefer not to say”." in response.content.decode()
    assert not RaterBackground.objects.exists()


def test_an_expert_skips_consent_and_their_background_is_stored(client, physician):
    client.force_login(physician)

    page = client.get(ONBOARDING)
    response = client.post(ONBOARDING, BACKGROUND)

    assert b'name="agree"' not in page.content
    assert b'<label for="id_specialty">Specialty</label>' in page.content
    assert response.status_code == 302
    assert response["Location"] == QUEUE
    background = RaterBackground.objects.get(profile=physician.rater_profile)
    assert (background.years_in_practice, background.specialty, background.country) == (12, "Family medicine", "Kenya")
    assert background.qualifications == "MBChB; MPH"
    assert background.race_ethnicity == []
    physician.rater_profile.refresh_from_db()
    assert physician.rater_profile.onboarded_at is not None
    assert physician.rater_profile.consented_at is None


def test_raters_of_a_custom_pool_answer_the_expert_survey(client):
    RaterPool.objects.create(name="Nurse", slug="nurse")
    nurse = RaterFactory(pool="nurse")
    client.force_login(nurse)

    response = client.post(ONBOARDING, {**BACKGROUND, "specialty": "Midwifery"})

    assert response["Location"] == QUEUE
    assert nurse.rater_profile.background.specialty == "Midwifery"


def test_an_incomplete_expert_background_is_refused_per_field(client, physician):
    client.force_login(physician)

    response = client.post(ONBOARDING, {**BACKGROUND, "years_in_practice": "-1", "country": ""})

    assert response.status_code == 200
    html = response.content.decode()
    assert '<div class="error" id="id_years_in_practice_error" role="alert">' in html
    assert '<div class="error" id="id_country_error" role="alert">' in html
    assert "id_specialty_error" not in html
    assert not RaterBackground.objects.exists()


def test_an_onboarded_rater_goes_straight_to_the_queue(client, physician):
    client.force_login(physician)
    client.post(ONBOARDING, BACKGROUND)

    response = client.get(ONBOARDING)

    assert response.status_code == 302
    assert response["Location"] == QUEUE
