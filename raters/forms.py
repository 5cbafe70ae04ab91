from django import forms
from django.contrib.auth.forms import UserCreationForm
from django.core.validators import RegexValidator

from .models import PREFER_NOT_TO_SAY, DemographicOption
from .services import PANEL_USERNAME_PREFIX


class JoinForm(UserCreationForm):
    """Username and password, checked like any Django account; services.accept_invitation creates it."""

    def clean_username(self):
        username = super().clean_username()
        if username and username.lower().startswith(PANEL_USERNAME_PREFIX):
            raise forms.ValidationError(f"Usernames starting with “{PANEL_USERNAME_PREFIX}” are reserved.")
        return username


panel_id = RegexValidator(r"^[A-Za-z0-9_-]+\Z", "Only letters, digits, “-” and “_” are expected.")


class PanelEntryForm(forms.Form):
    """The query string a crowd panel (Prolific's names) appends to the study link."""

    PROLIFIC_PID = forms.CharField(max_length=100, validators=[panel_id])
    STUDY_ID = forms.CharField(max_length=100, required=False, validators=[panel_id])
    SESSION_ID = forms.CharField(max_length=100, required=False, validators=[panel_id])
    # A resume link's signature (studies.panel.panel_resume_path); checked by studies.panel.resume_token_valid.
    resume = forms.CharField(max_length=300, required=False)


class ConsentForm(forms.Form):
    agree = forms.BooleanField(
        label="I agree",
        error_messages={"required": "Tick “I agree” to take part. If you do not agree, you can close this page."},
    )


class ExpertBackgroundForm(forms.Form):
    years_in_practice = forms.IntegerField(
        min_value=0,
        max_value=80,
        label="Years in practice",
        help_text="Since you completed your professional training; 0 if still in training.",
    )
    specialty = forms.CharField(
        max_length=200, help_text="For example family medicine, cardiology or health equity research."
    )
    country = forms.CharField(max_length=100, label="Country where you practise")
    qualifications = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 30}),
        help_text="Degrees, certifications or training relevant to this study.",
    )


def demographic_choices(field: str) -> list[tuple[str, str]]:
    """The coordinator's options for a survey question, always followed by "Prefer not to say"."""
    labels = DemographicOption.objects.filter(field=field).exclude(label__iexact=PREFER_NOT_TO_SAY)
    return [(label, label) for label in labels.values_list("label", flat=True)] + [
        (PREFER_NOT_TO_SAY, PREFER_NOT_TO_SAY)
    ]


class DemographicsForm(forms.Form):
    age_group = forms.ChoiceField(
        label="Your age group",
        widget=forms.RadioSelect,
        error_messages={"required": "Choose your age group, or “Prefer not to say”."},
    )
    gender = forms.ChoiceField(
        label="Your gender",
        widget=forms.RadioSelect,
        error_messages={"required": "Choose your gender, or “Prefer not to say”."},
    )
    race_ethnicity = forms.MultipleChoiceField(
        label="Your race or ethnicity",
        help_text="Choose all that apply.",
        widget=forms.CheckboxSelectMultiple,
        error_messages={"required": "Choose at least one answer, or “Prefer not to say”."},
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name, field in self.fields.items():
            field.choices = demographic_choices(name)

    def clean_race_ethnicity(self):
        chosen = self.cleaned_data["race_ethnicity"]
        if PREFER_NOT_TO_SAY in chosen and len(chosen) > 1:
            raise forms.ValidationError(
                "“Prefer not to say” cannot be combined with other answers: untick it, or untick the others."
            )
        return chosen
