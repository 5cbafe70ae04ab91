"""Rubrics (versioned), studies, the items raters rate, their assignments and ratings."""

import secrets
from collections.abc import Iterable

from django.core.exceptions import ValidationError
from django.db import models, transaction
from django.db.models import Case, F, Q, Value, When
from django.utils import timezone

from datasets.models import Answer, AnswerSource, CounterfactualPair, Question
from datasets.recipes import MAX_EXAMPLES
from raters.models import RaterPool, RaterProfile


class RubricKind(models.TextChoices):
    INDEPENDENT = "independent", "Independent"
    PAIRWISE = "pairwise", "Pairwise"
    COUNTERFACTUAL = "counterfactual", "Counterfactual"


class Rubric(models.Model):
    # A label only: what an item shows and what is asked are the version's typed definition (DESIGN.md,
    # "Typed rubrics"); the migration to typed questions read it once to convert the legacy definitions.
    kind = models.CharField(
        max_length=20, choices=RubricKind.choices, blank=True, help_text="A label (EquityMedQA's rubric kinds)."
    )
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
    definition = models.JSONField(
        help_text="Typed questions (studies/rubric_schema.py): what is shown, the questions, their wording and rules."
    )
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
    def display(self) -> str:
        """What an item shows (rubric_schema.DISPLAYS): one answer, two answers, or two questions."""
        return self.definition.get("display", "") if isinstance(self.definition, dict) else ""

    def has_ratings(self) -> bool:
        """Rated by a person or by a judge."""
        return self.pk is not None and (self.ratings.exists() or self.judge_ratings.exists())

    def clean(self) -> None:
        from .release import release_problems
        from .rubric_schema import definition_problems

        problems = definition_problems(self.definition) or release_problems(self.definition)
        if problems:
            raise ValidationError({"definition": problems})


SCORERS_ONLY_ITEMS = (
    "A study without a rubric is read by scorers only: nobody rates its answers, so it has no items. Give it a "
    "rubric version to have its answers rated."
)


def random_shuffle_key() -> int:
    return secrets.randbelow(2**31)


def new_completion_code() -> str:
    return secrets.token_hex(4).upper()


class Study(models.Model):
    name = models.CharField(max_length=200, unique=True)
    description = models.TextField(blank=True)
    rubric_version = models.ForeignKey(
        RubricVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="studies",
        help_text="What people (and judges) answer; empty for a study read by scorers only.",
    )  # fmt: skip
    definition = models.JSONField(
        default=dict, blank=True, help_text="The study file as loaded (its pre-registration), as data."
    )
    definition_sha256 = models.CharField(max_length=64, blank=True, help_text="Hash of the loaded definition.")
    answers = models.ManyToManyField(Answer, through="StudyAnswer", related_name="studies")
    pools = models.ManyToManyField(RaterPool, through="StudyPool", related_name="studies")
    judges = models.ManyToManyField("Judge", through="StudyJudge", related_name="studies", blank=True)
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
    def display(self) -> str:
        """What each item shows, from the rubric (empty for a study without one)."""
        return self.rubric_version.display if self.rubric_version_id else ""

    @property
    def is_scorers_only(self) -> bool:
        """No rubric: nobody rates the study's answers (no items, queue or ratings); its scorers read them."""
        return self.rubric_version_id is None

    @property
    def is_locked(self) -> bool:
        return self.locked_at is not None

    def clean(self) -> None:
        if self.is_scorers_only and self.pk is not None and self.items.exists():
            raise ValidationError({"rubric_version": SCORERS_ONLY_ITEMS})

    def has_ratings(self) -> bool:
        """Rated by a person or by a judge."""
        return (
            Rating.objects.filter(assignment__item__study=self).exists()
            or JudgeRating.objects.filter(item__study=self).exists()
        )


LINK_BATCH = 2000


class StudyAnswerQuerySet(models.QuerySet):
    def link(self, *, study_id: int, answer_ids: Iterable[int], via: str) -> None:
        """Link answers to a study, idempotently and safely against concurrent links: the unique (study, answer)
        constraint decides (ON CONFLICT DO NOTHING), so an answer already linked keeps its first link."""
        links = [StudyAnswer(study_id=study_id, answer_id=answer_id, via=via) for answer_id in set(answer_ids)]
        self.bulk_create(links, ignore_conflicts=True, batch_size=LINK_BATCH)


class StudyAnswer(models.Model):
    """An answer a study asked for or imported. An answer may serve several studies; a link is never removed
    while the study has data (the answer's scores and ratings are the study's results)."""

    class Via(models.TextChoices):
        GENERATED = "generated", "Generated for the study"
        IMPORTED = "imported", "Imported into the study"
        ITEM = "item", "Rated in the study"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="study_answers")
    answer = models.ForeignKey(Answer, on_delete=models.PROTECT, related_name="study_links")
    via = models.CharField(max_length=20, choices=Via.choices)
    added_at = models.DateTimeField(auto_now_add=True)

    objects = StudyAnswerQuerySet.as_manager()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["study", "answer"], name="study_answer_unique")]

    def __str__(self) -> str:
        return f"{self.study} · answer {self.answer_id}"


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
    """One thing to rate, as the rubric's display says: an answer (one_answer), a question with two answers
    (two_answers), or a counterfactual pair with one answer to each of its questions (two_questions)."""

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

    def save(self, *args, **kwargs):
        # The answers an item shows belong to its study (via item), written with the item.
        with transaction.atomic():
            super().save(*args, **kwargs)
            StudyItem.link_answers([self])

    @staticmethod
    def link_answers(items: Iterable["StudyItem"]) -> None:
        """Link the answers of items (of any studies) to their study, as StudyAnswer via item."""
        by_study: dict[int, set[int]] = {}
        for item in items:
            answers = by_study.setdefault(item.study_id, set())
            answers.update(a for a in (item.answer_id, item.answer_1_id, item.answer_2_id) if a is not None)
        for study_id, answer_ids in by_study.items():
            StudyAnswer.objects.link(study_id=study_id, answer_ids=answer_ids, via=StudyAnswer.Via.ITEM)

    @property
    def first_question(self) -> Question | None:
        """The question the item opens with (the queue's preview): its answer's, its own, or its pair's first."""
        if self.answer_id:
            return self.answer.question
        if self.question_id:
            return self.question
        return self.pair.question_1 if self.pair_id else None

    def clean(self) -> None:
        if self.study.is_scorers_only:
            raise ValidationError(SCORERS_ONLY_ITEMS)
        display = self.study.display
        if display == "one_answer" and (self.answer_id is None or self.answer_1_id or self.answer_2_id):
            raise ValidationError("An item with one answer has one answer (and no answer 1 / answer 2).")
        if display == "two_answers":
            if not (self.question_id and self.answer_1_id and self.answer_2_id):
                raise ValidationError("An item with two answers has a question and two answers.")
            if {self.answer_1.question_id, self.answer_2.question_id} != {self.question_id}:
                raise ValidationError("Both answers of the item must answer its question.")
        if display == "two_questions":
            if not (self.pair_id and self.answer_1_id and self.answer_2_id):
                raise ValidationError("An item with two questions has a pair and one answer to each of its questions.")
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


# --- Judges: models that answer a rubric like raters (DESIGN.md, "Judges") -----------------------------------

JUDGE_APPEND_ONLY = (
    "Judge replies and ratings are an audit trail: they are never deleted or changed. Run another judge (or a "
    "new one with another name) to ask again."
)
# What a judge recipe may show of an item, in this order. The last three are lines of a multiple-choice
# scenario, one after another as BiasMedQA's auto-evaluator prompt lays them out: the question's
# "### Options: A: ..., B: ..." line, its "CORRECT ANSWER: C: ..." line and the answer as "RESPONSE: ...".
SHOWN_FIELDS = ("question", "answers", "groups", "options", "correct_answer", "response")
SCENARIO_FIELDS = ("options", "correct_answer", "response")


def default_shown_fields() -> list[str]:
    return ["question", "answers"]


class AppendOnlyQuerySet(models.QuerySet):
    """Rows that are history: inserted, never updated or deleted (no exception, unlike a rating's retirement)."""

    def delete(self):
        raise AuditTrailError(JUDGE_APPEND_ONLY)

    delete.alters_data = True
    delete.queryset_only = True

    def update(self, **kwargs):
        raise AuditTrailError(JUDGE_APPEND_ONLY)

    update.alters_data = True

    def bulk_update(self, objs, fields, batch_size=None):
        raise AuditTrailError(JUDGE_APPEND_ONLY)

    bulk_update.alters_data = True


class AppendOnly(models.Model):
    objects = AppendOnlyQuerySet.as_manager()

    class Meta:
        abstract = True

    def save(self, *args, **kwargs):
        if not self._state.adding:
            raise AuditTrailError(JUDGE_APPEND_ONLY)
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise AuditTrailError(JUDGE_APPEND_ONLY)


class Judge(models.Model):
    """A model answering a rubric version like a rater: its source (the endpoint), its recipe (instructions,
    what it is shown of an item, examples) and how many independent replies it gives per item. No user, no
    rater profile: its ratings are `JudgeRating`s, with the provenance of each reply (`JudgeReply`)."""

    name = models.CharField(max_length=200, unique=True)
    source = models.ForeignKey(
        AnswerSource, on_delete=models.PROTECT, related_name="+",
        help_text="The model source whose endpoint answers (its model, temperature, max tokens, limits).",
    )  # fmt: skip
    rubric_version = models.ForeignKey(RubricVersion, on_delete=models.PROTECT, related_name="judges")
    repeats = models.PositiveSmallIntegerField(default=1, help_text="Independent replies per item (1-20).")
    instructions = models.TextField(help_text="What the judge is told before the rubric's own questions.")
    shown_fields = models.JSONField(
        default=default_shown_fields, help_text=f"What the judge sees of an item, from {', '.join(SHOWN_FIELDS)}."
    )
    examples = models.JSONField(
        default=list, blank=True, help_text='Optional worked examples: [{"item": text, "reply": {answers}}].'
    )
    questions = models.JSONField(
        default=list, blank=True,
        help_text="The keys of the rubric's questions the judge answers (empty: all of them).",
    )  # fmt: skip
    created_at = models.DateTimeField(auto_now_add=True)

    RECIPE = ("source_id", "rubric_version_id", "instructions", "shown_fields", "examples", "questions")

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def save(self, *args, **kwargs):
        # What a judge asks is part of what its replies mean: fixed once it has replied (repeats may grow).
        if self.pk is not None and self.replies.exists():
            stored = Judge.objects.get(pk=self.pk)
            if any(getattr(stored, name) != getattr(self, name) for name in self.RECIPE):
                raise ValidationError(f"The judge {stored} has replies, so its recipe cannot change: add a new judge.")
        super().save(*args, **kwargs)

    def clean(self) -> None:
        from .rubric_schema import part_problems

        problems = {}
        shown = self.shown_fields
        if not (isinstance(shown, list) and shown and all(name in SHOWN_FIELDS for name in shown)):
            problems["shown_fields"] = f"A non-empty list of: {', '.join(SHOWN_FIELDS)}."
        if self.rubric_version_id and (wrong := part_problems(self.rubric_version.definition, self.questions)):
            # the part a judge answers: its request, schema and checks of replies (and examples) are about it
            problems["questions"] = "; ".join(wrong)[:1].upper() + "; ".join(wrong)[1:] + "."
        examples = self.examples
        if not (isinstance(examples, list) and all(
            isinstance(e, dict) and isinstance(e.get("item"), str) and isinstance(e.get("reply"), dict)
            for e in examples
        )):  # fmt: skip
            problems["examples"] = 'A list of {"item": text, "reply": {answers}}.'
        elif len(examples) > MAX_EXAMPLES:
            problems["examples"] = f"At most {MAX_EXAMPLES} worked examples (as a recipe), not {len(examples)}."
        elif self.rubric_version_id and "questions" not in problems and (wrong := self.example_problems()):
            problems["examples"] = wrong
        if not 1 <= (self.repeats or 0) <= 20:
            problems["repeats"] = "From 1 to 20."
        if self.source_id and not self.source.base_url:
            problems["source"] = "A judge's source is a model with an endpoint (a base URL) to ask."
        if problems:
            raise ValidationError(problems)

    def definition(self) -> dict:
        """The part of its rubric the judge answers (rubric_schema.part): its questions, or the whole rubric."""
        from .rubric_schema import part

        return part(self.rubric_version.definition, self.questions)

    def example_problems(self) -> list[str]:
        """Why a worked example's reply is not one a person could submit under the judge's rubric: the judge is
        shown it as the way to answer, so it passes the same validator as every rating (the item's text is the
        answer a span quotes; `groups` the item's factor groups, when the rubric asks about them)."""
        from .rubric_schema import ItemContext, questions, validate

        definition = self.definition()
        asked = {question["key"] for question in questions(definition)}
        problems = []
        for number, example in enumerate(self.examples, start=1):
            groups = example.get("groups") or []
            context = ItemContext(
                groups=tuple((g, g) for g in groups if isinstance(g, str)), answers=(example["item"],)
            )
            _, errors = validate(definition, example["reply"], context)
            said = [f"{key}: {' '.join(messages).rstrip('.')}" for key, messages in errors.items()]
            whose = "the judge's part of the rubric" if self.questions else "the rubric"
            said += [f"{key}: not a question of {whose}" for key in example["reply"] if key not in asked]
            if said:
                problems.append(f"Example {number}: " + "; ".join(said))
        return problems


class StudyJudge(models.Model):
    """A judge a study holds: the study's file names it under `judges`, and only a held judge replies about the
    study's items. A judge (source, recipe, rubric version, repeats) may serve several studies of its rubric
    version, as a rater pool serves several studies (studies/DESIGN.md, "Judges")."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="study_judges")
    judge = models.ForeignKey(Judge, on_delete=models.PROTECT, related_name="study_judges")

    class Meta:
        ordering = ["study", "judge__name"]
        constraints = [models.UniqueConstraint(fields=["study", "judge"], name="study_judge_unique")]

    def __str__(self) -> str:
        return f"{self.study} · {self.judge}"

    def clean(self) -> None:
        if self.study_id and self.judge_id and self.judge.rubric_version_id != self.study.rubric_version_id:
            raise ValidationError(
                {"judge": f"{self.judge} answers {self.judge.rubric_version}, not this study's rubric."}
            )


class JudgeReply(AppendOnly):
    """One reply of a judge to one item (one repeat, one display order), valid or not, with its provenance: the
    exact request sent, the raw reply, the model that answered, the latency and the validation errors (empty:
    the reply became a `JudgeRating`). Every reply is kept: an invalid one is asked again (bounded), each
    numbered by `attempt` per (judge, item, repeat, order)."""

    judge = models.ForeignKey(Judge, on_delete=models.PROTECT, related_name="replies")
    item = models.ForeignKey(StudyItem, on_delete=models.PROTECT, related_name="judge_replies")
    repeat = models.PositiveSmallIntegerField(help_text="0..repeats-1: which independent reply this is.")
    swap_answers = models.BooleanField(default=False, help_text="Two answers: the item's answer 2 shown first.")
    attempt = models.PositiveSmallIntegerField(default=0, help_text="0, 1, ...: replies to the same question before.")
    request = models.JSONField(help_text="The chat-completions request body exactly as sent.")
    raw_reply = models.TextField(help_text="The model's reply text as received.")
    model = models.CharField(max_length=200, blank=True, help_text="The model that answered, as the server named it.")
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    errors = models.JSONField(default=dict, blank=True, help_text="{question key or 'reply': [messages]}.")
    received_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["judge", "item", "repeat", "swap_answers", "attempt"]
        constraints = [
            models.UniqueConstraint(fields=["judge", "item", "repeat", "swap_answers", "attempt"],
                                    name="judge_reply_unique_attempt"),
        ]  # fmt: skip
        verbose_name_plural = "judge replies"

    def __str__(self) -> str:
        order = " swapped" if self.swap_answers else ""
        return f"{self.judge} · item {self.item_id} #{self.repeat}{order} (attempt {self.attempt})"

    @property
    def is_failure(self) -> bool:
        return bool(self.errors)


class JudgeRating(AppendOnly):
    """A judge's valid reply as a rating: the values `rubric_schema.validate` cleaned, as a person's rating
    stores them (a position `answer_1` / `answer_2` names the answer shown first / second)."""

    reply = models.OneToOneField(JudgeReply, on_delete=models.PROTECT, related_name="rating")
    judge = models.ForeignKey(Judge, on_delete=models.PROTECT, related_name="ratings")
    item = models.ForeignKey(StudyItem, on_delete=models.PROTECT, related_name="judge_ratings")
    repeat = models.PositiveSmallIntegerField()
    rubric_version = models.ForeignKey(RubricVersion, on_delete=models.PROTECT, related_name="judge_ratings")
    values = models.JSONField()
    swap_answers = models.BooleanField(default=False)
    submitted_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["judge", "item", "repeat", "swap_answers"]
        # One rating per question asked: each repeat asks a two-answer item in both orders.
        constraints = [
            models.UniqueConstraint(
                fields=["judge", "item", "repeat", "swap_answers"], name="judge_rating_unique_order"
            )
        ]

    def __str__(self) -> str:
        return f"{self.judge} · item {self.item_id} #{self.repeat}{' swapped' if self.swap_answers else ''}"
