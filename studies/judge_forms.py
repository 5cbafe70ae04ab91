"""The judge set-up form (coordinators): a judge of one study's rubric version. `Judge.clean` checks the recipe
(shown fields, the rubric's questions it answers, examples through the rubric's own validator, repeats, a
source with an endpoint); a judge with replies keeps its recipe and name (what its replies mean) and may only
make more repeats."""

from django import forms
from django.core.exceptions import ValidationError

from datasets.models import AnswerSource

from . import rubric_schema
from .models import SHOWN_FIELDS, Judge, Study

FIXED_AFTER_REPLIES = ("name", "source", "instructions", "shown_fields", "examples", "questions")


class JudgeForm(forms.ModelForm):
    shown_fields = forms.MultipleChoiceField(
        choices=[(name, name) for name in SHOWN_FIELDS],
        widget=forms.CheckboxSelectMultiple,
        help_text="What the judge sees of an item: its question, its answer(s), its factor groups.",
    )
    questions = forms.MultipleChoiceField(
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="The rubric's questions the judge answers (none chosen: all of them), e.g. one of MEDIC's three "
        "judge prompts. Its request, JSON Schema and the check of its replies use only these.",
    )
    examples = forms.JSONField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 6}),
        help_text='Optional worked examples, a JSON list: [{"item": "text", "reply": {"question key": answer}, '
        '"groups": [...]}]. Each reply must be one a person could submit under the rubric.',
    )

    class Meta:
        model = Judge
        fields = ["name", "source", "instructions", "shown_fields", "questions", "repeats", "examples"]
        widgets = {"instructions": forms.Textarea(attrs={"rows": 5})}
        labels = {"source": "Model source"}

    def __init__(self, *args, study: Study, replied: int = 0, **kwargs):
        super().__init__(*args, **kwargs)
        self.instance.rubric_version = study.rubric_version
        self.replied = replied
        self.rubric_keys = [q["key"] for q in rubric_schema.questions(study.rubric_version.definition)]
        self.fields["questions"].choices = [
            (q["key"], f"{q['key']}: {q['label']}") for q in rubric_schema.questions(study.rubric_version.definition)
        ]
        self.fields["source"].queryset = AnswerSource.objects.filter(kind=AnswerSource.Kind.MODEL).order_by("name")
        if replied:
            for name in FIXED_AFTER_REPLIES:
                self.fields[name].disabled = True
            replies = f"{replied} repl{'y' if replied == 1 else 'ies'}"
            self.fields["repeats"].help_text = f"The judge has {replies}: it may make more repeats, not fewer."

    def clean_shown_fields(self) -> list[str]:
        chosen = set(self.cleaned_data["shown_fields"])
        return [name for name in SHOWN_FIELDS if name in chosen]  # the order the request shows them in

    def clean_questions(self) -> list[str]:
        chosen = set(self.cleaned_data["questions"])
        if chosen == set(self.rubric_keys):
            return []  # every question: the same judge as one naming none
        return [key for key in self.rubric_keys if key in chosen]  # the rubric's order

    def clean_examples(self):
        examples = self.cleaned_data["examples"]
        return [] if examples is None else examples

    def clean_repeats(self) -> int:
        repeats = self.cleaned_data["repeats"]
        if self.replied and self.instance.pk and repeats < Judge.objects.get(pk=self.instance.pk).repeats:
            raise ValidationError("A judge with replies may make more repeats, not fewer: its replies would lose "
                                  "their place.")  # fmt: skip
        return repeats
