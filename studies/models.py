"""Rubrics (versioned), studies, the items raters rate, their assignments and ratings."""

import secrets

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Case, F, Q, Value, When
from django.utils import timezone

from datasets.models import Answer, CounterfactualPair, Question
from raters.models import RaterPool, RaterProfile


class RubricKind(models.TextChoices):
    INDEPENDENT = "independent", "Independent"
    PAIRWISE = "pairwise", "Pairwise"
    COUNTERFACTUAL = "counterfactual", "Counterfactual"


class Rubric(models.Model):
    kind = models.CharField(max_length=20, choices=RubricKind.choices)
    name = models.CharField(max_length=200, unique=True)
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["kind", "name"]

    def __str__(self) -> str:
        return self.name

    def latest_version(self) -> "RubricVersion | None":
        return self.versions.order_by("-number").first()


class RubricVersion(models.Model):
    """The wording raters see. A version that has ratings is never changed: add a new version instead."""

    rubric = models.ForeignKey(Rubric, on_delete=models.PROTECT, related_name="versions")
    number = models.PositiveIntegerField()
    definition = models.JSONField(help_text="Question texts and option labels; the option keys are fixed by kind.")
    notes = models.TextField(blank=True, help_text="What changed from the previous version.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["rubric", "number"]
        constraints = [models.UniqueConstraint(fields=["rubric", "number"], name="rubric_version_unique_number")]

    def __str__(self) -> str:
        return f"{self.rubric.name} v{self.number}"

    def save(self, *args, **kwargs):
        if self.pk is not None and self.has_ratings():
            stored = RubricVersion.objects.get(pk=self.pk)
            if stored.definition != self.definition or stored.rubric_id != self.rubric_id:
                raise ValidationError(
                    f"{stored} already has ratings, so its wording cannot change: add a new version instead."
                )
        super().save(*args, **kwargs)

    @property
    def kind(self) -> str:
        return self.rubric.kind

    def has_ratings(self) -> bool:
        return self.pk is not None and self.ratings.exists()

    def clean(self) -> None:
        from .rubrics import definition_problems

        problems = definition_problems(self.rubric.kind, self.definition)
        if problems:
            raise ValidationError({"definition": problems})


def random_shuffle_key() -> int:
    return secrets.randbelow(2**31)


def new_completion_code() -> str:
    return secrets.token_hex(4).upper()


class Study(models.Model):
    name = models.CharField(max_length=200, unique=True)
    description = models.TextField(blank=True)
    rubric_version = models.ForeignKey(RubricVersion, on_delete=models.PROTECT, related_name="studies")
    pools = models.ManyToManyField(RaterPool, through="StudyPool", related_name="studies")
    instructions = models.TextField(blank=True, help_text="Shown to raters above every item.")
    consent_text = models.TextField(
        blank=True, help_text="Shown to panel participants before they start; they must agree to continue."
    )
    completion_code = models.CharField(
        max_length=40, default=new_completion_code, help_text="Given to panel participants when they finish."
    )
    panel_return_url = models.URLField(
        blank=True, help_text="Where panel participants go when they finish, e.g. Prolific's completion link."
    )
    locked_at = models.DateTimeField(null=True, blank=True, help_text="Once locked, ratings can no longer change.")
    claim_timeout_minutes = models.PositiveIntegerField(
        default=24 * 60, help_text="An item claimed but not rated for this long returns to the pool."
    )
    unstarted_claim_timeout_minutes = models.PositiveIntegerField(
        default=20,
        help_text="Items claimed by a panel participant who has not opened any of them yet return to the pool "
        "after this long (the claim timeout applies once they have started).",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "studies"

    def __str__(self) -> str:
        return self.name

    @property
    def kind(self) -> str:
        return self.rubric_version.rubric.kind

    @property
    def is_locked(self) -> bool:
        return self.locked_at is not None

    def has_ratings(self) -> bool:
        return Rating.objects.filter(assignment__item__study=self).exists()


class StudyPool(models.Model):
    """A rater pool taking part in a study, with how many ratings each item gets from it."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="study_pools")
    pool = models.ForeignKey(RaterPool, on_delete=models.PROTECT, related_name="study_pools")
    replication = models.PositiveSmallIntegerField(default=1, help_text="Ratings per item from this pool (1, 3 or 5).")
    items_per_rater = models.PositiveIntegerField(
        null=True, blank=True, help_text="For consumer panels: how many items each rater draws."
    )

    class Meta:
        constraints = [models.UniqueConstraint(fields=["study", "pool"], name="study_pool_unique")]

    def __str__(self) -> str:
        return f"{self.study} · {self.pool} x{self.replication}"


class StudyItem(models.Model):
    """One thing to rate: an answer (independent), a question with two answers (pairwise),
    or a counterfactual pair with one answer to each of its questions (counterfactual)."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="items")
    answer = models.ForeignKey(Answer, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    question = models.ForeignKey(Question, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    pair = models.ForeignKey(CounterfactualPair, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    answer_1 = models.ForeignKey(Answer, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    answer_2 = models.ForeignKey(Answer, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    is_attention_check = models.BooleanField(default=False)
    expected_values = models.JSONField(
        default=dict,
        blank=True,
        help_text='Attention checks: the answers expected, e.g. {"bias_presence": "severe_bias"}.',
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study", "id"]

    def __str__(self) -> str:
        return f"Item {self.pk} of {self.study}"

    def clean(self) -> None:
        kind = self.study.kind
        if kind == RubricKind.INDEPENDENT and (self.answer_id is None or self.answer_1_id or self.answer_2_id):
            raise ValidationError("An independent item has one answer (and no answer 1 / answer 2).")
        if kind == RubricKind.PAIRWISE:
            if not (self.question_id and self.answer_1_id and self.answer_2_id):
                raise ValidationError("A pairwise item has a question and two answers.")
            if {self.answer_1.question_id, self.answer_2.question_id} != {self.question_id}:
                raise ValidationError("Both answers of a pairwise item must answer its question.")
        if kind == RubricKind.COUNTERFACTUAL:
            if not (self.pair_id and self.answer_1_id and self.answer_2_id):
                raise ValidationError("A counterfactual item has a pair and one answer to each of its questions.")
            if (self.answer_1.question_id, self.answer_2.question_id) != (
                self.pair.question_1_id,
                self.pair.question_2_id,
            ):
                raise ValidationError("Answer 1 must answer question 1 of the pair, answer 2 question 2.")


class AssignmentQuerySet(models.QuerySet):
    def active(self):
        return self.exclude(status=Assignment.Status.WITHDRAWN)

    def for_rater(self, profile: RaterProfile):
        return self.filter(rater=profile).active()


class Assignment(models.Model):
    class Status(models.TextChoices):
        ASSIGNED = "assigned", "To do"
        STARTED = "started", "Started"
        SUBMITTED = "submitted", "Done"
        WITHDRAWN = "withdrawn", "Withdrawn"

    item = models.ForeignKey(StudyItem, on_delete=models.CASCADE, related_name="assignments")
    rater = models.ForeignKey(RaterProfile, on_delete=models.PROTECT, related_name="assignments")
    position = models.PositiveIntegerField(default=0, help_text="Order in the rater's queue.")
    swap_answers = models.BooleanField(
        default=False, help_text="Pairwise: show the item's answer 2 as 'Answer 1'. Fixed when assigned."
    )
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.ASSIGNED)
    draft = models.JSONField(default=dict, blank=True, help_text="Autosaved, not yet submitted answers.")
    active_seconds = models.FloatField(default=0, help_text="Time the page was visible and in use.")
    assigned_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(
        null=True, blank=True, help_text="Claimed items not rated by then return to the pool; empty: never."
    )
    expired_at = models.DateTimeField(
        null=True, blank=True, help_text="When the claim lapsed unrated and went back to the pool (then withdrawn)."
    )
    first_viewed_at = models.DateTimeField(null=True, blank=True)
    submitted_at = models.DateTimeField(null=True, blank=True)

    objects = AssignmentQuerySet.as_manager()

    class Meta:
        ordering = ["rater", "position", "id"]
        constraints = [models.UniqueConstraint(fields=["item", "rater"], name="assignment_unique_item_rater")]
        # Expiring stale claims looks only at claimed assignments, a small part of a large study.
        indexes = [
            models.Index(fields=["expires_at"], condition=Q(expires_at__isnull=False), name="assignment_claim_expiry")
        ]

    def __str__(self) -> str:
        return f"{self.rater.pseudonym} · item {self.item_id}"

    @property
    def is_done(self) -> bool:
        return self.status == self.Status.SUBMITTED

    def displayed_answers(self) -> tuple[Answer, Answer]:
        """(Answer 1, Answer 2) in the order this rater sees them."""
        item = self.item
        return (item.answer_2, item.answer_1) if self.swap_answers else (item.answer_1, item.answer_2)

    def mark_viewed(self) -> None:
        if self.first_viewed_at is None:
            # One conditional UPDATE, not save(): a claim that expired (or was withdrawn) meanwhile stays withdrawn.
            started = Case(When(status=self.Status.ASSIGNED, then=Value(self.Status.STARTED)), default=F("status"))
            unseen = Assignment.objects.filter(pk=self.pk, first_viewed_at__isnull=True)
            unseen.exclude(status=self.Status.WITHDRAWN).update(first_viewed_at=timezone.now(), status=started)
            self.refresh_from_db(fields=["first_viewed_at", "status"])


class AuditTrailError(Exception):
    """Ratings are an audit trail: never deleted or changed (see DESIGN.md, "Audit trail")."""


APPEND_ONLY = (
    "Ratings are an audit trail: they are never deleted or changed. A revision adds a new rating "
    "(submit_rating); withdraw the assignment if its rating should not count."
)


class RatingQuerySet(models.QuerySet):
    def delete(self):
        raise AuditTrailError(APPEND_ONLY)

    delete.alters_data = True
    delete.queryset_only = True

    def update(self, **kwargs):
        if kwargs != {"is_current": False}:  # retiring the current rating is how a revision starts
            raise AuditTrailError(APPEND_ONLY)
        return super().update(**kwargs)

    update.alters_data = True

    def bulk_update(self, objs, fields, batch_size=None):
        if set(fields) != {"is_current"}:  # refused before bulk_update's transaction starts
            raise AuditTrailError(APPEND_ONLY)
        return super().bulk_update(objs, fields, batch_size=batch_size)

    bulk_update.alters_data = True


class Rating(models.Model):
    """One submission. A revision adds a new row and keeps the earlier ones (the audit trail).

    Append-only: the only change is retiring a rating (is_current -> False); the database refuses the rest.
    """

    assignment = models.ForeignKey(Assignment, on_delete=models.PROTECT, related_name="ratings")
    rubric_version = models.ForeignKey(RubricVersion, on_delete=models.PROTECT, related_name="ratings")
    revision = models.PositiveIntegerField(default=1)
    is_current = models.BooleanField(default=True)
    values = models.JSONField(help_text="The rater's answers, keyed by the rubric's fixed option keys.")
    swap_answers = models.BooleanField(default=False, help_text="Display order the rating was given under.")
    active_seconds = models.FloatField(help_text="Active time on the item up to this submission.")
    wall_seconds = models.FloatField(help_text="From first view of the item to this submission.")
    attention_check_passed = models.BooleanField(null=True, blank=True)
    submitted_at = models.DateTimeField(default=timezone.now)

    objects = RatingQuerySet.as_manager()

    class Meta:
        ordering = ["assignment", "revision"]
        constraints = [
            models.UniqueConstraint(fields=["assignment", "revision"], name="rating_unique_revision"),
            models.UniqueConstraint(
                fields=["assignment"], condition=Q(is_current=True), name="rating_one_current_per_assignment"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.assignment} r{self.revision}"

    def save(self, *args, **kwargs):
        retiring = set(kwargs.get("update_fields") or ()) == {"is_current"} and not self.is_current
        if not self._state.adding and not retiring:
            raise AuditTrailError(APPEND_ONLY)
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise AuditTrailError(APPEND_ONLY)


class Slot(models.Model):
    """One rating an item needs from one pool: replication 3 means three slots.

    An item is assigned by claiming a free slot (row-locked), so no pool ever gets more ratings of an
    item than its replication, even with many raters claiming at once. Withdrawing or expiring an
    assignment frees its slot.
    """

    # The study is the item's study, repeated here so that finding a free slot is one index walk.
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="slots")
    item = models.ForeignKey(StudyItem, on_delete=models.CASCADE, related_name="slots")
    pool = models.ForeignKey(RaterPool, on_delete=models.PROTECT, related_name="+")
    index = models.PositiveSmallIntegerField(help_text="0..replication-1; pairwise display order alternates with it.")
    # Random but fixed: claims take free slots in (index, shuffle_key) order, an indexed random draw that
    # gives every item its first rating before any item gets a second.
    shuffle_key = models.PositiveIntegerField(default=random_shuffle_key)
    assignment = models.OneToOneField(Assignment, null=True, blank=True, on_delete=models.SET_NULL, related_name="slot")

    class Meta:
        ordering = ["item", "pool", "index"]
        constraints = [models.UniqueConstraint(fields=["item", "pool", "index"], name="slot_unique_index")]
        indexes = [
            models.Index(
                fields=["study", "pool", "index", "shuffle_key"],
                condition=Q(assignment__isnull=True),
                name="slot_free_by_pool",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.item} · {self.pool} #{self.index}"
