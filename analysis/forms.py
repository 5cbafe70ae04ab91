from django import forms

from studies.models import Study

from .regression import DECLINED

# Consumer regression predictors (release columns) and how the form names them.
PREDICTORS = {
    "rater_age_group": "Age group",
    "rater_gender": "Gender",
    "rater_race_ethnicity": "Race/ethnicity",
}


FOREIGN = "; not a panel category"


def _ratings(n: int) -> str:
    return f"{n} rating" if n == 1 else f"{n} ratings"


def _studies():
    return Study.objects.order_by("name")


class StudyForm(forms.Form):
    """Whose ratings (GET): the run form below it lists the reference levels of that study's consumers."""

    study = forms.ModelChoiceField(
        _studies(),
        required=False,
        empty_label="All studies",
        label="Ratings of",
        help_text="The ratings of one study, or of every study together.",
    )


class RunAnalysisForm(forms.Form):
    """Which ratings to analyse (the study chosen above, a hidden field), and the consumer regression's reference
    levels among the levels present in that study's consumer ratings."""

    study = forms.ModelChoiceField(_studies(), required=False, widget=forms.HiddenInput)

    def __init__(
        self, *args, levels: dict[str, list[tuple[str, int]]], panel: dict[str, set[str]] | None = None, **kwargs
    ):
        """levels: per predictor, the levels present with their number of consumer ratings, most frequent first.
        panel: per predictor, the categories the panel form offers; a level outside them (an imported file's
        "18-29") is labelled so, never merged with a panel category it overlaps (DESIGN.md, "Consumer regression:
        levels")."""
        super().__init__(*args, **kwargs)
        for predictor, label in PREDICTORS.items():
            present = levels.get(predictor, [])
            offered = None if panel is None else panel.get(predictor, set())
            choices = [("", "Most frequent level")] + [
                (level, f"{level} ({_ratings(n)}{'' if offered is None or level in offered else FOREIGN})")
                for level, n in present
            ]
            answered = [level for level, _ in present if level != DECLINED]
            self.fields[predictor] = forms.ChoiceField(
                label=label,
                choices=choices,
                required=False,
                initial=answered[0] if answered else "",
                error_messages={"invalid_choice": "%(value)s is not a level of the chosen study's consumers."},
            )

    def reference_levels(self) -> dict[str, str]:
        return {predictor: level for predictor in PREDICTORS if (level := self.cleaned_data.get(predictor))}

    def regression_fields(self):
        return [self[predictor] for predictor in PREDICTORS]


class RatesFilterForm(forms.Form):
    """GET filters of the rates table. Choices are the values the table holds; a missing or unknown value
    falls back to the default, so the form always shows what the table below it shows."""

    rubric = forms.ChoiceField(required=False)
    dataset = forms.ChoiceField(required=False)
    aggregation = forms.ChoiceField(required=False)

    def __init__(self, query, *, values: dict[str, list[str]], defaults: dict[str, str]):
        chosen = {}
        for name, present in values.items():
            value = query.get(name)
            chosen[name] = value if value == "" or value in present else defaults.get(name, "")
        super().__init__(chosen)
        for name, present in values.items():
            self.fields[name].choices = [("", "All"), *((value, value) for value in present)]
        self.chosen = chosen
