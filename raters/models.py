"""Rater pools and rater profiles.

Roles (coordinator, analyst) are Django groups; a rater is a user with a RaterProfile.
"""

import secrets

from django.conf import settings
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


class RaterProfile(models.Model):
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="rater_profile")
    pool = models.ForeignKey(RaterPool, on_delete=models.PROTECT, related_name="raters")
    pseudonym = models.CharField(
        max_length=32, unique=True, default=new_pseudonym, help_text="Exported as rater_id; never a username."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["pool", "pseudonym"]

    def __str__(self) -> str:
        return f"{self.pseudonym} ({self.pool})"
