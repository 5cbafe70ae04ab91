"""Datasets of medical questions, counterfactual pairs, answer sources and answers."""

import hashlib
import json

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models, transaction
from django.db.models import Q, Value
from django.db.models.functions import Replace

from config import key_hosts
from jobs.models import Job


def text_fingerprint(text: str) -> str:
    """SHA-256 of the text with surrounding whitespace removed.

    Plain questions (no base, no levels) are unique per dataset by text; texts can be longer than a btree
    index allows on PostgreSQL, so uniqueness is enforced on this hash.
    """
    return hashlib.sha256(text.strip().encode("utf-8")).hexdigest()


def settings_fingerprint(parameters: dict) -> str:
    """Stable hash of generation settings: the same settings in any key order give one key."""
    canonical = json.dumps(parameters or {}, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class Dataset(models.Model):
    name = models.CharField(max_length=200, unique=True, help_text="The name as published.")
    description = models.TextField(blank=True)
    licence = models.CharField(max_length=200, blank=True)
    source = models.TextField(blank=True, help_text="Where the data comes from: paper, repository, commit.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Question(models.Model):
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="questions")
    external_id = models.CharField(max_length=200, help_text="The id in the source file.")
    text = models.TextField()
    text_hash = models.CharField(max_length=64, editable=False)
    metadata = models.JSONField(
        default=dict,
        blank=True,
        help_text="Whatever the source records about the question: the axis of identity or context it varies, "
        "options and correct answer, pain context...",
    )
    # A variant (DESIGN.md, "factor levels"): the question it was made from and the levels it carries.
    base = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="variants",
        help_text="The base question this variant was made from (empty for a base question).",
    )
    levels = models.JSONField(
        default=dict,
        blank=True,
        help_text='Factor levels this question carries, e.g. {"bias": "recency"}; a factor it lacks is at its '
        "reference level.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["dataset", "id"]
        constraints = [
            models.UniqueConstraint(fields=["dataset", "external_id"], name="question_unique_external_id"),
            # A plain question (no base, no levels) is unique by text. One that carries a base or levels is known
            # by its id: two of MEDIC's restyled samples, or two of its desires, can be one text and still be
            # two records of the chain (datasets/DESIGN.md, "MEDIC import").
            models.UniqueConstraint(
                fields=["dataset", "text_hash"],
                condition=Q(base__isnull=True, levels={}),
                name="question_unique_plain_text",
            ),  # fmt: skip
        ]

    def __str__(self) -> str:
        return f"{self.external_id}: {self.text[:80]}"

    def save(self, *args, **kwargs):
        self.text_hash = text_fingerprint(self.text)
        if kwargs.get("update_fields") is not None and "text" in kwargs["update_fields"]:
            kwargs["update_fields"] = {*kwargs["update_fields"], "text_hash"}
        super().save(*args, **kwargs)


class CounterfactualPair(models.Model):
    """Two questions of one dataset that differ in an identity or context detail."""

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="pairs")
    question_1 = models.ForeignKey(Question, on_delete=models.CASCADE, related_name="pairs_as_first")
    question_2 = models.ForeignKey(Question, on_delete=models.CASCADE, related_name="pairs_as_second")
    external_id = models.CharField(max_length=200, blank=True)
    difference = models.TextField(
        blank=True, help_text="What changed between the two questions, e.g. 'Black men → White men'."
    )
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["dataset", "id"]
        constraints = [
            models.UniqueConstraint(fields=["question_1", "question_2"], name="pair_unique_questions"),
            models.CheckConstraint(condition=~Q(question_1=models.F("question_2")), name="pair_distinct_questions"),
        ]

    def __str__(self) -> str:
        return f"{self.question_1.external_id} / {self.question_2.external_id}"


class AnswerSource(models.Model):
    """Where answers come from: a model with its settings, physicians, or an imported release."""

    class Kind(models.TextChoices):
        MODEL = "model", "Model"
        PHYSICIAN = "physician", "Physician-written"
        IMPORTED = "imported", "Imported release"

    name = models.CharField(max_length=200, unique=True, help_text="Shown in exports, e.g. 'Med-PaLM 2'.")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    description = models.TextField(blank=True)
    model_name = models.CharField(max_length=200, blank=True, help_text="The model identifier, for model sources.")
    parameters = models.JSONField(
        default=dict, blank=True, help_text="Default generation settings (temperature, max tokens, ...)."
    )
    # Model sources: an OpenAI-compatible chat-completions endpoint (hosted API, vLLM, Ollama, llama.cpp).
    base_url = models.URLField(blank=True, help_text="e.g. https://api.openai.com/v1 or http://127.0.0.1:8080/v1")
    api_key_env = models.CharField(
        max_length=100, blank=True, help_text="Name of the environment variable holding the API key (never the key)."
    )
    temperature = models.FloatField(default=0.0)
    max_tokens = models.PositiveIntegerField(default=1024, validators=[MinValueValidator(1)])
    system_prompt = models.TextField(blank=True)
    prompt_template = models.TextField(
        default="{question}", help_text="The user message; {question} is replaced by the question text."
    )
    request_timeout_seconds = models.FloatField(default=120.0, validators=[MinValueValidator(0.1)])
    concurrency = models.PositiveSmallIntegerField(
        default=4, validators=[MinValueValidator(1)], help_text="Requests in flight at once."
    )
    rate_limit_per_minute = models.PositiveIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1)], help_text="Empty: no limit."
    )
    logprobs = models.BooleanField(default=False, help_text="Ask for token log-probabilities (e.g. Q-Pain).")
    top_logprobs = models.PositiveSmallIntegerField(null=True, blank=True)

    class StructuredOutput(models.TextChoices):
        NONE = "none", "None: read JSON from the reply's text"
        JSON_OBJECT = "json_object", "JSON object (response_format json_object)"
        JSON_SCHEMA = "json_schema", "JSON Schema (response_format json_schema)"

    structured_output = models.CharField(
        max_length=20, choices=StructuredOutput.choices, default=StructuredOutput.NONE,
        help_text="For judges only (answer generation never sends it): how a judge's request asks for its JSON. "
        "'JSON object' sends response_format {type: json_object} (OpenAI, vLLM, llama.cpp); 'JSON Schema' sends "
        "the rubric's JSON Schema as response_format json_schema (strict: false), for servers that constrain "
        "the reply to it. The reply is validated like a person's rating either way.",
    )  # fmt: skip
    # Where the engine sends the source's requests: the fields above, mirrored on every save
    # (source_endpoints.py), so every kind of work on this source shares its concurrency and rate limit.
    endpoint = models.ForeignKey(
        "engine.Endpoint", null=True, blank=True, editable=False, on_delete=models.PROTECT,
        related_name="answer_sources", help_text="Kept in step with the source's URL, key variable and limits.",
    )  # fmt: skip
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def save(self, *args, **kwargs) -> None:
        from .source_endpoints import sync_endpoint

        with transaction.atomic():
            super().save(*args, **kwargs)
            sync_endpoint(self)

    def clean(self) -> None:
        from django.core.exceptions import ValidationError

        errors = {}
        if self.kind == self.Kind.MODEL and self.base_url and "{question}" not in self.prompt_template:
            errors["prompt_template"] = "The template must contain {question}."
        if self.api_key_env:
            try:
                key_hosts.check_variable_name(self.api_key_env)
                if self.base_url:
                    key_hosts.check_key_destination(
                        variable=self.api_key_env, url=self.base_url, bindings=settings.MODEL_KEY_HOSTS
                    )
            except key_hosts.KeyNotAllowed as error:
                errors[error.field] = str(error)
        if errors:
            raise ValidationError(errors)

    def generation_settings(self) -> dict:
        """What decides a generated answer: stored on each answer, and part of its uniqueness."""
        settings = {
            "model": self.model_name,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "system_prompt": self.system_prompt,
            "prompt_template": self.prompt_template,
        }
        if self.logprobs:
            settings["logprobs"] = True
            settings["top_logprobs"] = self.top_logprobs
        return settings

    @property
    def export_name(self) -> str:
        """Name used in export column headers: spaces become '-' (ratings-export spec)."""
        return self.name.replace(" ", "-")

    def validate_unique(self, exclude=None) -> None:
        """Names are unique, and so are export names: 'Src X' and 'Src-X' would share a column of the export."""
        super().validate_unique(exclude)
        if exclude and "name" in exclude:
            return
        same_column = (
            AnswerSource.objects.annotate(export=Replace("name", Value(" "), Value("-")))
            .filter(export=self.export_name)
            .exclude(pk=self.pk)
            .first()
        )
        if same_column is not None and same_column.name != self.name:
            raise ValidationError(
                {"name": f"The source {same_column.name!r} has the same name in exports ({self.export_name!r})."}
            )


# OpenAI-style and Anthropic-style names for "stopped at max_tokens".
CUT_OFF_REASONS = {"length", "max_tokens"}


class Answer(models.Model):
    question = models.ForeignKey(Question, on_delete=models.CASCADE, related_name="answers")
    source = models.ForeignKey(AnswerSource, on_delete=models.PROTECT, related_name="answers")
    text = models.TextField()
    # Provenance: what produced this text, how and when.
    model_name = models.CharField(max_length=200, blank=True)
    prompt = models.TextField(blank=True, help_text="The exact prompt sent, when known.")
    parameters = models.JSONField(default=dict, blank=True, help_text="Generation settings used.")
    settings_hash = models.CharField(max_length=64, editable=False)
    response_metadata = models.JSONField(default=dict, blank=True)
    generated_at = models.DateTimeField(null=True, blank=True)
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="authored_answers",
        help_text="For physician-written answers: the author (never assigned to rate their own answer).",
    )
    provenance_note = models.TextField(blank=True, help_text="Where the text came from, in words.")
    refusal = models.BooleanField(
        default=False,
        help_text="The model declined (content filter) or returned no text. Kept, not hidden: a refusal can itself "
        "be a finding.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["question", "source"]
        constraints = [
            models.UniqueConstraint(fields=["question", "source", "settings_hash"], name="answer_unique_per_settings"),
        ]

    def __str__(self) -> str:
        return f"{self.source} → {self.question.external_id}"

    def save(self, *args, **kwargs):
        self.settings_hash = settings_fingerprint(self.parameters)
        if kwargs.get("update_fields") is not None and "parameters" in kwargs["update_fields"]:
            kwargs["update_fields"] = {*kwargs["update_fields"], "settings_hash"}
        super().save(*args, **kwargs)

    @property
    def was_cut_off(self) -> bool:
        """The model stopped at its token limit, so the text may end mid-sentence: the finish reason a
        generation keeps, or an imported file's finish_reason / stop_reason column (both in response_metadata)."""
        metadata = self.response_metadata if isinstance(self.response_metadata, dict) else {}
        reason = metadata.get("finish_reason") or metadata.get("stop_reason")
        return str(reason).lower() in CUT_OFF_REASONS


class ImportJob(Job):
    """One file uploaded by a coordinator, imported by a Celery task.

    The file's bytes live in the database (ImportChunk rows) so that a worker on another machine can read them.
    """

    class Kind(models.TextChoices):
        QUESTIONS = "questions", "Questions"
        ANSWERS = "answers", "Answers"

    class Status(models.TextChoices):
        PENDING = "pending", "Waiting for a worker"
        RUNNING = "running", "Running"
        DONE = "done", "Imported"
        FAILED = "failed", "Rejected"

    waiting_status = Status.PENDING

    kind = models.CharField(max_length=20, choices=Kind.choices)
    filename = models.CharField(max_length=255)
    options = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING)
    report = models.JSONField(default=dict, blank=True, help_text="Counts of what was created or found.")
    errors = models.JSONField(default=list, blank=True, help_text="[{line, message}] when rejected.")

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} import of {self.filename} ({self.get_status_display()})"


class ImportChunk(models.Model):
    """One piece (at most IMPORT_CHUNK_BYTES) of an uploaded file, in order: neither the web process nor the
    worker ever holds the whole file. Deleted when the job finishes."""

    job = models.ForeignKey(ImportJob, on_delete=models.CASCADE, related_name="chunks")
    index = models.PositiveIntegerField()
    data = models.BinaryField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job", "index"], name="import_chunk_unique_index")]

    def __str__(self) -> str:
        return f"chunk {self.index} of import job {self.job_id}"


class GenerationJob(Job):
    """Answers for every question of a dataset from one model source, generated by Celery workers.

    The generation settings are frozen when the job starts: they decide which answers count as "already
    there" (answers are unique per question, source and settings). The endpoint (URL, key, timeout,
    concurrency, rate limit) is read live from the source, so a wrong URL can be fixed and failures retried.
    """

    class Status(models.TextChoices):
        QUEUED = "queued", "Waiting for a worker"
        RUNNING = "running", "Running"
        DONE = "done", "Finished"
        CANCELLED = "cancelled", "Cancelled"

    failed_status = None  # its questions fail one by one (its engine calls); the job is cancelled instead

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="generation_jobs")
    source = models.ForeignKey(AnswerSource, on_delete=models.PROTECT, related_name="generation_jobs")
    parameters = models.JSONField(help_text="The source's generation settings when the job started.")
    settings_hash = models.CharField(max_length=64)
    recipe = models.ForeignKey(
        "PromptRecipe", null=True, blank=True, on_delete=models.PROTECT, related_name="generation_jobs",
        help_text="The condition's recipe; empty: the source's own prompt template.",
    )  # fmt: skip
    levels = models.JSONField(
        default=dict, blank=True, help_text='Only the dataset\'s questions at these levels, e.g. {"bias": "recency"}.'
    )
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED)
    already_present = models.PositiveIntegerField(
        default=0, help_text="Questions that had an answer with these settings when the job started."
    )
    held_out = models.PositiveIntegerField(
        default=0, help_text="Questions left out: their base question is one of the recipe's worked examples."
    )
    # A plain id, not a foreign key: datasets never depends on studies (answer_links.py links the answers).
    for_study = models.PositiveIntegerField(
        null=True, blank=True, help_text="The id of the study the answers are generated for (each is linked to it)."
    )
    cancelled_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"Job {self.pk}: {self.source} on {self.dataset} ({self.get_status_display()})"


class VariantRun(Job):
    """A variant generator applied to a base dataset (DESIGN.md), run by a Celery task with progress.

    Same generator, version, seed and options: the same target dataset and the same variants, so a second
    run creates nothing.
    """

    class Status(models.TextChoices):
        QUEUED = "queued", "Waiting for a worker"
        RUNNING = "running", "Running"
        DONE = "done", "Finished"
        FAILED = "failed", "Failed"

    generator = models.CharField(max_length=100, help_text="A name registered in datasets/variants.")
    version = models.PositiveSmallIntegerField()
    seed = models.IntegerField(default=0)
    options = models.JSONField(default=dict, blank=True, help_text="The generator's options (levels, limit, ...).")
    base_dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="variant_runs_as_base")
    dataset = models.ForeignKey(
        Dataset, null=True, blank=True, on_delete=models.CASCADE, related_name="variant_runs",
        help_text="Where the variants go.",
    )  # fmt: skip
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED)
    total = models.PositiveIntegerField(default=0, help_text="Variants to make.")
    done = models.PositiveIntegerField(default=0, help_text="Variants made or found so far.")
    created = models.PositiveIntegerField(default=0)
    existing = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.generator} v{self.version} seed {self.seed} on {self.base_dataset} ({self.get_status_display()})"


class PromptRecipeQuerySet(models.QuerySet):
    def ensure(self, name: str, fields: dict) -> "PromptRecipe":
        """The recipe of this name, created with these fields or brought back to them: only the fields that
        differ are saved, so a recipe already as defined is left untouched and its jobs keep running."""
        recipe, created = self.get_or_create(name=name, defaults=fields)
        changed = [] if created else [field for field, value in fields.items() if getattr(recipe, field) != value]
        for field in changed:
            setattr(recipe, field, fields[field])
        if changed:
            recipe.save(update_fields=[*changed, "updated_at"])
        return recipe


class PromptRecipe(models.Model):
    """How a question becomes a request (DESIGN.md, "prompt recipe"); rendered by `datasets.recipes`.

    Everything that changes the request is part of `settings()`, which joins the source's settings in a
    generation job's hash: two recipes never share answers.
    """

    class Mode(models.TextChoices):
        CHAT = "chat", "Chat (messages)"
        COMPLETION = "completion", "Completion (one prompt text)"

    class PromptRole(models.TextChoices):
        USER = "user", "User message"
        SYSTEM = "system", "System message"

    name = models.CharField(max_length=200, unique=True)
    description = models.TextField(blank=True)
    mode = models.CharField(max_length=20, choices=Mode.choices, default=Mode.CHAT)
    system_prompt = models.TextField(blank=True, help_text="Chat mode only: the system message.")
    prompt_role = models.CharField(
        max_length=20, choices=PromptRole.choices, default=PromptRole.USER,
        help_text="Chat mode: the message the prompt is sent as (BiasMedQA's authors sent it as the system message).",
    )  # fmt: skip
    instruction = models.TextField(blank=True, help_text="The prompt's first part, before any examples.")
    level_factor = models.CharField(
        max_length=100, blank=True, help_text="The question factor whose level picks the per-level text, e.g. bias."
    )
    level_texts = models.JSONField(
        default=dict, blank=True,
        help_text="{level: text} appended to the instruction after a space (e.g. BiasMedQA's education sentences).",
    )  # fmt: skip
    item_template = models.TextField(
        default="{question}",
        help_text="The question block: {question}, {options} and any metadata field of the question "
        "(e.g. {answer_idx}).",
    )
    options_format = models.CharField(max_length=200, default="{letter}: {text}")
    options_separator = models.CharField(max_length=20, default=", ")
    examples = models.JSONField(
        default=list, blank=True,
        help_text='Worked examples before the question: [{"header": {"none": "...", "*": "..."}, "answer": '
        '"wrong" | "correct"}], each drawn from the pool by the seeded rule.',
    )  # fmt: skip
    examples_pool = models.ForeignKey(
        Dataset, null=True, blank=True, on_delete=models.PROTECT, related_name="+",
        help_text="The named pool the examples are drawn from.",
    )  # fmt: skip
    examples_match_factor = models.CharField(
        max_length=100, blank=True, help_text="Examples carry the same level of this factor as the question."
    )
    examples_seed = models.IntegerField(default=0)
    examples_holdout = models.FloatField(
        default=0.0, validators=[MinValueValidator(0.0), MaxValueValidator(0.99)],
        help_text="Share of the pool's base questions held out as worked examples, chosen by the examples seed "
        "(e.g. 0.05); the rest may be evaluated. 0: the whole pool is examples, so none of its questions is "
        "evaluated with this recipe.",
    )  # fmt: skip
    examples_from_evaluated = models.BooleanField(
        default=False,
        help_text="Examples may be other questions the job evaluates (Q-Pain's closed prompt, as its paper does); "
        "never the question itself or another variant of its base question.",
    )
    examples_footer = models.TextField(blank=True, help_text="Between the examples and the question.")
    condition = models.JSONField(
        default=dict,
        blank=True,
        help_text='The condition\'s own levels, stored on answers: {"mitigation": "education"}.',
    )
    stop = models.JSONField(default=list, blank=True, help_text="Stop sequences.")
    logprobs = models.BooleanField(default=False)
    top_logprobs = models.PositiveSmallIntegerField(null=True, blank=True)
    max_tokens = models.PositiveIntegerField(default=1024, validators=[MinValueValidator(1)])
    temperature = models.FloatField(
        null=True, blank=True, default=0.0, help_text="Empty: not sent, so the server's default applies."
    )
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = PromptRecipeQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def settings(self) -> dict:
        """What decides the request: stored on each answer and part of its uniqueness."""
        return {
            "recipe": self.name,
            "mode": self.mode,
            "system_prompt": self.system_prompt,
            "instruction": self.instruction,
            "level_factor": self.level_factor,
            "level_texts": self.level_texts,
            "item_template": self.item_template,
            "options_format": self.options_format,
            "options_separator": self.options_separator,
            "examples": self.examples,
            "examples_pool": self.examples_pool.name if self.examples_pool_id else None,
            "examples_match_factor": self.examples_match_factor,
            "examples_seed": self.examples_seed,
            "examples_footer": self.examples_footer,
            "condition": self.condition,
            "stop": self.stop,
            "logprobs": self.logprobs,
            "top_logprobs": self.top_logprobs,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            **self.later_settings(),
        }

    # Settings added after answers were made: each appears only when it is not at the value that made the
    # earlier requests, so those answers keep matching their recipe's settings hash.
    EXAMPLES_RULE = 2  # 1: drawn per question (varied with the levels compared); 2: per base question (DESIGN.md)

    def later_settings(self) -> dict:
        added = {}
        if self.mode == self.Mode.CHAT and self.prompt_role != self.PromptRole.USER:
            added["prompt_role"] = self.prompt_role
        if self.examples or self.examples_pool_id is not None:
            added["examples_rule"] = self.EXAMPLES_RULE
            added["examples_holdout"] = self.examples_holdout
            added["examples_from_evaluated"] = self.examples_from_evaluated
        return added


class QuestionStep(models.Model):
    """One step of a chain of generated questions (DESIGN.md, "MEDIC"; datasets/chains/): a model source asks its
    recipe of every input question, once per expansion (the levels the step adds, e.g. a style) and sample, and
    each reply becomes a question of the output dataset made from the input (`Question.base`).

    The input is a dataset (optionally only the questions at `input_levels`), or the questions the step `after`
    makes. What a step asks (`RECIPE`) is fixed once it has made a question: a changed recipe is a new step.
    """

    class Start(models.TextChoices):
        FLOW = "flow", "On each question the step before makes"
        AFTER = "after", "When the step before has finished"

    name = models.CharField(max_length=200, unique=True)
    description = models.TextField(blank=True)
    source = models.ForeignKey(
        AnswerSource, on_delete=models.PROTECT, related_name="question_steps",
        help_text="The model source whose endpoint is asked (its model, temperature, max tokens, limits).",
    )  # fmt: skip
    recipe = models.ForeignKey(
        PromptRecipe, on_delete=models.PROTECT, related_name="question_steps",
        help_text="The request: its item template over {question} (the input's text), the input's metadata fields, "
        "the expansion's levels and the step's phrases.",
    )  # fmt: skip
    input_dataset = models.ForeignKey(
        Dataset, null=True, blank=True, on_delete=models.PROTECT, related_name="question_steps_reading",
        help_text="The input questions (empty: the questions of the step `after`).",
    )  # fmt: skip
    input_levels = models.JSONField(
        default=dict, blank=True, help_text='Only the input questions at these levels, e.g. {"step": "desire"}.'
    )
    after = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="next_steps",
        help_text="The step whose questions are this step's input.",
    )  # fmt: skip
    start = models.CharField(max_length=10, choices=Start.choices, default=Start.FLOW)
    output = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="question_steps_writing")
    expansions = models.JSONField(
        default=list, blank=True,
        help_text='The levels each input is asked under, one request each: [{"style": "standard"}, ...]; empty: once.',
    )  # fmt: skip
    phrases = models.JSONField(
        default=dict, blank=True,
        help_text='Named texts the template may use, chosen by an expansion level: {"extra_string": {"factor": '
        '"style", "cases": {"standard": ""}, "default": ", who {style},"}}.',
    )  # fmt: skip
    output_levels = models.JSONField(
        default=dict, blank=True, help_text='Levels every output question gets, e.g. {"step": "restyled"}.'
    )
    samples = models.PositiveSmallIntegerField(default=1, help_text="Replies kept apart per input and expansion.")
    seed = models.IntegerField(default=0, help_text="Sent as the request's seed (plus the sample number).")
    parameters = models.JSONField(
        default=dict, blank=True, help_text="The source's and recipe's settings when the step first ran."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    RECIPE = ("source_id", "recipe_id", "input_dataset_id", "input_levels", "after_id", "output_id", "expansions",
              "phrases", "output_levels", "samples", "seed")  # fmt: skip

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=Q(input_dataset__isnull=False) | Q(after__isnull=False), name="question_step_has_input"
            ),
            # A step's output is its own: external ids are unique per (input, expansion, sample), not per step.
            models.UniqueConstraint(fields=["output"], name="question_step_own_output"),
        ]

    def __str__(self) -> str:
        return self.name

    def save(self, *args, **kwargs):
        # What a step asks is part of what its questions mean: fixed once it has made one.
        if self.pk is not None:
            stored = QuestionStep.objects.get(pk=self.pk)
            changed = [name for name in self.RECIPE if getattr(stored, name) != getattr(self, name)]
            if changed and stored.made_any():
                raise ValidationError(f"The step {stored} has made questions, so {', '.join(changed)} cannot change: "
                                      "add a new step.")  # fmt: skip
        super().save(*args, **kwargs)

    def made_any(self) -> bool:
        return self.output.questions.filter(metadata__step_id=self.pk).exists()
