from django.contrib import admin
from django.db.models import Count
from django.urls import reverse
from django.utils.html import format_html
from django.utils.http import urlencode

from config.admin_fields import STORABLE_JSON, ProtectedFirstAdmin

from .generation.answer_kind import KIND, batch_of
from .models import (
    Answer,
    AnswerSource,
    CounterfactualPair,
    Dataset,
    GenerationJob,
    ImportJob,
    Question,
)


@admin.register(Dataset)
class DatasetAdmin(ProtectedFirstAdmin):
    list_display = ["name", "licence", "question_count", "created_at"]
    search_fields = ["name", "description", "source"]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(n_questions=Count("questions"))

    @admin.display(description="Questions", ordering="n_questions")
    def question_count(self, obj):
        return obj.n_questions


@admin.register(Question)
class QuestionAdmin(admin.ModelAdmin):
    formfield_overrides = STORABLE_JSON
    list_display = ["external_id", "short_text", "dataset", "created_at"]
    list_filter = ["dataset"]
    search_fields = ["external_id", "text"]
    list_select_related = ["dataset"]
    readonly_fields = ["text_hash", "created_at"]
    show_full_result_count = False

    @admin.display(description="Text")
    def short_text(self, obj):
        return obj.text[:120]


@admin.register(CounterfactualPair)
class CounterfactualPairAdmin(admin.ModelAdmin):
    formfield_overrides = STORABLE_JSON
    list_display = ["external_id", "dataset", "question_1", "question_2", "difference"]
    list_filter = ["dataset"]
    search_fields = ["external_id", "difference", "question_1__text", "question_2__text"]
    list_select_related = ["dataset", "question_1", "question_2"]
    raw_id_fields = ["question_1", "question_2"]


@admin.register(AnswerSource)
class AnswerSourceAdmin(admin.ModelAdmin):
    formfield_overrides = STORABLE_JSON
    list_display = ["name", "kind", "model_name", "base_url", "created_at"]
    list_filter = ["kind"]
    search_fields = ["name", "model_name", "description"]
    fieldsets = [
        (None, {"fields": ["name", "kind", "description", "parameters"]}),
        (
            "Model endpoint (OpenAI-compatible chat completions)",
            {
                "fields": [
                    "base_url",
                    "model_name",
                    "api_key_env",
                    "temperature",
                    "max_tokens",
                    "system_prompt",
                    "prompt_template",
                    "request_timeout_seconds",
                    "concurrency",
                    "rate_limit_per_minute",
                    "logprobs",
                    "top_logprobs",
                    "structured_output",
                ],  # fmt: skip
                "description": "The API key itself is never stored: name the environment variable that holds it. "
                "The server sends it only to the hosts the MODEL_KEY_HOSTS setting binds that variable to.",
            },
        ),
    ]


@admin.register(Answer)
class AnswerAdmin(admin.ModelAdmin):
    formfield_overrides = STORABLE_JSON
    list_display = ["question_id_display", "source", "dataset", "model_name", "short_text", "generated_at"]
    list_filter = ["source", "question__dataset", "source__kind", "refusal"]
    search_fields = ["text", "question__external_id", "question__text", "model_name"]
    list_select_related = ["question__dataset", "source"]
    raw_id_fields = ["question", "author"]
    readonly_fields = ["settings_hash", "created_at"]
    show_full_result_count = False

    @admin.display(description="Question", ordering="question__external_id")
    def question_id_display(self, obj):
        return obj.question.external_id

    @admin.display(description="Dataset", ordering="question__dataset__name")
    def dataset(self, obj):
        return obj.question.dataset

    @admin.display(description="Answer")
    def short_text(self, obj):
        return obj.text[:100]


@admin.register(ImportJob)
class ImportJobAdmin(admin.ModelAdmin):
    list_display = ["filename", "kind", "status", "created_by", "created_at", "finished_at"]
    list_filter = ["kind", "status"]
    search_fields = ["filename"]
    readonly_fields = ["kind", "filename", "options", "status", "report", "errors", "created_by", "started_at",
                       "finished_at"]  # fmt: skip


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows the workers write: shown for inspection, changed only by them and the job pages."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(GenerationJob)
class GenerationJobAdmin(ReadOnlyAdmin):
    list_display = ["id", "dataset", "source", "status", "already_present", "calls", "created_by", "created_at"]
    list_filter = ["status", "source"]
    list_select_related = ["dataset", "source", "created_by"]
    search_fields = ["dataset__name", "source__name"]
    date_hierarchy = "created_at"

    @admin.display(description="Calls")
    def calls(self, obj):
        """The job's questions are engine calls of its batch: listed in the engine's admin."""
        url = reverse("admin:engine_call_changelist")
        return format_html('<a href="{}?{}">calls</a>', url, urlencode({"kind": KIND, "batch": batch_of(obj.id)}))
