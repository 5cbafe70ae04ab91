from django import forms
from django.conf import settings

from . import answer_links, recipe_pages, recipes
from . import variant_pages as variant_registry
from .importers.questions import FORMATS, QuestionOptions, needs_dataset_name
from .models import AnswerSource, Dataset, PromptRecipe
from .variants import MAX_LIMIT, MAX_SEED, MIN_SEED


class StudyChoiceMixin(forms.Form):
    """A job's or an import's study: each answer it creates or finds then belongs to that study."""

    study = forms.TypedChoiceField(
        coerce=int, required=False, empty_value=None, choices=[],
        help_text="The study the answers are for: each answer made or found is linked to it. Empty: no study.",
    )  # fmt: skip

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["study"].choices = [("", "No study"), *answer_links.study_choices()]
        self.order_fields([name for name in self.fields if name != "study"] + ["study"])

    def job_options(self) -> dict:
        """The cleaned data as `start_job` takes it (the study by its id)."""
        options = dict(self.cleaned_data)
        options["study_id"] = options.pop("study")
        return options


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


# How much of an upload the form reads to tell its format (a header line, a first JSON record).
DETECTION_BYTES = 64 * 1024
NAME_THE_DATASET = (
    "Name the dataset: neither this file's name nor its columns say which dataset its questions belong to. "
    "Type the dataset's name here, or give a dataset column."
)


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

    def clean(self):
        """A file that will need a dataset name is refused now, not once its import has been queued."""
        data = super().clean()
        upload = data.get("file")
        if upload is not None and not self.errors:
            head = next(upload.chunks(DETECTION_BYTES), b"")
            if needs_dataset_name(head, upload.name, QuestionOptions(**self.import_options())):
                self.add_error("dataset", NAME_THE_DATASET)
        return data


class AnswerImportForm(StudyChoiceMixin, UploadForm):
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
                "provenance_note": data["provenance_note"], "study": data["study"]}  # fmt: skip


def generating_sources():
    """Sources a job can ask: model sources with an endpoint."""
    return AnswerSource.objects.filter(kind=AnswerSource.Kind.MODEL).exclude(base_url="").order_by("name")


class GenerationForm(StudyChoiceMixin):
    dataset = forms.ModelChoiceField(queryset=Dataset.objects.order_by("name"))
    source = forms.ModelChoiceField(
        queryset=generating_sources(),
        label="Model source",
        help_text="Its current settings are frozen into the job; questions already answered with them are skipped.",
    )


# The groups the page shows as fieldsets, in order: (legend, hint, fields).
SOURCE_GROUPS = [
    ("The source", "", ["name", "kind", "description"]),
    ("Endpoint (OpenAI-compatible chat completions)",
     "The API key is never stored: name the environment variable that holds it. The server sends it only to "
     "the hosts the MODEL_KEY_HOSTS setting binds that variable to.",
     ["base_url", "model_name", "api_key_env", "request_timeout_seconds", "concurrency", "rate_limit_per_minute"]),
    ("What each request asks",
     "Sent with each request to this source (a recipe's own prompt and settings replace these in its jobs). "
     "A job freezes them when it starts, so a change makes a new set of answers.",
     ["temperature", "max_tokens", "system_prompt", "prompt_template", "logprobs", "top_logprobs"]),
    ("Judges", "", ["structured_output"]),
]  # fmt: skip


class AnswerSourceForm(forms.ModelForm):
    """A source's settings, each in one place. What a request sends is the typed fields (temperature, max
    tokens, ...); the model's free-form `parameters` is never sent, so the form leaves it out (the page shows it,
    read-only, when a source has some). The key itself is never asked for nor shown: only its variable's name."""

    class Meta:
        model = AnswerSource
        fields = [name for _legend, _hint, names in SOURCE_GROUPS for name in names]
        widgets = {
            "description": forms.Textarea(attrs={"rows": 2}),
            "system_prompt": forms.Textarea(attrs={"rows": 3}),
            "prompt_template": forms.Textarea(attrs={"rows": 3}),
        }

    def groups(self) -> list[tuple[str, str, list]]:
        return [(legend, hint, [self[name] for name in names]) for legend, hint, names in SOURCE_GROUPS]


# --- Prompt recipes and variant runs -------------------------------------------------------------

RECIPE_JSON_FIELDS = ("level_texts", "examples", "condition", "stop")


class RecipeJSONField(forms.JSONField):
    """A recipe's JSON setting typed in a textarea: invalid JSON says where, and the shape is checked."""

    default_error_messages = {"invalid": 'This is not valid JSON: check quotes ("), commas and brackets.'}

    def __init__(self, *, name: str, **kwargs):
        self.setting = name
        super().__init__(**kwargs)

    def to_python(self, value):
        if value in self.empty_values:
            return [] if self.setting in {"examples", "stop"} else {}
        return super().to_python(value)

    def validate(self, value):
        super().validate(value)
        if problem := recipe_pages.json_field_problem(self.setting, value):
            raise forms.ValidationError(problem)


class PromptRecipeForm(forms.ModelForm):
    """Every setting of a recipe; on save the templates are rendered against a sample question."""

    class Meta:
        model = PromptRecipe
        fields = ["name", "description", "mode", "system_prompt", "prompt_role", "instruction", "level_factor",
                  "level_texts", "item_template", "options_format", "options_separator", "examples", "examples_pool",
                  "examples_match_factor", "examples_seed", "examples_holdout", "examples_from_evaluated",
                  "examples_footer", "condition", "stop", "logprobs", "top_logprobs", "max_tokens",
                  "temperature"]  # fmt: skip
        widgets = {
            "description": forms.Textarea(attrs={"rows": 2}),
            "system_prompt": forms.Textarea(attrs={"rows": 2}),
            "instruction": forms.Textarea(attrs={"rows": 4}),
            "item_template": forms.Textarea(attrs={"rows": 3}),
            "examples_footer": forms.Textarea(attrs={"rows": 2}),
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name in RECIPE_JSON_FIELDS:
            model_field = PromptRecipe._meta.get_field(name)
            self.fields[name] = RecipeJSONField(
                name=name,
                required=False,
                help_text=recipe_pages.EXAMPLES_HELP if name == "examples" else model_field.help_text,
                widget=forms.Textarea(attrs={"rows": 6 if name in {"level_texts", "examples"} else 2}),
            )
        self.fields["examples_pool"].queryset = Dataset.objects.order_by("name")
        self.fields["max_tokens"].min_value = 1
        # Added after recipes were first posted: a form that leaves them out keeps their defaults.
        self.fields["prompt_role"].required = False
        self.fields["examples_holdout"].required = False
        # A recipe's text is sent as typed: no stripping of the spaces a template may end with.
        for name in ("instruction", "item_template", "options_format", "options_separator", "examples_footer",
                     "system_prompt"):  # fmt: skip
            self.fields[name].strip = False

    def clean_prompt_role(self):
        return self.cleaned_data.get("prompt_role") or PromptRecipe.PromptRole.USER

    def clean_examples_holdout(self):
        value = self.cleaned_data.get("examples_holdout")
        return 0.0 if value is None else value

    def _post_clean(self):
        super()._post_clean()
        if self.errors:
            return
        try:
            recipe_pages.check_recipe(self.instance)
        except recipes.RecipeError as error:
            self.add_error(recipe_pages.error_field(error), str(error))


class RecipePreviewForm(forms.Form):
    """Which question to preview (GET: nothing is sent anywhere)."""

    dataset = forms.ModelChoiceField(queryset=Dataset.objects.order_by("name"))
    external_id = forms.CharField(
        required=False,
        max_length=200,
        label="Question id",
        help_text="Empty: the dataset's first question this recipe evaluates.",
    )
    source = forms.ModelChoiceField(
        queryset=generating_sources(),
        required=False,
        label="Model source",
        help_text="Its model name goes in the request body.",
    )

    def __init__(self, *args, recipe: PromptRecipe | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.recipe = recipe

    def clean(self):
        data = super().clean()
        if data.get("dataset") is not None:
            question = recipe_pages.find_question(data["dataset"], data.get("external_id", ""), self.recipe)
            if question is None and data.get("external_id"):
                self.add_error("external_id", "The dataset has no question with this id.")
            elif question is None:
                self.add_error("dataset", "The dataset has no question this recipe evaluates (none, or every one is "
                                          "held out as its worked examples).")  # fmt: skip
            data["question"] = question
        return data


class LevelsField(forms.CharField):
    def to_python(self, value):
        try:
            return recipe_pages.parse_levels(super().to_python(value))
        except recipe_pages.LevelsError as error:
            raise forms.ValidationError(str(error)) from None


class RecipeJobForm(StudyChoiceMixin):
    """A condition: the recipe's source x dataset, optionally only the questions at some factor levels."""

    prefix = "job"  # beside the preview form on the recipe's page, which also has a dataset and a source

    source = forms.ModelChoiceField(queryset=generating_sources(), label="Model source")
    dataset = forms.ModelChoiceField(queryset=Dataset.objects.order_by("name"))
    levels = LevelsField(
        required=False,
        max_length=500,
        label="Only questions at these levels",
        help_text="factor=level, separated by commas, e.g. bias=recency. Empty: every question of the dataset.",
    )


class VariantRunForm(forms.Form):
    generator = forms.ChoiceField(choices=[])
    base_dataset = forms.ModelChoiceField(queryset=Dataset.objects.order_by("name"), label="Base dataset")
    seed = forms.IntegerField(
        initial=0, min_value=MIN_SEED, max_value=MAX_SEED,
        help_text="Same generator, version and seed: the same variants.",
    )  # fmt: skip
    biases = forms.MultipleChoiceField(
        choices=[], widget=forms.CheckboxSelectMultiple, required=False, label="Levels",
        help_text="Empty: the generator's default levels (BiasMedQA: the 7 biases, not the _v2 ones; Q-Pain: all 8 "
        "race x gender profiles; ContextSRH: the attributes age, location and sex).",
    )  # fmt: skip
    limit = forms.IntegerField(
        required=False, min_value=1, max_value=MAX_LIMIT,
        help_text="Only the first N base questions (a small trial). Empty: all.",
    )  # fmt: skip

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["generator"].choices = variant_registry.generator_choices()
        self.fields["biases"].choices = variant_registry.level_choices()

    def clean(self):
        data = super().clean()
        generator = data.get("generator")
        if generator and data.get("biases"):
            unknown = sorted(set(data["biases"]) - set(variant_registry.levels_of(generator)))
            if unknown:
                self.add_error("biases", f"The generator {generator} has no level {', '.join(unknown)}.")
        return data

    def level_groups(self) -> list[dict]:
        """The levels grouped by generator, for one fieldset each (the page's script shows the chosen one's)."""
        chosen = set(self["biases"].value() or [])
        return [
            {"generator": name, "levels": [
                {"value": level, "label": level.replace("_", " "), "id": f"id_biases_{name}_{index}",
                 "checked": level in chosen}
                for index, level in enumerate(variant_registry.levels_of(name))
            ]}
            for name, _label in self.fields["generator"].choices
        ]  # fmt: skip

    def run_options(self) -> dict:
        return variant_registry.run_options(
            generator=self.cleaned_data["generator"], biases=self.cleaned_data.get("biases"),
            limit=self.cleaned_data.get("limit"),
        )  # fmt: skip
