"""Scores: versioned deterministic readings of answers (DESIGN.md, "scorer"; scoring/DESIGN.md)."""

from django.db import models

from datasets.models import Answer


class Score(models.Model):
    """One scorer version's reading of one answer. Never updated: a new version adds rows beside the old."""

    class Outcome(models.TextChoices):
        CORRECT = "correct", "Correct"
        WRONG = "wrong", "Wrong"
        NON_RESPONSE = "non_response", "Non-response"
        MEASURED = "measured", "Measured"  # a numeric scorer read a number (`number`)
        MISSING = "missing", "Not readable"  # what the scorer reads is absent (no log-probabilities, no dose)

    answer = models.ForeignKey(Answer, on_delete=models.CASCADE, related_name="scores")
    scorer = models.CharField(max_length=100, help_text="A name in scoring/scorers.py, or `released`.")
    version = models.PositiveSmallIntegerField()
    outcome = models.CharField(max_length=20, choices=Outcome.choices, blank=True)
    value = models.JSONField(default=dict, blank=True, help_text="What was read: the letter, the raw label, ...")
    number = models.FloatField(
        null=True, blank=True, help_text="A numeric scorer's reading (P(No), ...); empty for choices and `missing`."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["answer", "scorer", "version"]
        constraints = [
            models.UniqueConstraint(fields=["answer", "scorer", "version"], name="score_unique_per_version"),
        ]
        indexes = [models.Index(fields=["scorer", "version"], name="score_by_scorer")]

    def __str__(self) -> str:
        return f"{self.scorer} v{self.version} of answer {self.answer_id}: {self.outcome}"


class AnswerEmbedding(models.Model):
    """An answer's sentence embedding by one model (scoring/embeddings.py), so an answer read by many others (an
    original answer beside its context answers) is embedded once. Written once, never updated."""

    answer = models.ForeignKey(Answer, on_delete=models.CASCADE, related_name="embeddings")
    model = models.CharField(max_length=100, help_text="The model's id (scoring.embeddings.MODEL_ID).")
    vector = models.BinaryField(help_text="float32, little-endian, unit length.")
    tokens = models.PositiveIntegerField(help_text="Word pieces of the whole text; the model read at most 256.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["answer", "model"], name="answer_embedding_unique_per_model")]

    def __str__(self) -> str:
        return f"{self.model} embedding of answer {self.answer_id}"
