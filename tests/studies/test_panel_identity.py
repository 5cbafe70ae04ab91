"""What a panel link proves: a participant id alone opens only an account that holds nothing yet.

A returning participant is recognised by the session their browser got at first arrival, or by a resume
link the study team signed for that study and participant id.
"""

import time
from io import StringIO
from urllib.parse import parse_qs, urlsplit

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse
from django.utils.html import escape

from raters.models import RaterProfile
from studies import panel
from studies.models import Assignment, Rating
from studies.services import submit_rating
from tests.factories import AnalystFactory, IndependentItemFactory, RaterFactory, StudyFactory, StudyPoolFactory

pytestmark = pytest.mark.django_db

PID = "5f1a2b3c4d5e6f7a8b9c0d1e"
DEMOGRAPHICS = {"step": "demographics", "age_group": "45-54", "gender": "Man", "race_ethnicity": ["Asian"]}
IN_USE = b"This participant id has already started in another browser"


@pytest.fixture
def study(db):
    study = StudyFactory(consent_text="This study asks you to rate answers.")
    StudyPoolFactory(study=study, items_per_rater=2)
    IndependentItemFactory.create_batch(4, study=study)
    return study


def _panel_url(study, pid=PID, **extra) -> str:
    query = "&".join(f"{key}={value}" for key, value in {"PROLIFIC_PID": pid, **extra}.items())
    return reverse("raters:panel_start", args=[study.pk]) + "?" + query


def _participant(pid=PID) -> RaterProfile:
    return RaterProfile.objects.select_related("user").get(panel_participant_id=pid)


def _signed_in_user_id(client) -> int | None:
    value = client.session.get("_auth_user_id")
    return int(value) if value is not None else None


def _start(client, study, *, until: str):
    """A participant's own browser, taken as far as `until`: arrived, consent, onboarded, rated."""
    client.get(_panel_url(study))
    if until == "arrived":
        return
    client.post(reverse("raters:onboarding"), {"step": "consent", "agree": "on"})
    if until == "consent":
        return
    client.post(reverse("raters:onboarding"), DEMOGRAPHICS)
    first = Assignment.objects.filter(rater=_participant()).order_by("position").first()
    if until == "draft":
        Assignment.objects.filter(pk=first.pk).update(draft={"comment": "my private note"})
    elif until == "rated":
        submit_rating(assignment=first, values={"bias_presence": "no_bias"}, active_seconds=1)


@pytest.mark.parametrize("until", ["consent", "onboarded", "draft", "rated"])
def test_a_bare_participant_id_does_not_open_an_account_that_holds_anything(client, study, until):
    _start(client, study, until=until)
    ratings_before = Rating.objects.count()
    other_browser = Client()

    response = other_browser.get(_panel_url(study))

    assert response.status_code == 403
    assert IN_USE in response.content
    assert b"ask the study team for a resume link" in response.content
    assert _signed_in_user_id(other_browser) is None
    assert other_browser.get(reverse("studies:queue"))["Location"].startswith(reverse("login"))
    assert _signed_in_user_id(client) == _participant().user_id  # the participant's own browser is untouched
    assert client.get(reverse("studies:queue")).status_code in (200, 302)
    assert Rating.objects.count() == ratings_before


def test_the_participants_own_browser_keeps_its_account(client, study):
    _start(client, study, until="rated")

    response = client.get(_panel_url(study))

    assert response.status_code == 302
    assert _signed_in_user_id(client) == _participant().user_id


def test_a_bare_id_of_an_account_that_holds_nothing_opens_it_and_signs_the_earlier_browser_out(client, study):
    _start(client, study, until="arrived")  # someone who guessed the id first, say
    real_participant = Client()

    response = real_participant.get(_panel_url(study))

    assert response.status_code == 302
    assert _signed_in_user_id(real_participant) == _participant().user_id
    assert client.get(reverse("raters:onboarding"))["Location"].startswith(reverse("login"))
    assert RaterProfile.objects.filter(panel_participant_id=PID).count() == 1


def test_a_resume_link_opens_the_account_in_another_browser_and_signs_the_first_out(client, study):
    _start(client, study, until="rated")
    new_browser = Client()
    link = panel.panel_resume_path(study=study, participant_id=PID)

    response = new_browser.get(link)

    assert response.status_code == 302
    assert _signed_in_user_id(new_browser) == _participant().user_id
    assert new_browser.get(reverse("studies:queue")).status_code == 200
    assert client.get(reverse("studies:queue"))["Location"].startswith(reverse("login"))


def test_resume_links_for_another_id_or_study_tampered_or_expired_are_refused(client, study, monkeypatch):
    _start(client, study, until="rated")
    other_study = StudyFactory()
    StudyPoolFactory(study=other_study)
    token = panel.panel_resume_token(study=study, participant_id=PID)
    with monkeypatch.context() as patched:
        eight_days_ago = time.time() - 8 * 24 * 3600
        patched.setattr(time, "time", lambda: eight_days_ago)
        expired = panel.panel_resume_token(study=study, participant_id=PID)
    tokens = [
        panel.panel_resume_token(study=study, participant_id="someone-else"),
        panel.panel_resume_token(study=other_study, participant_id=PID),
        token[:-2] + ("AA" if not token.endswith("AA") else "BB"),
        expired,
        "not-a-token",
    ]

    for bad in tokens:
        attacker = Client()
        response = attacker.get(_panel_url(study, resume=bad))
        assert response.status_code == 403, bad
        assert _signed_in_user_id(attacker) is None
    assert panel.resume_token_valid(token=token, study=study, participant_id=PID)


def test_a_signed_in_non_participant_is_asked_to_log_out_before_following_a_panel_link(client, study, coordinator):
    client.force_login(coordinator)

    response = client.get(_panel_url(study))

    assert response.status_code == 409
    assert f"You are signed in as {coordinator.username}".encode() in response.content
    assert _signed_in_user_id(client) == coordinator.pk
    assert not RaterProfile.objects.filter(panel_participant_id=PID).exists()


def test_a_participant_signed_in_for_another_id_needs_proof_for_a_started_one(client, study):
    _start(client, study, until="consent")
    elsewhere = Client()
    elsewhere.get(_panel_url(study, pid="another-participant"))

    refused = elsewhere.get(_panel_url(study))
    new_id = elsewhere.get(_panel_url(study, pid="a-third-participant"))

    assert refused.status_code == 403
    assert new_id.status_code == 302
    assert _signed_in_user_id(elsewhere) == _participant("a-third-participant").user_id


# --- The study team's resume links -----------------------------------------------------------------


def test_a_coordinator_makes_a_resume_link_on_the_participants_page(client, study, coordinator):
    participant_browser = Client()
    _start(participant_browser, study, until="rated")
    profile = _participant()
    page = reverse("coordination:rater", args=[study.pk, profile.pk])
    client.force_login(coordinator)

    before = client.get(page)
    response = client.post(reverse("coordination:resume_link", args=[study.pk, profile.pk]))

    assert b"Make a resume link" in before.content
    assert response.status_code == 200
    link = response.context["resume_link"]
    assert link.startswith("http://testserver/panel/")
    assert escape(link) in response.content.decode()
    new_browser = Client()
    parts = urlsplit(link)
    assert new_browser.get(parts.path + "?" + parts.query).status_code == 302
    assert _signed_in_user_id(new_browser) == profile.user_id
    assert parse_qs(parts.query)["PROLIFIC_PID"] == [PID]


def test_only_coordinators_make_resume_links_and_only_for_the_studys_panel_participants(client, study, coordinator):
    _start(Client(), study, until="rated")
    profile = _participant()
    url = reverse("coordination:resume_link", args=[study.pk, profile.pk])
    invited = RaterFactory(pool="consumer").rater_profile
    Assignment.objects.create(item=study.items.first(), rater=invited)

    client.force_login(AnalystFactory())
    assert client.post(url).status_code == 403
    assert b"Make a resume link" not in client.get(reverse("coordination:rater", args=[study.pk, profile.pk])).content
    client.force_login(profile.user)
    assert client.post(url).status_code == 403
    client.force_login(coordinator)
    assert client.get(url).status_code == 405
    not_panel = client.post(reverse("coordination:resume_link", args=[study.pk, invited.pk]))
    assert not_panel.status_code == 302
    assert "resume_link" not in (not_panel.context or {})


def test_the_resume_link_command_prints_a_working_link(client, study):
    _start(Client(), study, until="rated")
    out = StringIO()

    call_command("panel_resume_link", str(study.pk), PID, "--base-url", "https://rate.example.org/", stdout=out)

    link = out.getvalue().strip()
    assert link.startswith(f"https://rate.example.org/panel/{study.pk}/?PROLIFIC_PID={PID}&resume=")
    assert client.get(link.removeprefix("https://rate.example.org")).status_code == 302
    assert _signed_in_user_id(client) == _participant().user_id
    with pytest.raises(CommandError, match="no study"):
        call_command("panel_resume_link", "999999", PID)
    with pytest.raises(CommandError, match="not a panel participant id"):
        call_command("panel_resume_link", str(study.pk), "<script>")
