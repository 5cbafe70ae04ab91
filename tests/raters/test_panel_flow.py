"""Crowd-panel consumers: link → pseudonymous account → consent → demographics → k drawn items → completion code."""

from urllib.parse import urlencode

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse
from django.utils import timezone

from raters.models import RaterPool, RaterProfile
from studies.models import Assignment
from studies.services import submit_rating
from tests.factories import IndependentItemFactory, RaterFactory, StudyFactory, StudyPoolFactory

pytestmark = pytest.mark.django_db

PID = "5f1a2b3c4d5e6f7a8b9c0d1e"
QUEUE = "/rate/"
DEMOGRAPHICS = {"step": "demographics", "age_group": "45-54", "gender": "Man", "race_ethnicity": ["Asian"]}


@pytest.fixture
def study(db):
    study = StudyFactory(
        consent_text="This study asks you to rate answers.", panel_return_url="https://panel.example/done"
    )
    StudyPoolFactory(study=study, items_per_rater=3)
    IndependentItemFactory.create_batch(5, study=study)
    return study


def _panel_url(study, pid=PID, **extra):
    query = {"PROLIFIC_PID": pid, "STUDY_ID": "study42", "SESSION_ID": "session7", **extra} if pid else extra
    return reverse("raters:panel_start", args=[study.pk]) + ("?" + urlencode(query) if query else "")


def _arrive_and_onboard(client, study, pid=PID):
    client.get(_panel_url(study, pid))
    client.post(reverse("raters:onboarding"), {"step": "consent", "agree": "on"})
    return client.post(reverse("raters:onboarding"), DEMOGRAPHICS)


def _participant(pid=PID) -> RaterProfile:
    return RaterProfile.objects.select_related("user").get(panel_participant_id=pid)


def test_panel_urls():
    assert reverse("raters:panel_start", args=[7]) == "/panel/7/"
    assert reverse("raters:panel_done", args=[7]) == "/panel/7/done/"


def test_a_panel_link_creates_a_pseudonymous_signed_in_consumer_with_the_panel_ids(client, study):
    response = client.get(_panel_url(study))

    assert response.status_code == 302
    assert response["Location"] == reverse("raters:onboarding")
    profile = _participant()
    assert profile.pool.slug == "consumer"
    assert (profile.panel_study_id, profile.panel_session_id) == ("study42", "session7")
    assert PID not in profile.user.username
    assert PID not in profile.pseudonym
    assert not profile.user.has_usable_password()
    assert int(client.session["_auth_user_id"]) == profile.user.pk


def test_a_panel_participant_consents_to_the_study_text(client, study):
    client.get(_panel_url(study))
    response = client.get(reverse("raters:onboarding"))
    assert b"This study asks you to rate answers." in response.content
    assert b'name="agree"' in response.content


def test_after_demographics_a_participant_draws_the_pool_share_of_items(client, study):
    response = _arrive_and_onboard(client, study)

    assert response.status_code == 302
    assert response["Location"] == QUEUE
    profile = _participant()
    assert profile.background.race_ethnicity == ["Asian"]
    assignments = Assignment.objects.filter(rater=profile)
    assert assignments.count() == 3
    assert {a.item.study_id for a in assignments} == {study.pk}


def test_without_items_per_rater_a_participant_draws_ten(client):
    study = StudyFactory()
    StudyPoolFactory(study=study, items_per_rater=None)
    IndependentItemFactory.create_batch(12, study=study)

    _arrive_and_onboard(client, study)

    assert Assignment.objects.filter(rater=_participant()).count() == 10


def test_a_returning_participant_is_the_same_rater_and_gets_no_more_items(client, study):
    _arrive_and_onboard(client, study)
    held = set(Assignment.objects.filter(rater=_participant()).values_list("pk", flat=True))
    client.logout()

    response = client.get(_panel_url(study))

    assert response.status_code == 302
    assert response["Location"] == QUEUE
    assert RaterProfile.objects.filter(panel_participant_id=PID).count() == 1
    assert set(Assignment.objects.filter(rater=_participant()).values_list("pk", flat=True)) == held


def test_a_participant_returning_mid_onboarding_resumes_at_the_demographics(client, study):
    client.get(_panel_url(study))
    client.post(reverse("raters:onboarding"), {"step": "consent", "agree": "on"})
    client.logout()

    client.get(_panel_url(study))
    survey = client.get(reverse("raters:onboarding"))

    assert b'name="age_group"' in survey.content
    assert b'name="agree"' not in survey.content
    assert not Assignment.objects.exists()


def test_the_same_participant_id_in_another_study_is_another_rater(client, study):
    other = StudyFactory()
    StudyPoolFactory(study=other)
    IndependentItemFactory(study=other)

    client.get(_panel_url(study))
    client.get(_panel_url(other))

    profiles = RaterProfile.objects.filter(panel_participant_id=PID)
    assert profiles.count() == 2
    assert len({profile.user.username for profile in profiles}) == 2


def test_a_link_without_a_valid_participant_id_gets_an_error_page(client, study):
    missing = client.get(_panel_url(study, pid=None))
    malformed = client.get(_panel_url(study, pid="<script>"))

    assert missing.status_code == 400
    assert b"Participant id missing" in missing.content
    assert malformed.status_code == 400
    assert not RaterProfile.objects.filter(pool__slug="consumer").exists()
    assert "_auth_user_id" not in client.session


def test_an_unknown_study_is_not_found(client):
    response = client.get(reverse("raters:panel_start", args=[999999]) + "?PROLIFIC_PID=" + PID)
    assert response.status_code == 404


def test_a_locked_study_gets_a_closed_message(client, study):
    study.locked_at = timezone.now()
    study.save()

    response = client.get(_panel_url(study))

    assert response.status_code == 410
    assert b"This study has closed" in response.content
    assert not RaterProfile.objects.filter(panel_participant_id=PID).exists()


def test_a_study_without_a_consumer_pool_gets_a_message(client):
    study = StudyFactory()
    StudyPoolFactory(study=study, pool=RaterPool.objects.get(slug="physician"))
    IndependentItemFactory(study=study)

    response = client.get(_panel_url(study))

    assert response.status_code == 404
    assert b"not open to panel participants" in response.content
    assert not RaterProfile.objects.filter(panel_participant_id=PID).exists()


def test_the_panel_link_refuses_post(client, study):
    assert client.post(_panel_url(study)).status_code == 405


def test_done_with_items_left_returns_to_the_queue_saying_how_many(client, study):
    _arrive_and_onboard(client, study)
    first = Assignment.objects.filter(rater=_participant()).order_by("position").first()
    submit_rating(assignment=first, values={"bias_presence": "no_bias"}, active_seconds=1)

    response = client.get(reverse("raters:panel_done", args=[study.pk]), follow=False)

    assert response.status_code == 302
    assert response["Location"] == QUEUE
    assert [str(m) for m in get_messages(response.wsgi_request)] == ["2 items left to rate before you finish."]
    assert _participant().completed_at is None


def test_done_shows_the_code_once_every_item_is_submitted_and_records_completion_once(client, study):
    _arrive_and_onboard(client, study)
    profile = _participant()
    for assignment in Assignment.objects.filter(rater=profile):
        submit_rating(assignment=assignment, values={"bias_presence": "no_bias"}, active_seconds=1)

    response = client.get(reverse("raters:panel_done", args=[study.pk]))
    completed_at = _participant().completed_at
    client.get(reverse("raters:panel_done", args=[study.pk]))

    assert response.status_code == 200
    html = response.content.decode()
    assert study.completion_code in html
    assert f'href="https://panel.example/done?cc={study.completion_code}"' in html
    assert completed_at is not None
    assert _participant().completed_at == completed_at


def test_a_return_url_with_a_query_is_used_as_it_is(client, study):
    study.panel_return_url = "https://app.prolific.com/submissions/complete?cc=ABC123"
    study.save()
    _arrive_and_onboard(client, study)
    for assignment in Assignment.objects.filter(rater=_participant()):
        submit_rating(assignment=assignment, values={"bias_presence": "no_bias"}, active_seconds=1)

    response = client.get(reverse("raters:panel_done", args=[study.pk]))

    assert b'href="https://app.prolific.com/submissions/complete?cc=ABC123"' in response.content


def test_withdrawn_items_do_not_hold_back_completion(client, study):
    _arrive_and_onboard(client, study)
    first, *rest = Assignment.objects.filter(rater=_participant()).order_by("position")
    Assignment.objects.filter(pk=first.pk).update(status=Assignment.Status.WITHDRAWN)
    for assignment in rest:
        submit_rating(assignment=assignment, values={"bias_presence": "no_bias"}, active_seconds=1)

    response = client.get(reverse("raters:panel_done", args=[study.pk]))

    assert response.status_code == 200
    assert study.completion_code.encode() in response.content


def test_done_for_a_study_closed_before_the_participant_finished_says_so(client, study):
    _arrive_and_onboard(client, study)
    study.locked_at = timezone.now()
    study.save()

    response = client.get(reverse("raters:panel_done", args=[study.pk]))

    assert response.status_code == 410
    assert study.completion_code.encode() not in response.content


def test_done_requires_login_and_refuses_post(client, study):
    url = reverse("raters:panel_done", args=[study.pk])
    assert client.get(url)["Location"].startswith(reverse("login"))
    _arrive_and_onboard(client, study)
    assert client.post(url).status_code == 405


def test_done_is_forbidden_to_raters_without_items_in_the_study_and_to_non_raters(client, study, coordinator):
    url = reverse("raters:panel_done", args=[study.pk])
    client.force_login(RaterFactory(pool="consumer"))
    outsider = client.get(url)
    client.force_login(coordinator)
    staff = client.get(url)

    assert outsider.status_code == 403
    assert staff.status_code == 403
    assert client.get(reverse("raters:panel_done", args=[999999])).status_code == 404
