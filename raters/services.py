"""Rater workflows: joining by invitation, arriving from a crowd panel, onboarding and finishing."""

import hashlib
from urllib.parse import urlencode, urlsplit, urlunsplit

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from studies.models import Assignment, Study, StudyPool
from studies.services import draw_items_for_rater

from .models import Invitation, RaterBackground, RaterPool, RaterProfile

CONSUMER = "consumer"
DEFAULT_ITEMS_PER_PANEL_RATER = 10
# Usernames of panel participants; people joining by invitation cannot choose one that starts like this.
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


def consumer_study_pool(study: Study) -> StudyPool | None:
    return study.study_pools.filter(pool__slug=CONSUMER).first()


def panel_username(*, study: Study, participant_id: str) -> str:
    """A stable username for a panel participant of a study that does not show their panel id."""
    digest = hashlib.sha256(f"{study.pk}:{participant_id}".encode()).hexdigest()
    return f"{PANEL_USERNAME_PREFIX}{digest[:24]}"


def find_or_create_panel_participant(
    *, study: Study, participant_id: str, panel_study_id: str = "", panel_session_id: str = ""
) -> RaterProfile:
    """The consumer account of a panel participant in a study: the same one each time they follow the link."""
    with transaction.atomic():
        user, _ = get_user_model().objects.get_or_create(
            username=panel_username(study=study, participant_id=participant_id),
            defaults={"password": make_password(None)},  # no password: the panel link is how they sign in
        )
        profile, _ = RaterProfile.objects.get_or_create(
            user=user,
            defaults={
                "pool": RaterPool.objects.get(slug=CONSUMER),
                "panel_participant_id": participant_id,
                "panel_study_id": panel_study_id,
                "panel_session_id": panel_session_id,
            },
        )
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


def draw_study_items(*, study: Study, profile: RaterProfile) -> list[Assignment]:
    """A consumer's share of a study's items, drawn once: a returning rater keeps what they were given.

    The count is the consumer pool's items_per_rater (10 when unset). Nothing is drawn for a locked
    study or one without a consumer pool.
    """
    study_pool = consumer_study_pool(study)
    if study_pool is None or study.is_locked:
        return []
    with transaction.atomic():
        # Serialises two requests of the same rater (a form sent twice), so they cannot both draw.
        RaterProfile.objects.select_for_update().filter(pk=profile.pk).first()
        held = Assignment.objects.filter(rater=profile, item__study=study)
        if held.exists():
            return list(held.active())
        count = study_pool.items_per_rater or DEFAULT_ITEMS_PER_PANEL_RATER
        return draw_items_for_rater(study=study, rater=profile, count=count)


def items_left(*, study: Study, profile: RaterProfile) -> int:
    """How many of a rater's items in a study are neither submitted nor withdrawn."""
    held = Assignment.objects.for_rater(profile).filter(item__study=study)
    return held.exclude(status=Assignment.Status.SUBMITTED).count()


def record_completion(*, profile: RaterProfile) -> None:
    """Mark a panel participant finished; the first time counts."""
    RaterProfile.objects.filter(pk=profile.pk, completed_at__isnull=True).update(completed_at=timezone.now())
    profile.refresh_from_db(fields=["completed_at"])


def panel_return_url(study: Study) -> str:
    """Where a finished participant goes: the study's return URL, with ?cc=<code> added when it has no query."""
    url = study.panel_return_url
    if not url:
        return ""
    parts = urlsplit(url)
    if parts.query:
        return url
    return urlunsplit(parts._replace(query=urlencode({"cc": study.completion_code})))
