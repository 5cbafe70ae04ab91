from django import forms
from django.conf import settings

from .importers.questions import FORMATS
from .models import AnswerSource, Dataset


class UploadForm(forms.Form):
    file = forms.FileField(help_text="UTF-8 CSV or JSONL.")

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if upload.size > settings.IMPORT_MAX_UPLOAD_BYTES:
            limit = settings.IMPORT_MAX_UPLOAD_BYTES // (1024 * 1024)
            raise forms.ValidationError(f"The file is larger than {limit} MB; import it with the command instead.")
        if upload.size == 0:
            raise forms.ValidationError("The file is empty.")
        return upload


class QuestionImportForm(UploadForm):
    dataset = forms.CharField(
        required=False,
        max_length=200,
        help_text="Leave empty for files whose name or format tells the dataset (e.g. equitymedqa_omaq.csv).",
    )
    format = forms.ChoiceField(choices=[(name, name) for name in FORMATS], initial="auto")
    question_column = forms.CharField(initial="question", max_length=100)
    id_column = forms.CharField(initial="id", max_length=100, required=False)
    pair_column = forms.CharField(
        required=False, max_length=100, help_text="Column with the second question of a counterfactual pair."
    )
    dataset_column = forms.CharField(required=False, max_length=100, help_text="Column naming each row's dataset.")

    def import_options(self) -> dict:
        data = self.cleaned_data
        return {
            "dataset": data["dataset"] or None,
            "format": data["format"],
            "question_column": data["question_column"],
            "id_column": data["id_column"] or "id",
            "pair_column": data["pair_column"] or None,
            "dataset_column": data["dataset_column"] or None,
        }


class AnswerImportForm(UploadForm):
    source = forms.CharField(max_length=200, help_text="Answer source name; created if it does not exist.")
    source_kind = forms.ChoiceField(choices=AnswerSource.Kind.choices, initial=AnswerSource.Kind.IMPORTED)
    model = forms.CharField(required=False, max_length=200)
    dataset = forms.CharField(required=False, max_length=200, help_text="Dataset of the questions.")
    question_id_column = forms.CharField(initial="question_id", max_length=100)
    question_column = forms.CharField(initial="question", max_length=100)
    answer_column = forms.CharField(initial="answer", max_length=100)
    provenance_note = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 2}), help_text="Where the answers came from."
    )

    def import_options(self) -> dict:
        data = self.cleaned_data
        keys = ["source", "source_kind", "model", "question_id_column", "question_column", "answer_column"]
        return {**{key: data[key] for key in keys}, "dataset": data["dataset"] or None,
                "provenance_note": data["provenance_note"]}  # fmt: skip


def generating_sources():
    """Sources a job can ask: model sources with an endpoint."""
    return AnswerSource.objects.filter(kind=AnswerSource.Kind.MODEL).exclude(base_url="").order_by("name")


class GenerationForm(forms.Form):
    dataset = forms.ModelChoiceField(queryset=Dataset.objects.order_by("name"))
    source = forms.ModelChoiceField(
        queryset=generating_sources(),
        label="Model source",
        help_text="Its current settings are frozen into the job; questions already answered with them are skipped.",
    )
