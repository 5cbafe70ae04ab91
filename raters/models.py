"""Rater pools and rater profiles.

Roles (coordinator, analyst) are Django groups; a rater is a user with a RaterProfile.
"""

import secrets

from django.conf import settings
from django.contrib.auth.hashers import UNUSABLE_PASSWORD_PREFIX
from django.db import models


class RaterPool(models.Model):
    """A group of raters sharing expertise, e.g. physicians; exported as `rater_type`."""

    name = models.CharField(max_length=100, unique=True, help_text="Exported as rater_type, e.g. 'Physician'.")
    slug = models.SlugField(max_length=50, unique=True, help_text="Short role name, e.g. 'physician'.")
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


def new_pseudonym() -> str:
    return "R" + secrets.token_hex(5).upper()


class RaterProfileQuerySet(models.QuerySet):
    def signing_in(self):
        """Raters who sign in with their own active account and password. Not imported raters (inactive
        pseudonyms without a password, e.g. the demo's `sim-...`), nor crowd-panel participants, who arrive
        by the link of the one study they came for and draw their own items of it."""
        active = self.filter(user__is_active=True, panel_participant_id="")
        return active.exclude(user__password__startswith=UNUSABLE_PASSWORD_PREFIX)

    def assignable(self):
        """Raters a coordinator may hand items to: signing in, and not dropped out."""
        return self.signing_in().filter(dropped_out_at__isnull=True)


class RaterProfile(models.Model):
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="rater_profile")
    pool = models.ForeignKey(RaterPool, on_delete=models.PROTECT, related_name="raters")
    pseudonym = models.CharField(
        max_length=32, unique=True, default=new_pseudonym, help_text="Exported as rater_id; never a username."
    )
    # Crowd panels (e.g. Prolific's PROLIFIC_PID / STUDY_ID / SESSION_ID): how the participant arrived.
    panel_participant_id = models.CharField(max_length=100, blank=True, db_index=True)
    panel_study_id = models.CharField(max_length=100, blank=True)
    panel_session_id = models.CharField(max_length=100, blank=True)
    consented_at = models.DateTimeField(null=True, blank=True)
    onboarded_at = models.DateTimeField(null=True, blank=True, help_text="When the onboarding survey was completed.")
    completed_at = models.DateTimeField(null=True, blank=True, help_text="Panel participants: finished every item.")
    dropped_out_at = models.DateTimeField(null=True, blank=True, help_text="Recorded by a coordinator.")
    created_at = models.DateTimeField(auto_now_add=True)

    objects = RaterProfileQuerySet.as_manager()

    class Meta:
        ordering = ["pool", "pseudonym"]

    def __str__(self) -> str:
        return f"{self.pseudonym} ({self.pool})"


class DemographicOption(models.Model):
    """A category offered in the consumer onboarding survey; coordinators edit them in the admin.

    "Prefer not to say" is always offered in addition to these.
    """

    class Field(models.TextChoices):
        AGE_GROUP = "age_group", "Age group"
        GENDER = "gender", "Gender"
        RACE_ETHNICITY = "race_ethnicity", "Race / ethnicity"

    field = models.CharField(max_length=30, choices=Field.choices)
    label = models.CharField(max_length=100)
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["field", "position", "label"]
        constraints = [models.UniqueConstraint(fields=["field", "label"], name="demographic_option_unique")]

    def __str__(self) -> str:
        return f"{self.get_field_display()}: {self.label}"


PREFER_NOT_TO_SAY = "Prefer not to say"


class RaterBackground(models.Model):
    """What a rater told us at onboarding: professional background (experts) or demographics (consumers)."""

    profile = models.OneToOneField(RaterProfile, on_delete=models.CASCADE, related_name="background")
    years_in_practice = models.PositiveSmallIntegerField(null=True, blank=True)
    specialty = models.CharField(max_length=200, blank=True)
    country = models.CharField(max_length=100, blank=True)
    qualifications = models.TextField(blank=True, help_text="The qualifications the coordinator asked about.")
    age_group = models.CharField(max_length=100, blank=True)
    gender = models.CharField(max_length=100, blank=True)
    race_ethnicity = models.JSONField(default=list, blank=True, help_text="Every category the rater chose.")
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"Background of {self.profile}"


def new_invitation_token() -> str:
    return secrets.token_urlsafe(24)


class Invitation(models.Model):
    """A link a coordinator sends; whoever follows it creates an account in the pool (and study)."""

    token = models.CharField(max_length=64, unique=True, default=new_invitation_token)
    pool = models.ForeignKey(RaterPool, on_delete=models.CASCADE, related_name="invitations")
    study = models.ForeignKey("studies.Study", null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    note = models.CharField(max_length=200, blank=True, help_text="For whom, e.g. an e-mail address.")
    max_uses = models.PositiveIntegerField(default=1)
    uses = models.PositiveIntegerField(default=0)
    expires_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"Invitation to {self.pool} ({self.uses}/{self.max_uses})"
