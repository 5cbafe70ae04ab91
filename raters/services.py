"""Rater workflows: joining by invitation and onboarding (consent, survey). Arriving from a crowd panel, drawing a
study's items and finishing are the study's part: `studies/panel.py`."""

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from .models import Invitation, RaterBackground, RaterProfile

CONSUMER = "consumer"
# Usernames of panel participants (studies/panel.py); people joining by invitation cannot choose one like this.
PANEL_USERNAME_PREFIX = "panel-"


class InvitationUnavailable(Exception):
    """The invitation has expired or has no uses left."""


def invitation_problem(invitation: Invitation) -> str | None:
    """Why an invitation cannot be used now, in words for the person holding it; None when it can."""
    if invitation.expires_at is not None and invitation.expires_at <= timezone.now():
        return "This invitation has expired."
    if invitation.uses >= invitation.max_uses:
        return "This invitation has already been used as many times as it allows."
    return None


def accept_invitation(*, invitation: Invitation, username: str, password: str) -> RaterProfile:
    """Create an account in the invitation's pool and count one use of the invitation.

    The use is claimed with a conditional UPDATE, so concurrent sign-ups can never exceed max_uses
    (PostgreSQL re-checks the condition on the row it waited for); if creating the account fails,
    the claim rolls back with it.
    """
    with transaction.atomic():
        claimed = (
            Invitation.objects.filter(pk=invitation.pk, uses__lt=F("max_uses"))
            .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=timezone.now()))
            .update(uses=F("uses") + 1)
        )
        if not claimed:
            raise InvitationUnavailable
        user = get_user_model().objects.create_user(username=username, password=password)
        profile = RaterProfile.objects.create(user=user, pool_id=invitation.pool_id)
    invitation.refresh_from_db(fields=["uses"])
    return profile


def onboarding_step(profile: RaterProfile) -> str | None:
    """What a rater still has to do before rating: "consent", "demographics" or "background"; None when done."""
    is_consumer = profile.pool.slug == CONSUMER
    if is_consumer and profile.consented_at is None:
        return "consent"
    if profile.onboarded_at is None:
        return "demographics" if is_consumer else "background"
    return None


def record_consent(*, profile: RaterProfile) -> None:
    """Keep the time of the first agreement (a form sent twice does not move it)."""
    RaterProfile.objects.filter(pk=profile.pk, consented_at__isnull=True).update(consented_at=timezone.now())
    profile.refresh_from_db(fields=["consented_at"])


def record_expert_background(
    *, profile: RaterProfile, years_in_practice: int, specialty: str, country: str, qualifications: str
) -> RaterBackground:
    values = {
        "years_in_practice": years_in_practice,
        "specialty": specialty,
        "country": country,
        "qualifications": qualifications,
    }
    return _record_background(profile=profile, values=values)


def record_demographics(
    *, profile: RaterProfile, age_group: str, gender: str, race_ethnicity: list[str]
) -> RaterBackground:
    values = {"age_group": age_group, "gender": gender, "race_ethnicity": race_ethnicity}
    return _record_background(profile=profile, values=values)


def _record_background(*, profile: RaterProfile, values: dict) -> RaterBackground:
    with transaction.atomic():
        background, _ = RaterBackground.objects.update_or_create(profile=profile, defaults=values)
        RaterProfile.objects.filter(pk=profile.pk, onboarded_at__isnull=True).update(onboarded_at=timezone.now())
    profile.refresh_from_db(fields=["onboarded_at"])
    return background
