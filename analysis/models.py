from django.db import models

from jobs.models import Job

# The report's four tables: URL and file name (`<name>.csv`) -> the field holding its CSV text.
TABLE_FIELDS = {
    "rates": "rates_csv",
    "reliability": "reliability_csv",
    "counterfactual_crosstab": "crosstab_csv",
    "consumer_regression": "regression_csv",
}


class AnalysisRun(Job):
    """One analysis report (analysis/DESIGN.md), computed by a Celery task from the ratings as they were then.

    The tables are kept as the CSV text `analyze` writes, on the row, so that any web process can show and
    serve them whichever worker computed them.
    """

    class Status(models.TextChoices):
        QUEUED = "queued", "Waiting for a worker"
        RUNNING = "running", "Running"
        DONE = "done", "Finished"
        FAILED = "failed", "Failed"

    study = models.ForeignKey(
        "studies.Study",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="analysis_runs",
        help_text="Empty: the ratings of every study.",
    )
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED)
    progress = models.PositiveSmallIntegerField(default=0, help_text="Percent done, 0-100.")
    step = models.CharField(max_length=200, blank=True, help_text="What the run is doing now.")
    seed = models.PositiveIntegerField(default=0, help_text="Seed of the bootstrap: the same seed, the same CIs.")
    reference_levels = models.JSONField(
        default=dict, blank=True, help_text="Consumer regression reference level per predictor, as chosen."
    )
    ratings = models.JSONField(default=dict, blank=True, help_text="Ratings analysed per rubric kind.")
    rates_csv = models.TextField(blank=True)
    reliability_csv = models.TextField(blank=True)
    crosstab_csv = models.TextField(blank=True)
    regression_csv = models.TextField(blank=True)
    plan_tables = models.JSONField(
        default=dict, blank=True, help_text="Each analysis plan's tables (DESIGN.md): {file name: CSV text}."
    )
    extra_tables = models.JSONField(
        default=dict,
        blank=True,
        help_text="Tables the authors' analysis shows beside the four (analysis/notebook_extras.py): {file name: CSV "
        "text}, only those with rows.",
    )
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"Analysis {self.pk} of {self.scope} ({self.get_status_display()})"

    @property
    def scope(self) -> str:
        return self.study.name if self.study_id else "all studies"

    def table_csv(self, name: str) -> str:
        return getattr(self, TABLE_FIELDS[name])
