"""Rating workflows: show an item, autosave a draft, submit or revise a rating."""

import json
import math

from django.conf import settings
from django.core import signing
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from .models import Assignment, Rating, Slot
from .rubrics import assignment_context, draft_problems, rating_form
from .transitions import StaleTransition, hold_study_open, lock_assignment
from .transitions import StudyLocked as StudyLocked  # raised by submit_rating and save_draft

SHOWN_AT_SALT = "studies.item-shown-at"
# A page left open longer than this without JavaScript counts at most this much active time.
MAX_VIEW_SECONDS = 60 * 60

WITHDRAWN_MEANWHILE = "This item was taken back from you meanwhile, so your answers were not stored."


class DraftRefused(Exception):
    """A draft that is not kept, with the reason for the rater and the HTTP status saying so."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


def sign_shown_at() -> str:
    """A tamper-proof timestamp put in the form, so time on task is known even with JavaScript off."""
    return signing.dumps(timezone.now().timestamp(), salt=SHOWN_AT_SALT)


def view_seconds(shown_at_token: str) -> float | None:
    try:
        shown_at = signing.loads(shown_at_token, salt=SHOWN_AT_SALT, max_age=24 * 60 * 60)
    except (signing.BadSignature, TypeError):
        return None
    return max(0.0, timezone.now().timestamp() - float(shown_at))


def active_seconds_for_view(*, shown_at_token: str, reported_active: str | None) -> float:
    """Active time of one page view: measured by the page's script when it ran, else the view's duration.

    The script's figure is never trusted beyond the time the page was actually shown.
    """
    shown = view_seconds(shown_at_token)
    ceiling = min(shown, MAX_VIEW_SECONDS) if shown is not None else MAX_VIEW_SECONDS
    try:
        active = float(reported_active) if reported_active not in (None, "") else None
    except ValueError:
        active = None
    if active is None or not math.isfinite(active) or active < 0:  # "nan" and "inf" parse as floats
        return ceiling if shown is not None else 0.0
    return min(active, shown if shown is not None else active)


def draft_values(*, rubric_version, data, context=None) -> dict:
    """The rubric's answers found in posted form data, each checked on its own by the rubric's validator.

    A draft is whatever is filled in so far: nothing is required and the rules between answers wait for
    the submission, but each answer must be one the form could take (a known option, text within
    RATING_TEXT_MAX_CHARS that the database can store), and the whole draft fits RATING_DRAFT_MAX_BYTES.
    Raises DraftRefused with every problem.
    """
    form = rating_form(rubric_version, data=data, context=context)
    draft = form.posted_values()
    problems = draft_problems(rubric_version, draft, context)
    if problems:
        raise DraftRefused("The draft was not saved. " + " ".join(problems))
    size = len(json.dumps(draft, ensure_ascii=False).encode())
    if size > settings.RATING_DRAFT_MAX_BYTES:
        raise DraftRefused(
            f"The draft was not saved: it is {size} bytes, more than the {settings.RATING_DRAFT_MAX_BYTES} allowed.",
            status=413,
        )
    return draft


def save_draft(*, assignment: Assignment, data) -> None:
    """Keep the answers filled in so far (form data, checked by draft_values), never as a rating.

    Refused (StaleTransition) once the study is locked or the item was withdrawn meanwhile.
    """
    context = assignment_context(assignment)
    draft = draft_values(rubric_version=assignment.item.study.rubric_version, data=data, context=context)
    with transaction.atomic():
        hold_study_open(assignment.item.study_id)
        held = Assignment.objects.filter(pk=assignment.pk).exclude(status=Assignment.Status.WITHDRAWN)
        if not held.update(draft=draft):
            raise StaleTransition(WITHDRAWN_MEANWHILE)


def attention_check_result(item, values: dict) -> bool | None:
    if not item.is_attention_check:
        return None
    return all(values.get(key) == expected for key, expected in item.expected_values.items())


def submit_rating(*, assignment: Assignment, values: dict, active_seconds: float) -> Rating:
    """Store a rating (or a revision: the earlier one stays, no longer current).

    Refused (StaleTransition) when the study was locked or the item withdrawn since the caller read them:
    both are re-read under row locks (see transitions.py), so no rating is ever stored after the lock or on
    an item whose slot went back to the pool.
    """
    study = assignment.item.study
    with transaction.atomic():
        hold_study_open(study.pk)
        locked = lock_assignment(assignment.pk)
        if locked.status == Assignment.Status.WITHDRAWN:
            raise StaleTransition(WITHDRAWN_MEANWHILE)
        now = timezone.now()
        previous = locked.ratings.filter(is_current=True).first()
        if previous is not None:
            previous.is_current = False
            previous.save(update_fields=["is_current"])
        locked.active_seconds += active_seconds
        started = locked.first_viewed_at or locked.assigned_at
        rating = Rating.objects.create(
            assignment=locked,
            rubric_version=study.rubric_version,
            revision=previous.revision + 1 if previous else 1,
            values=values,
            swap_answers=locked.swap_answers,
            active_seconds=locked.active_seconds,
            wall_seconds=(now - started).total_seconds(),
            attention_check_passed=attention_check_result(assignment.item, values),
            submitted_at=now,
        )
        locked.status = Assignment.Status.SUBMITTED
        locked.submitted_at = now
        locked.draft = {}
        locked.save(update_fields=["status", "submitted_at", "draft", "active_seconds"])
    return rating


QUEUE_ORDER = ("item__study_id", "position", "id")  # the queue page's order: study by study


def next_assignment(*, rater, after: Assignment | None = None, study=None) -> Assignment | None:
    """The next item in the rater's queue that is not done (nor withdrawn, nor in a locked study).

    After an item, the rest of its study comes first, in queue order (then items of that study skipped
    earlier), so a rater finishes one study and one rubric before meeting the next; then the other studies,
    in the queue page's order. `study` keeps to one study (a panel participant's first item).
    """
    pending = Assignment.objects.for_rater(rater).exclude(status=Assignment.Status.SUBMITTED)
    pending = pending.filter(item__study__locked_at__isnull=True)
    if study is not None:
        pending = pending.filter(item__study=study)
    if after is None:
        return pending.order_by(*QUEUE_ORDER).first()
    others = pending.exclude(pk=after.pk)
    same_study = others.filter(item__study_id=after.item.study_id).order_by("position", "id")
    later = same_study.filter(Q(position__gt=after.position) | Q(position=after.position, id__gt=after.id))
    return later.first() or same_study.first() or others.order_by(*QUEUE_ORDER).first()


def study_finished(*, rater, study) -> bool:
    """Whether the rater holds items of the study and has rated every one (withdrawn items aside)."""
    held = Assignment.objects.for_rater(rater).filter(item__study=study)
    return held.exists() and not held.exclude(status=Assignment.Status.SUBMITTED).exists()


def draw_items_for_rater(*, study, rater, count: int, now=None) -> list[Assignment]:
    """Give a rater `count` items of a study (crowd-panel consumers rate k drawn items each).

    Least-rated items first, random among equals, safe under concurrency (see assignment.claim_items).
    Idempotent: a rater who already holds `count` items of the study (not withdrawn) gets no more.
    """
    from .assignment import claim_items, create_slots

    held = Assignment.objects.for_rater(rater).filter(item__study=study)
    missing = count - held.count()
    if missing > 0:
        if not Slot.objects.filter(study=study).exists():
            create_slots(study=study)
        claim_items(study=study, rater=rater, count=missing, now=now)
    return list(Assignment.objects.for_rater(rater).filter(item__study=study))


def has_free_slot(*, study, pool_id: int, now=None) -> bool:
    """Whether a newcomer to the pool could draw an item of the study now (after stale claims expire)."""
    from .assignment import create_slots, expire_stale_claims

    if not Slot.objects.filter(study=study).exists():
        create_slots(study=study)
    expire_stale_claims(study=study, now=now)
    return Slot.objects.filter(study=study, pool_id=pool_id, assignment__isnull=True).exists()
