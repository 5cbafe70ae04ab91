"""What raters send that is never stored: text the database cannot hold, oversized drafts and comments,
and time on task that is not a number (issue 10, findings 8 and 11). Each is refused with a message."""

import pytest
from django.urls import reverse

from studies.models import Rating
from studies.services import MAX_VIEW_SECONDS, active_seconds_for_view, sign_shown_at
from tests.factories import AssignmentFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def assignment(client):
    assignment = AssignmentFactory()
    client.force_login(assignment.rater.user)
    return assignment


def post_draft(client, assignment, data):
    return client.post(reverse("studies:draft", args=[assignment.pk]), data)


def test_a_draft_comment_with_a_nul_character_is_refused_with_a_message_and_the_old_draft_kept(client, assignment):
    assert post_draft(client, assignment, {"bias_presence": "minor_bias"}).status_code == 204

    response = post_draft(client, assignment, {"bias_presence": "no_bias", "comment": "before\x00after"})

    assert response.status_code == 400
    assert "Null characters are not allowed" in response.content.decode()
    assignment.refresh_from_db()
    assert assignment.draft == {"bias_presence": "minor_bias"}


def test_a_9_mb_draft_is_refused_and_not_stored(client, assignment):
    response = post_draft(client, assignment, {"bias_presence": "no_bias", "comment": "x" * (9 * 1024 * 1024)})

    assert response.status_code == 400
    assert "at most 5000 characters" in response.content.decode()
    assignment.refresh_from_db()
    assert assignment.draft == {}


def test_the_draft_text_cap_is_a_setting(client, assignment, settings):
    settings.RATING_TEXT_MAX_CHARS = 10

    assert post_draft(client, assignment, {"comment": "x" * 10}).status_code == 204
    response = post_draft(client, assignment, {"comment": "x" * 11})

    assert response.status_code == 400
    assert "at most 10 characters" in response.content.decode()


def test_a_draft_larger_than_the_payload_cap_is_refused_with_413(client, assignment, settings):
    settings.RATING_DRAFT_MAX_BYTES = 100

    response = post_draft(client, assignment, {"comment": "é" * 60})  # 120 bytes of UTF-8

    assert response.status_code == 413
    assert "more than the 100 allowed" in response.content.decode()
    assignment.refresh_from_db()
    assert assignment.draft == {}


def test_a_draft_with_an_option_the_form_does_not_offer_is_refused(client, assignment):
    response = post_draft(client, assignment, {"bias_presence": "made_up", "dimensions": ["not_a_dimension"]})

    assert response.status_code == 400
    assert "Choose one of the answers shown" in response.content.decode()
    assignment.refresh_from_db()
    assert assignment.draft == {}


def test_a_comment_over_the_cap_is_a_form_error_on_the_rating_page(client, assignment, settings):
    settings.RATING_TEXT_MAX_CHARS = 20
    url = reverse("studies:rate", args=[assignment.pk])

    response = client.post(url, {"bias_presence": "no_bias", "comment": "y" * 21})

    assert response.status_code == 400
    assert response.context["form"].errors["comment"] == ["Ensure this value has at most 20 characters (it has 21)."]
    assert not Rating.objects.exists()


@pytest.mark.parametrize("reported", ["nan", "NaN", "inf", "-inf", "1e999"])
def test_time_on_task_that_is_not_a_finite_number_is_never_stored(client, assignment, reported):
    url = reverse("studies:rate", args=[assignment.pk])

    response = client.post(url, {"bias_presence": "no_bias", "shown_at": sign_shown_at(), "active_seconds": reported})

    assert response.status_code == 302
    rating = Rating.objects.get()
    assert 0 <= rating.active_seconds <= 5  # the view's own duration, not the posted figure


@pytest.mark.parametrize("reported", ["nan", "inf", "-inf"])
def test_active_seconds_for_view_falls_back_to_the_measured_view_for_non_finite_figures(reported):
    assert active_seconds_for_view(shown_at_token="", reported_active=reported) == 0.0
    measured = active_seconds_for_view(shown_at_token=sign_shown_at(), reported_active=reported)
    assert 0 <= measured <= MAX_VIEW_SECONDS
