"""Forms of the coordinator's study pages (the rating forms are built from rubrics in rubrics.py)."""

from django import forms

from datasets.models import AnswerSource, Dataset
from raters.models import RaterPool, RaterProfile

from .assignment import SOURCES
from .coordination import PoolSetting
from .models import RubricVersion, Study

REPLICATION_CHOICES = [
    (0, "Not taking part"),
    (1, "1 rating per item"),
    (3, "3 ratings per item"),
    (5, "5 ratings per item"),
]
# Only the consumer pool draws its own items (crowd panels), so only it has a per-rater share.
DRAWING_POOL = "consumer"
DISPLAY_NAMES = {"one_answer": "one answer", "two_answers": "two answers", "two_questions": "two questions"}


class RubricVersionChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, version):
        return f"{version} ({DISPLAY_NAMES.get(version.display, version.display)})"


class StudyForm(forms.ModelForm):
    """A new study: its rubric version, what to rate (datasets x sources) and how often each pool rates it.

    Everything else (instructions, consent text, panel return link, claim timeout) is edited in the admin.
    """

    rubric_version = RubricVersionChoiceField(
        queryset=RubricVersion.objects.select_related("rubric").order_by("rubric__name", "-number"),
        help_text="What it shows (one answer, two answers, two questions) decides what an item is.",
    )
    datasets = forms.ModelMultipleChoiceField(
        queryset=Dataset.objects.order_by("name"), widget=forms.CheckboxSelectMultiple
    )
    sources = forms.ModelMultipleChoiceField(
        queryset=AnswerSource.objects.order_by("name"),
        widget=forms.CheckboxSelectMultiple,
        label="Answer sources",
        help_text="One answer: one or more (one item per answer). Two answers: exactly two (one item per question "
        "both answered). Two questions: exactly one (one item per pair whose two questions it answered).",
    )

    class Meta:
        model = Study
        fields = ["name", "description", "rubric_version"]
        widgets = {"description": forms.Textarea(attrs={"rows": 3})}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.pools = list(RaterPool.objects.order_by("name"))
        for pool in self.pools:
            self.fields[f"replication_{pool.slug}"] = forms.TypedChoiceField(
                label="Ratings per item",
                choices=REPLICATION_CHOICES,
                coerce=int,
                initial=0,
            )
            if pool.slug == DRAWING_POOL:
                self.fields[f"items_per_rater_{pool.slug}"] = forms.IntegerField(
                    label="Items each participant draws",
                    required=False,
                    min_value=1,
                    help_text="Crowd-panel participants draw this many items when they arrive (10 if empty).",
                )

    def pool_fields(self) -> list[tuple[RaterPool, forms.BoundField, forms.BoundField | None]]:
        """(pool, replication field, items-per-rater field or None) for the template: one fieldset each."""
        return [
            (pool, self[f"replication_{pool.slug}"],
             self[f"items_per_rater_{pool.slug}"] if f"items_per_rater_{pool.slug}" in self.fields else None)
            for pool in self.pools
        ]  # fmt: skip

    def clean(self):
        data = super().clean()
        version, sources = data.get("rubric_version"), data.get("sources")
        if version is not None and sources is not None:
            if version.display not in SOURCES:
                self.add_error("rubric_version", "This rubric version does not say what an item shows.")
            else:
                fewest, most, message, _ = SOURCES[version.display]
                if len(sources) < fewest or (most is not None and len(sources) > most):
                    self.add_error("sources", message)
        if self.pools and not any(data.get(f"replication_{pool.slug}") for pool in self.pools):
            raise forms.ValidationError("Choose at least one rater pool to take part (a replication of 1, 3 or 5).")
        return data

    def pool_settings(self) -> list[PoolSetting]:
        data = self.cleaned_data
        return [
            PoolSetting(pool, data[f"replication_{pool.slug}"], data.get(f"items_per_rater_{pool.slug}"))
            for pool in self.pools
            if data[f"replication_{pool.slug}"]
        ]


class AssignForm(forms.Form):
    """Which pool's free slots to hand out; the pool is the button the coordinator pressed."""

    pool = forms.ModelChoiceField(queryset=RaterPool.objects.none())

    def __init__(self, *args, study: Study, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["pool"].queryset = RaterPool.objects.filter(study_pools__study=study)


class LockForm(forms.Form):
    confirm = forms.BooleanField(
        label="I understand that locking is final: no rating can be submitted or changed afterwards.",
        error_messages={"required": "Tick the box to confirm: a locked study cannot be unlocked."},
    )


class ReassignForm(forms.Form):
    to_rater = forms.ModelChoiceField(queryset=RaterProfile.objects.none(), label="Reassign to")

    def __init__(self, *args, candidates, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["to_rater"].queryset = candidates


def reassign_candidates(rater: RaterProfile):
    """Raters who could take over a rater's items: the same pool, assignable (they sign in, not dropped out)."""
    return RaterProfile.objects.assignable().filter(pool_id=rater.pool_id).exclude(pk=rater.pk).order_by("pseudonym")


class StudyFileForm(forms.Form):
    file = forms.FileField(
        label="Study file (YAML)",
        help_text="A study definition, as written by export_study or committed under studies/definitions/.",
    )
    new_version = forms.BooleanField(
        required=False,
        label="If the study has data and its file changed, make a new version beside it",
        help_text="Otherwise such a file is refused and nothing changes.",
    )
