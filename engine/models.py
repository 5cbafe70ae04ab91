"""Endpoints, their lanes, and the calls made to them (engine/DESIGN.md)."""

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models

from config import key_hosts


class Endpoint(models.Model):
    """An OpenAI-compatible endpoint and its limits, which hold across every kind of work sent to it."""

    name = models.CharField(max_length=200, unique=True)
    base_url = models.URLField(help_text="e.g. https://api.openai.com/v1 or http://127.0.0.1:8080/v1")
    api_key_env = models.CharField(
        max_length=100, blank=True, help_text="Name of the environment variable holding the API key (never the key)."
    )
    request_timeout_seconds = models.FloatField(default=120.0, validators=[MinValueValidator(0.1)])
    concurrency = models.PositiveSmallIntegerField(
        default=4, validators=[MinValueValidator(1)], help_text="Requests in flight at once, all kinds together."
    )
    rate_limit_per_minute = models.PositiveIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1)], help_text="Empty: no limit."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        if self.api_key_env:
            try:
                key_hosts.check_variable_name(self.api_key_env)
                key_hosts.check_key_destination(
                    variable=self.api_key_env, url=self.base_url, bindings=settings.MODEL_KEY_HOSTS
                )
            except key_hosts.KeyNotAllowed as error:
                raise ValidationError({error.field: str(error)}) from None


class Call(models.Model):
    """One request of some kind of work: claimed by a lane of its endpoint, made, stored, retried or failed."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "In flight"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    kind = models.CharField(max_length=50, help_text="A registered kind of work, e.g. 'answer'.")
    endpoint = models.ForeignKey(Endpoint, on_delete=models.CASCADE, related_name="calls")
    subject = models.JSONField(default=dict, help_text="What the kind needs to find its work, e.g. {'task': 12}.")
    batch = models.CharField(max_length=100, blank=True, help_text="The kind's label, e.g. 'generation-job:5'.")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0, help_text="Requests started for this call.")
    not_before = models.DateTimeField(null=True, blank=True, help_text="Back-off: not retried before this time.")
    lease_expires_at = models.DateTimeField(
        null=True, blank=True, help_text="While in flight: after this time the worker is presumed dead."
    )
    claimed_by = models.CharField(max_length=200, blank=True)
    error = models.TextField(blank=True, help_text="The last error, in the server's words.")
    history = models.JSONField(default=list, blank=True, help_text="[{at, attempt, error}] for every failed attempt.")
    request = models.JSONField(null=True, blank=True, help_text="The last request body sent.")
    result = models.JSONField(null=True, blank=True, help_text="What the kind kept, e.g. {'answer': 7}.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(fields=["endpoint", "status", "id"], name="engine_call_claim"),
            models.Index(fields=["kind", "batch"], name="engine_call_batch"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} call {self.pk} ({self.status})"


class Lane(models.Model):
    """One of an endpoint's `concurrency` request slots, held by at most one running Celery task.

    A task holds a lane by writing its token and refreshing the heartbeat; a lane whose heartbeat is older
    than the endpoint's request timeout plus a margin belonged to a worker that died, and may be taken over.
    """

    endpoint = models.ForeignKey(Endpoint, on_delete=models.CASCADE, related_name="lanes")
    index = models.PositiveSmallIntegerField()
    token = models.CharField(max_length=32, blank=True)
    holder = models.CharField(max_length=200, blank=True, help_text="Host and process of the task holding it.")
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["endpoint", "index"]
        constraints = [models.UniqueConstraint(fields=["endpoint", "index"], name="engine_lane_unique_index")]

    def __str__(self) -> str:
        return f"{self.endpoint} lane {self.index}"
