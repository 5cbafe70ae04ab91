"""Crowd-panel consumers: link → pseudonymous account → consent → demographics → k drawn items → completion code."""

from datetime import timedelta
from urllib.parse import urlencode

import pytest
from django.contrib.messages import get_messages
from django.db.models import F
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from raters.models import RaterPool, RaterProfile
from studies.assignment import expire_stale_claims
from studies.models import Assignment, Rating
from studies.services import submit_rating
from tests.factories import IndependentItemFactory, OnboardedRaterFactory, RaterFactory, StudyFactory, StudyPoolFactory

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


def _first_item(pid=PID) -> str:
    """Where the flow sends a participant with items to rate: straight to their first unrated item."""
    pending = Assignment.objects.active().filter(rater__panel_participant_id=pid)
    pending = pending.exclude(status=Assignment.Status.SUBMITTED)
    first = pending.order_by("position", "id").first()
    return reverse("studies:rate", args=[first.pk]) if first else "(no item)"


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
    assert response["Location"] == _first_item()  # straight to the first item, not via the queue
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

    response = client.get(_panel_url(study))  # the same browser, still signed in

    assert response.status_code == 302
    assert response["Location"] == _first_item()
    assert RaterProfile.objects.filter(panel_participant_id=PID).count() == 1
    assert set(Assignment.objects.filter(rater=_participant()).values_list("pk", flat=True)) == held


def test_a_participant_returning_mid_onboarding_resumes_at_the_demographics(client, study):
    client.get(_panel_url(study))
    client.post(reverse("raters:onboarding"), {"step": "consent", "agree": "on"})

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


# --- Capacity: items drawn after onboarding, short claims before starting, arrival limit, "study full" -------


FULL = b"This study is full at the moment"


def _age_claims(*, minutes: int, **filters) -> None:
    """Move claims back in time, as if made `minutes` ago."""
    Assignment.objects.filter(**filters).update(
        assigned_at=F("assigned_at") - timedelta(minutes=minutes),
        expires_at=F("expires_at") - timedelta(minutes=minutes),
    )


def _held(pid) -> int:
    return Assignment.objects.for_rater(_participant(pid)).count()


def test_items_are_drawn_only_after_consent_and_demographics(client, study):
    client.get(_panel_url(study))
    client.post(reverse("raters:onboarding"), {"step": "consent", "agree": "on"})
    assert not Assignment.objects.exists()

    client.post(reverse("raters:onboarding"), DEMOGRAPHICS)

    assert _held(PID) == 3


def test_made_up_participants_cannot_hold_a_small_study_and_the_next_gets_items_or_an_honest_full_page():
    study = StudyFactory()  # the defaults: claims last 24 h, 20 minutes before a participant starts
    StudyPoolFactory(study=study, items_per_rater=2, replication=2)
    IndependentItemFactory.create_batch(4, study=study)  # 8 slots: 4 participants of 2 items fill it
    browsers = {f"madeup-{n}": Client() for n in range(7)}
    outcomes = {pid: _arrive_and_onboard(browser, study, pid) for pid, browser in browsers.items()}

    filled = [pid for pid, response in outcomes.items() if response.get("Location") == _first_item(pid)]
    assert filled == [f"madeup-{n}" for n in range(4)]
    assert [_held(pid) for pid in filled] == [2, 2, 2, 2]
    for pid in ["madeup-4", "madeup-5", "madeup-6"]:
        page = browsers[pid].get(_panel_url(study, pid))
        assert page.status_code == 409
        assert FULL in page.content and study.completion_code.encode() not in page.content
        assert page["Retry-After"]
        assert not RaterProfile.objects.filter(panel_participant_id=pid).exists()  # nothing kept of them
    # One of them starts rating; the others leave without opening an item.
    started = Assignment.objects.filter(rater=_participant("madeup-0")).order_by("position").first()
    assert browsers["madeup-0"].get(reverse("studies:rate", args=[started.pk])).status_code == 200

    _age_claims(minutes=19)
    assert Client().get(_panel_url(study, "too-early")).status_code == 409
    _age_claims(minutes=2)  # 21 minutes: past the unstarted-claim timeout, far from the claim timeout
    newcomer = Client()
    assert _arrive_and_onboard(newcomer, study, "newcomer")["Location"] == _first_item("newcomer")

    assert _held("newcomer") == 2
    assert _held("madeup-0") == 2  # started: their claims last the claim timeout
    assert [_held(f"madeup-{n}") for n in (1, 2, 3)] == [0, 0, 0]
    expired = Assignment.objects.filter(rater__panel_participant_id="madeup-1")
    assert {(a.status, a.expired_at is not None) for a in expired} == {(Assignment.Status.WITHDRAWN, True)}
    assert Assignment.objects.filter(expired_at__isnull=False).count() == 6

    _age_claims(minutes=24 * 60, rater__panel_participant_id="madeup-0")
    assert _arrive_and_onboard(Client(), study, "later")["Location"] == _first_item("later")
    assert _held("madeup-0") == 0


def test_the_unstarted_claim_timeout_is_the_studys(client):
    study = StudyFactory(unstarted_claim_timeout_minutes=60)
    StudyPoolFactory(study=study, items_per_rater=2)
    IndependentItemFactory.create_batch(2, study=study)
    _arrive_and_onboard(client, study)

    _age_claims(minutes=45)
    assert Client().get(_panel_url(study, "second")).status_code == 409
    _age_claims(minutes=16)
    assert Client().get(_panel_url(study, "third")).status_code == 302
    assert _held(PID) == 0


def test_new_arrivals_per_study_are_rate_limited(client, study, settings):
    settings.PANEL_ARRIVALS_PER_MINUTE = 2
    other = StudyFactory()
    StudyPoolFactory(study=other)
    IndependentItemFactory(study=other)

    first, second, third = (Client().get(_panel_url(study, f"arrival-{n}")) for n in range(3))

    assert [first.status_code, second.status_code, third.status_code] == [302, 302, 429]
    assert third["Retry-After"] == "60"
    assert b"Please wait a minute" in third.content
    assert not RaterProfile.objects.filter(panel_participant_id="arrival-2").exists()
    assert Client().get(_panel_url(other, "arrival-2")).status_code == 302  # another study has its own count


def test_a_returning_participant_is_not_a_new_arrival(client, study, settings):
    settings.PANEL_ARRIVALS_PER_MINUTE = 1
    _arrive_and_onboard(client, study)

    again = client.get(_panel_url(study))
    newcomer = Client().get(_panel_url(study, "newcomer"))

    assert again.status_code == 302
    assert newcomer.status_code == 429


def test_a_participant_who_finds_the_study_full_after_the_survey_sees_so_and_keeps_their_account(client):
    study = StudyFactory()
    StudyPoolFactory(study=study, items_per_rater=2)
    IndependentItemFactory.create_batch(2, study=study)
    client.get(_panel_url(study))  # room when they arrive...
    client.post(reverse("raters:onboarding"), {"step": "consent", "agree": "on"})
    _arrive_and_onboard(Client(), study, "quicker")  # ...but someone quicker takes every item

    response = client.post(reverse("raters:onboarding"), DEMOGRAPHICS)

    assert response.status_code == 409
    assert FULL in response.content and study.completion_code.encode() not in response.content
    profile = _participant()
    assert profile.onboarded_at is not None and _held(PID) == 0
    queue = client.get(QUEUE, follow=True)  # never an empty queue
    assert queue.status_code == 409 and FULL in queue.content
    assert client.get(reverse("raters:panel_done", args=[study.pk])).status_code == 409
    assert _participant().completed_at is None

    _age_claims(minutes=21, rater__panel_participant_id="quicker")
    back = client.get(_panel_url(study))

    assert back["Location"] == _first_item()
    assert _held(PID) == 2


# --- The completion code needs the drawn items rated ----------------------------------------------------------


def test_a_participant_whose_claims_expired_gets_no_completion_code(client, study):
    _arrive_and_onboard(client, study)  # 3 of the 5 items
    expire_stale_claims(study=study, now=timezone.now() + timedelta(hours=25))
    _arrive_and_onboard(Client(), study, "second")  # takes the 3 freed slots...
    _arrive_and_onboard(Client(), study, "third")  # ...and the last 2

    response = client.get(reverse("raters:panel_done", args=[study.pk]))

    assert response.status_code == 409
    assert FULL in response.content
    assert study.completion_code.encode() not in response.content
    assert _participant().completed_at is None
    assert not Rating.objects.filter(assignment__rater=_participant()).exists()


def test_a_participant_coming_back_after_their_claims_expired_draws_new_items_and_can_finish(client, study):
    _arrive_and_onboard(client, study)
    first = set(Assignment.objects.filter(rater=_participant()).values_list("item_id", flat=True))
    rated = Assignment.objects.filter(rater=_participant()).order_by("position").first()
    submit_rating(assignment=rated, values={"bias_presence": "no_bias"}, active_seconds=1)
    expire_stale_claims(study=study, now=timezone.now() + timedelta(hours=25))  # the 2 unrated ones

    response = client.get(reverse("raters:panel_done", args=[study.pk]))

    assert response.status_code == 302 and response["Location"] == _first_item()
    replacements = Assignment.objects.for_rater(_participant()).exclude(status=Assignment.Status.SUBMITTED)
    assert replacements.count() == 2
    assert not first & set(replacements.values_list("item_id", flat=True))  # new items, never one they had
    for assignment in replacements:
        submit_rating(assignment=assignment, values={"bias_presence": "no_bias"}, active_seconds=1)
    done = client.get(reverse("raters:panel_done", args=[study.pk]))
    assert done.status_code == 200
    assert study.completion_code.encode() in done.content


def test_the_queue_sends_a_panel_participant_with_nothing_left_to_the_panel_page(client, study):
    _arrive_and_onboard(client, study)
    for assignment in Assignment.objects.filter(rater=_participant()):
        submit_rating(assignment=assignment, values={"bias_presence": "no_bias"}, active_seconds=1)

    response = client.get(QUEUE)

    assert response.status_code == 302
    assert response["Location"] == reverse("raters:panel_done", args=[study.pk])


def test_a_participant_is_offered_log_out_without_their_generated_username(client, study):
    _arrive_and_onboard(client, study)

    page = client.get(_first_item()).content.decode()

    assert ">Log out</button>" in page
    assert _participant().user.username not in page


def test_other_raters_still_see_whom_they_log_out(client):
    rater = OnboardedRaterFactory()
    client.force_login(rater)
    assert f">Log out {rater.username}</button>" in client.get(QUEUE).content.decode()


def test_without_a_return_url_the_completion_page_says_what_to_do_with_the_code(client, study):
    study.panel_return_url = ""
    study.save()
    _arrive_and_onboard(client, study)
    for assignment in Assignment.objects.for_rater(_participant()):
        submit_rating(assignment=assignment, values={"bias_presence": "no_bias"}, active_seconds=1)

    page = client.get(reverse("raters:panel_done", args=[study.pk])).content.decode()

    assert study.completion_code in page
    assert "Copy the code above and enter it on the panel's website, in the tab or window you came from" in page
    assert "Then you can close this tab: your ratings are saved." in page
