"""The three rubrics as forms: wording from a RubricVersion, rules and option keys fixed here.

The rules (shared/spec/rubrics.md, "Validation"): a conditional item is required exactly when its
condition holds and must be empty otherwise; nothing from an invalid submission is stored.
"""

from django import forms
from django.conf import settings

from config.storable import validate_storable_text

from .models import RubricKind

OTHER = "other_bias"

# The option keys each kind's wording must label; the stored values use these keys.
OPTION_KEYS = {
    RubricKind.INDEPENDENT: {"bias_options": ["no_bias", "minor_bias", "severe_bias"]},
    RubricKind.PAIRWISE: {"preference_options": ["answer_1", "answer_2", "tie"]},
    RubricKind.COUNTERFACTUAL: {
        "ideal_options": ["yes", "no", "unsure"],
        "difference_options": ["similar", "syntax", "content", "significant"],
        "bias_options": ["yes", "no"],
    },
}
TEXT_KEYS = {
    RubricKind.INDEPENDENT: ["bias_question", "dimensions_question"],
    RubricKind.PAIRWISE: ["preference_question", "dimensions_question"],
    RubricKind.COUNTERFACTUAL: ["ideal_question", "difference_question", "bias_question", "dimensions_question"],
}
COMMON_TEXT_KEYS = ["axes_examples", "other_label", "other_text_label", "comment_label"]
DIMENSION_KEYS = [
    "inaccuracy_for_some_axes",
    "not_inclusive_for_some_axes",
    "stereotypical_language_characterization",
    "omits_systemic_explanation",
    "failure_to_challenge",
    "potential_for_disproportionate",
]


def definition_problems(kind: str, definition) -> list[str]:
    """What a rubric definition lacks for its kind (wording may change; keys may not)."""
    if not isinstance(definition, dict):
        return ["the definition must be a JSON object"]
    problems = [f"missing text {key!r}" for key in COMMON_TEXT_KEYS + TEXT_KEYS[kind] if not definition.get(key)]
    for options_key, keys in OPTION_KEYS[kind].items():
        options = definition.get(options_key)
        if not isinstance(options, dict) or sorted(options) != sorted(keys):
            problems.append(f"{options_key!r} must label exactly these options: {', '.join(keys)}")
    dimensions = definition.get("dimensions")
    if not isinstance(dimensions, list) or [d.get("key") for d in dimensions if isinstance(d, dict)] != DIMENSION_KEYS:
        problems.append(f"'dimensions' must list the six dimensions in order, with keys {', '.join(DIMENSION_KEYS)}")
    elif not all(d.get("label") for d in dimensions):
        problems.append("every dimension needs a label")
    return problems


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
    kind = RubricKind.INDEPENDENT
    gate_field = "bias_presence"
    gate_no_bias = {"no_bias"}

    def add_fields(self) -> None:
        self.choice("bias_presence", "bias_question", "bias_options")


class PairwiseForm(RatingForm):
    kind = RubricKind.PAIRWISE
    gate_field = "preference"
    gate_no_bias = {"tie"}

    def add_fields(self) -> None:
        self.choice("preference", "preference_question", "preference_options")


class CounterfactualForm(RatingForm):
    kind = RubricKind.COUNTERFACTUAL
    gate_field = "bias_presence"
    gate_no_bias = {"no"}

    def add_fields(self) -> None:
        self.choice("ideal_answers_differ", "ideal_question", "ideal_options")
        ideal_comment_label = self.definition.get("ideal_comment_label", "Comments (optional)")
        self.fields["ideal_comment"] = free_text(ideal_comment_label, rows=2)
        self.choice("answers_differ_how", "difference_question", "difference_options")
        self.choice("bias_presence", "bias_question", "bias_options")


FORMS = {RubricKind.INDEPENDENT: IndependentForm, RubricKind.PAIRWISE: PairwiseForm,
         RubricKind.COUNTERFACTUAL: CounterfactualForm}  # fmt: skip


def rating_form(rubric_version, data=None, initial=None) -> RatingForm:
    return FORMS[rubric_version.kind](data=data, initial=initial, definition=rubric_version.definition)
