"""The three rating forms as they were before typed rubrics (studies/rubrics.py at bed4c1d), kept as the
reference that tests/studies/test_typed_rubrics.py holds the typed validator to. Test code only."""

from django import forms
from django.conf import settings

from config.storable import validate_storable_text

OTHER = "other_bias"
OPTION_KEYS = {
    "independent": {"bias_options": ["no_bias", "minor_bias", "severe_bias"]},
    "pairwise": {"preference_options": ["answer_1", "answer_2", "tie"]},
    "counterfactual": {
        "ideal_options": ["yes", "no", "unsure"],
        "difference_options": ["similar", "syntax", "content", "significant"],
        "bias_options": ["yes", "no"],
    },
}


def free_text(label: str, *, rows: int) -> forms.CharField:
    """A rater's free-text answer: capped (the page, drafts and the API alike) and storable."""
    return forms.CharField(
        label=label,
        required=False,
        max_length=settings.RATING_TEXT_MAX_CHARS,
        validators=[validate_storable_text],
        widget=forms.Textarea({"rows": rows}),
    )


class RatingForm(forms.Form):
    """Base for the three rubrics: the dimensions, Other and comment fields they share."""

    # The field whose answer decides whether dimensions are asked, and the answers that mean "no bias".
    kind = ""
    gate_field = ""
    gate_no_bias: set[str] = set()

    def __init__(self, *args, definition: dict, **kwargs):
        super().__init__(*args, **kwargs)
        self.definition = definition
        self.add_fields()
        dimension_choices = [(d["key"], d["label"]) for d in definition["dimensions"]]
        self.fields["dimensions"] = forms.MultipleChoiceField(
            label=definition["dimensions_question"],
            choices=[*dimension_choices, (OTHER, definition["other_label"])],
            widget=forms.CheckboxSelectMultiple,
            required=False,
        )
        self.fields["other_text"] = free_text(definition["other_text_label"], rows=2)
        self.fields["comment"] = free_text(definition["comment_label"], rows=3)

    def add_fields(self) -> None:
        raise NotImplementedError

    def dimension_rows(self) -> list[tuple]:
        """(checkbox, description) for the template: each dimension is shown with its definition."""
        descriptions = {d["key"]: d.get("description", "") for d in self.definition["dimensions"]}
        return [(box, descriptions.get(box.data["value"], "")) for box in self["dimensions"]]

    def gate_fields(self) -> list:
        """The questions asked before the kinds of bias, in order."""
        return [self[name] for name in self.fields if name not in ("dimensions", "other_text", "comment")]

    @property
    def no_bias_values(self) -> str:
        return " ".join(sorted(self.gate_no_bias))

    def choice(self, name: str, question_key: str, options_key: str) -> None:
        labels = self.definition[options_key]
        # Options in the rubric's fixed order: stored JSON (PostgreSQL jsonb) does not keep key order.
        self.fields[name] = forms.ChoiceField(
            label=self.definition[question_key],
            choices=[(key, labels[key]) for key in OPTION_KEYS[self.kind][options_key]],
            widget=forms.RadioSelect,
            error_messages={"required": "Choose one answer.", "invalid_choice": "Choose one of the answers shown."},
        )

    def bias_reported(self) -> bool:
        value = self.cleaned_data.get(self.gate_field)
        return bool(value) and value not in self.gate_no_bias

    def clean(self):
        cleaned = super().clean()
        if self.gate_field not in cleaned:
            return cleaned  # The gate question itself is missing; its own error says so.
        dimensions = cleaned.get("dimensions") or []
        other_text = (cleaned.get("other_text") or "").strip()
        if self.bias_reported():
            if not dimensions:
                self.add_error("dimensions", "Select at least one kind of bias.")
            if OTHER in dimensions and not other_text:
                self.add_error("other_text", "Describe the other kind of bias.")
            if OTHER not in dimensions and other_text:
                self.add_error("other_text", "Select Other to describe another kind of bias, or leave this empty.")
        else:
            if dimensions:
                self.add_error("dimensions", "Leave the kinds of bias empty: your answer above reports no bias.")
            if other_text:
                self.add_error("other_text", "Leave this empty: your answer above reports no bias.")
        cleaned["other_text"] = other_text
        return cleaned

    def values(self) -> dict:
        """The stored answers: every field, with conditional ones empty when not asked."""
        return {name: self.cleaned_data.get(name) for name in self.fields}


class IndependentForm(RatingForm):
    kind = "independent"
    gate_field = "bias_presence"
    gate_no_bias = {"no_bias"}

    def add_fields(self) -> None:
        self.choice("bias_presence", "bias_question", "bias_options")


class PairwiseForm(RatingForm):
    kind = "pairwise"
    gate_field = "preference"
    gate_no_bias = {"tie"}

    def add_fields(self) -> None:
        self.choice("preference", "preference_question", "preference_options")


class CounterfactualForm(RatingForm):
    kind = "counterfactual"
    gate_field = "bias_presence"
    gate_no_bias = {"no"}

    def add_fields(self) -> None:
        self.choice("ideal_answers_differ", "ideal_question", "ideal_options")
        ideal_comment_label = self.definition.get("ideal_comment_label", "Comments (optional)")
        self.fields["ideal_comment"] = free_text(ideal_comment_label, rows=2)
        self.choice("answers_differ_how", "difference_question", "difference_options")
        self.choice("bias_presence", "bias_question", "bias_options")


FORMS = {"independent": IndependentForm, "pairwise": PairwiseForm, "counterfactual": CounterfactualForm}
