"""Joining by invitation: an account in the invitation's pool, uses counted atomically, unusable links refused."""

import threading
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db import IntegrityError, connection
from django.urls import reverse
from django.utils import timezone

from raters.models import Invitation, RaterPool, RaterProfile
from raters.services import InvitationUnavailable, accept_invitation
from raters.views import ONBOARDING_STUDY
from tests.factories import InvitationFactory, StudyFactory, UserFactory

pytestmark = pytest.mark.django_db

User = get_user_model()
NEW_PASSWORD = "correct-horse-battery-staple"


def _sign_up(client, invitation, username="dr_amaka", password=NEW_PASSWORD, password2=None):
    data = {"username": username, "password1": password, "password2": password2 or password}
    return client.post(reverse("raters:join", args=[invitation.token]), data)


def test_join_page_names_the_pool_and_asks_for_username_and_password(client):
    invitation = InvitationFactory()
    response = client.get(reverse("raters:join", args=[invitation.token]))
    assert response.status_code == 200
    assert b"Physician" in response.content
    assert b'<label for="id_username">' in response.content
    assert b'<label for="id_password1">' in response.content


def test_signing_up_creates_a_rater_in_the_invitation_pool_logs_in_and_counts_a_use(client):
    invitation = InvitationFactory(pool=RaterPool.objects.get(slug="equity_expert"), max_uses=3)

    response = _sign_up(client, invitation)

    assert response.status_code == 302
    assert response["Location"] == reverse("raters:onboarding")
    user = User.objects.get(username="dr_amaka")
    assert user.check_password(NEW_PASSWORD)
    assert user.rater_profile.pool.slug == "equity_expert"
    assert user.rater_profile.pseudonym != "dr_amaka"
    assert int(client.session["_auth_user_id"]) == user.pk
    invitation.refresh_from_db()
    assert invitation.uses == 1


def test_an_invitation_to_a_study_shows_that_study_consent_text_at_onboarding(client):
    study = StudyFactory(consent_text="Ratings are kept for five years.")
    invitation = InvitationFactory(pool=RaterPool.objects.get(slug="consumer"), study=study)

    _sign_up(client, invitation)
    response = client.get(reverse("raters:onboarding"))

    assert client.session[ONBOARDING_STUDY] == study.pk
    assert b"Ratings are kept for five years." in response.content


def test_a_weak_or_mismatched_password_is_refused_and_no_use_is_counted(client):
    invitation = InvitationFactory()

    weak = _sign_up(client, invitation, password="12345678")
    mismatched = _sign_up(client, invitation, password2="something-else-entirely")

    assert weak.status_code == 200
    assert b"This password is too common." in weak.content
    assert b"didn\xe2\x80\x99t match" in mismatched.content
    assert b'role="alert"' in mismatched.content
    assert not User.objects.filter(username="dr_amaka").exists()
    invitation.refresh_from_db()
    assert invitation.uses == 0


def test_a_taken_or_reserved_username_is_refused(client):
    UserFactory(username="Dr_Amaka")
    invitation = InvitationFactory()

    taken = _sign_up(client, invitation, username="dr_amaka")
    reserved = _sign_up(client, invitation, username="panel-0123abcd")

    assert b"A user with that username already exists." in taken.content
    assert b"are reserved" in reserved.content
    assert not RaterProfile.objects.exists()


def test_an_unknown_token_is_not_found(client):
    assert client.get(reverse("raters:join", args=["no-such-token"])).status_code == 404
    assert _sign_up(client, Invitation(token="no-such-token")).status_code == 404


@pytest.mark.parametrize("path", ["/join/%00/", "/join/abc%00def/"])
def test_a_nul_in_the_join_link_is_400_with_a_message(client, path):
    response = client.get(path)

    assert response.status_code == 400
    assert b"NUL character" in response.content


@pytest.mark.parametrize("path", ["/join/a.b/", "/join/%F0%9F%98%80/", "/join/a%20b/"])
def test_a_join_link_whose_token_has_characters_no_token_has_is_404(client, path):
    InvitationFactory()
    assert client.get(path).status_code == 404


def test_an_expired_invitation_is_refused_with_a_message(client):
    invitation = InvitationFactory(expires_at=timezone.now() - timedelta(minutes=1))

    page = client.get(reverse("raters:join", args=[invitation.token]))
    sign_up = _sign_up(client, invitation)

    assert page.status_code == 410
    assert b"This invitation has expired." in page.content
    assert sign_up.status_code == 410
    assert not User.objects.filter(username="dr_amaka").exists()


def test_a_used_up_invitation_is_refused_with_a_message(client):
    invitation = InvitationFactory(max_uses=1, uses=1)

    response = _sign_up(client, invitation)

    assert response.status_code == 410
    assert b"already been used" in response.content
    assert not User.objects.filter(username="dr_amaka").exists()


def test_a_signed_in_user_is_told_to_log_out_and_no_account_is_made(client, physician):
    invitation = InvitationFactory()
    client.force_login(physician)

    page = client.get(reverse("raters:join", args=[invitation.token]))
    sign_up = _sign_up(client, invitation)

    assert b"Log out first" in page.content
    assert b"Log out first" in sign_up.content
    assert not User.objects.filter(username="dr_amaka").exists()
    invitation.refresh_from_db()
    assert invitation.uses == 0


def test_join_refuses_other_methods(client):
    invitation = InvitationFactory()
    assert client.put(reverse("raters:join", args=[invitation.token])).status_code == 405


def test_the_conditional_update_never_counts_more_uses_than_allowed():
    invitation = InvitationFactory(max_uses=2)
    stale_copy = Invitation.objects.get(pk=invitation.pk)

    accept_invitation(invitation=invitation, username="first", password=NEW_PASSWORD)
    accept_invitation(invitation=invitation, username="second", password=NEW_PASSWORD)
    with pytest.raises(InvitationUnavailable):
        accept_invitation(invitation=stale_copy, username="third", password=NEW_PASSWORD)

    invitation.refresh_from_db()
    assert invitation.uses == 2
    assert not User.objects.filter(username="third").exists()


def test_an_invitation_past_its_expiry_cannot_be_claimed_even_by_a_stale_copy():
    invitation = InvitationFactory(max_uses=5)
    Invitation.objects.filter(pk=invitation.pk).update(expires_at=timezone.now() - timedelta(seconds=1))

    with pytest.raises(InvitationUnavailable):
        accept_invitation(invitation=invitation, username="late", password=NEW_PASSWORD)

    assert Invitation.objects.get(pk=invitation.pk).uses == 0


def test_a_failed_account_creation_gives_the_use_back():
    UserFactory(username="taken")
    invitation = InvitationFactory()

    with pytest.raises(IntegrityError):
        accept_invitation(invitation=invitation, username="taken", password=NEW_PASSWORD)

    invitation.refresh_from_db()
    assert invitation.uses == 0


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_sign_ups_cannot_exceed_max_uses():
    # Its own pool: a transactional test may start on a flushed database, without the built-in pools.
    pool = RaterPool.objects.create(name="Concurrency check", slug="concurrency-check")
    invitation = Invitation.objects.create(pool=pool, max_uses=1)
    start = threading.Barrier(2)
    outcomes = []

    def sign_up(username):
        try:
            start.wait(timeout=10)
            accept_invitation(invitation=invitation, username=username, password=NEW_PASSWORD)
            outcomes.append("accepted")
        except InvitationUnavailable:
            outcomes.append("refused")
        finally:
            connection.close()

    threads = [threading.Thread(target=sign_up, args=(name,)) for name in ("racer_a", "racer_b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert sorted(outcomes) == ["accepted", "refused"]
    assert Invitation.objects.get(pk=invitation.pk).uses == 1
    assert RaterProfile.objects.filter(pool=pool).count() == 1
