"""The crowd-panel flow of a study (studies/DESIGN.md, "Crowd-panel participants"): a panel link makes or opens
a participant's consumer account, the participant draws the study's share of items, and earns a completion code.

It lives in studies because it reads a study's pools, slots and assignments; `raters` (accounts, profiles,
pools, invitations, roles) never imports `studies`.
"""

import hashlib
from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import urlencode, urlsplit, urlunsplit

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.core import signing
from django.db import transaction
from django.db.models import Count, Q
from django.urls import reverse
from django.utils import timezone

from config.throttling import Budget
from raters.models import RaterBackground, RaterPool, RaterProfile
from raters.services import CONSUMER, PANEL_USERNAME_PREFIX

from .models import Assignment, Study, StudyPool
from .services import draw_items_for_rater, has_free_slot

DEFAULT_ITEMS_PER_PANEL_RATER = 10
RESUME_SALT = "raters.panel-resume"  # kept as it was when the flow lived in raters: links already sent stay valid
RESUME_LINK_DAYS = 7


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


class PanelRefused(Exception):
    """A panel link that cannot be followed now, with what to tell the person who followed it."""

    def __init__(self, *, title: str, text: str, status: int, retry_after: int | None = None):
        super().__init__(title)
        self.title, self.text, self.status, self.retry_after = title, text, status, retry_after


STUDY_FULL = PanelRefused(
    title="This study is full at the moment",
    text="Every item is being rated by other participants right now. Please come back later: places free up "
    "when others finish or leave.",
    status=409,  # not 503: nothing is wrong with the server, and 5xx pages alert the operators
    retry_after=10 * 60,
)


def enter_panel(
    *,
    study: Study,
    participant_id: str,
    panel_study_id: str = "",
    panel_session_id: str = "",
    user=None,
    resume_token: str = "",
    now=None,
) -> tuple[RaterProfile, bool]:
    """Who a panel link lets in: the participant's profile, and whether this browser must sign in to it.

    A panel id is not a secret (it appears in links, exports and the panel's own pages), so it alone opens
    only an account that holds nothing yet. Once the participant has consented, answered the survey or
    drawn items, only the browser signed in to the account (the session it got at first arrival) or a
    resume link signed for this study and id (`panel_resume_path`) opens it. Signing in this way signs
    every other browser out of the account. A brand-new id counts against the study's arrival limit and
    needs a free slot. Raises PanelRefused otherwise.
    """
    if user is not None and user.is_authenticated and not _is_panel_user(user):
        raise PanelRefused(
            title="You are signed in with another account",
            text=f"You are signed in as {user.get_username()}. Log out first to take part as a panel participant.",
            status=409,
        )
    profile = (
        RaterProfile.objects.select_related("user", "pool")
        .filter(user__username=panel_username(study=study, participant_id=participant_id))
        .first()
    )
    if profile is not None:
        if user is not None and user.pk == profile.user_id:
            return profile, False
        resumed = resume_token_valid(token=resume_token, study=study, participant_id=participant_id)
        if not resumed and has_started(profile):
            raise PanelRefused(
                title="This participant id has already started in another browser",
                text="Continue in the browser you started in, or ask the study team for a resume link.",
                status=403,
            )
        _sign_out_other_browsers(profile.user)
        return profile, True
    if not _arrival_allowed(study):
        raise PanelRefused(
            title="Many people are starting this study right now",
            text="Please wait a minute, then open the study link again.",
            status=429,
            retry_after=60,
        )
    study_pool = consumer_study_pool(study)
    if study_pool is None or not has_free_slot(study=study, pool_id=study_pool.pool_id, now=now):
        raise STUDY_FULL
    profile = find_or_create_panel_participant(
        study=study, participant_id=participant_id, panel_study_id=panel_study_id, panel_session_id=panel_session_id
    )
    return profile, True


def has_started(profile: RaterProfile) -> bool:
    """Whether an account holds anything of its owner's: consent, survey answers, items, drafts or ratings."""
    return (
        profile.consented_at is not None
        or profile.onboarded_at is not None
        or RaterBackground.objects.filter(profile=profile).exists()
        or profile.assignments.exists()
    )


def _is_panel_user(user) -> bool:
    return RaterProfile.objects.filter(user=user).exclude(panel_participant_id="").exists()


def _sign_out_other_browsers(user) -> None:
    # Sessions carry a hash of the password field; a new unusable password ends every session of the user.
    user.set_unusable_password()
    user.save(update_fields=["password"])


def _arrival_allowed(study: Study) -> bool:
    """Count a new participant against the study's limit per minute (a window opened by the first)."""
    limit = settings.PANEL_ARRIVALS_PER_MINUTE
    return limit <= 0 or Budget("panel-arrivals", limit, 60).spend(str(study.pk)) is None


def panel_resume_token(*, study: Study, participant_id: str) -> str:
    return signing.dumps([study.pk, participant_id], salt=RESUME_SALT)


def resume_token_valid(*, token: str, study: Study, participant_id: str) -> bool:
    if not token:
        return False
    try:
        value = signing.loads(token, salt=RESUME_SALT, max_age=timedelta(days=RESUME_LINK_DAYS))
    except signing.BadSignature:  # also an expired one
        return False
    return value == [study.pk, participant_id]


def panel_resume_path(*, study: Study, participant_id: str) -> str:
    """A link that opens a panel participant's account in any browser, for RESUME_LINK_DAYS days."""
    token = panel_resume_token(study=study, participant_id=participant_id)
    query = urlencode({"PROLIFIC_PID": participant_id, "resume": token})
    return f"{reverse('raters:panel_start', args=[study.pk])}?{query}"


def is_panel_participant_of(*, profile: RaterProfile, study: Study) -> bool:
    """Whether the profile is the account a panel link of this study made (it belongs to one study)."""
    if not profile.panel_participant_id:
        return False
    expected = panel_username(study=study, participant_id=profile.panel_participant_id)
    return profile.user.get_username() == expected


@dataclass(frozen=True)
class PanelProgress:
    """A panel participant's items in a study."""

    pending: int  # drawn, not yet rated
    submitted: int  # rated (including any the study team later withdrew)
    owed: int  # claims that expired unrated, not replaced by a new draw yet (while the study has items to draw)

    @property
    def complete(self) -> bool:
        """Every item drawn is rated: the completion code is earned."""
        return self.pending == 0 and self.submitted > 0 and self.owed == 0


def _share(study_pool: StudyPool) -> int:
    return study_pool.items_per_rater or DEFAULT_ITEMS_PER_PANEL_RATER


def panel_progress(*, study: Study, profile: RaterProfile) -> PanelProgress:
    study_pool = consumer_study_pool(study)
    share = _share(study_pool) if study_pool is not None else 0
    open_statuses = [Assignment.Status.ASSIGNED, Assignment.Status.STARTED]
    expired = Q(status=Assignment.Status.WITHDRAWN, expired_at__isnull=False, submitted_at__isnull=True)
    counts = Assignment.objects.filter(rater=profile, item__study=study).aggregate(
        total=Count("id"),
        pending=Count("id", filter=Q(status__in=open_statuses)),
        submitted=Count("id", filter=Q(submitted_at__isnull=False)),
        expired=Count("id", filter=expired),
    )
    kept = counts["total"] - counts["expired"]
    never_had = study.items.count() - counts["total"]  # a rater gets an item once (even one that expired)
    owed = max(0, min(share - kept, counts["expired"], never_had))
    return PanelProgress(pending=counts["pending"], submitted=counts["submitted"], owed=owed)


def draw_study_items(*, study: Study, profile: RaterProfile, now=None) -> PanelProgress:
    """A consumer's share of a study's items (the consumer pool's items_per_rater, 10 when unset).

    Drawn once, after onboarding; a returning rater keeps what they were given. Claims that expired
    unrated (the participant left) are replaced by new draws when they come back, if slots are free:
    they may still earn the completion code. Items the study team withdrew are not replaced. Nothing
    is drawn for a locked study, one without a consumer pool, or a rater marked as dropped out.
    """
    study_pool = consumer_study_pool(study)
    if study_pool is None or study.is_locked or profile.dropped_out_at is not None:
        return panel_progress(study=study, profile=profile)
    with transaction.atomic():
        # Serialises two requests of the same rater (a form sent twice), so they cannot both draw.
        RaterProfile.objects.select_for_update().filter(pk=profile.pk).first()
        progress = panel_progress(study=study, profile=profile)
        first_draw = not Assignment.objects.filter(rater=profile, item__study=study).exists()
        missing = _share(study_pool) if first_draw else progress.owed
        if missing:
            active = Assignment.objects.for_rater(profile).filter(item__study=study).count()
            draw_items_for_rater(study=study, rater=profile, count=active + missing, now=now)
            progress = panel_progress(study=study, profile=profile)
    return progress


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
