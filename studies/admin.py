from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import Count

from .models import Assignment, Rating, Rubric, RubricVersion, Study, StudyItem, StudyPool


class RubricVersionInline(admin.TabularInline):
    model = RubricVersion
    fields = ["number", "notes", "created_at"]
    readonly_fields = ["number", "notes", "created_at"]
    extra = 0
    can_delete = False
    show_change_link = True


@admin.register(Rubric)
class RubricAdmin(admin.ModelAdmin):
    list_display = ["name", "kind", "created_at"]
    list_filter = ["kind"]
    search_fields = ["name", "description"]
    inlines = [RubricVersionInline]


@admin.register(RubricVersion)
class RubricVersionAdmin(admin.ModelAdmin):
    """Edit wording of unused versions; a version with ratings is read-only ('Save as new' adds a version)."""

    list_display = ["__str__", "rubric", "number", "rating_count", "created_at"]
    list_filter = ["rubric__kind", "rubric"]
    search_fields = ["rubric__name", "notes"]
    save_as = True

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("rubric").annotate(n_ratings=Count("ratings"))

    @admin.display(description="Ratings", ordering="n_ratings")
    def rating_count(self, obj):
        return obj.n_ratings

    def get_readonly_fields(self, request, obj=None):
        if obj is not None and obj.has_ratings() and "_saveasnew" not in request.POST:
            return ["rubric", "number", "definition"]
        return []

    def save_model(self, request, obj, form, change):
        if "_saveasnew" in request.POST:
            obj.number = (RubricVersion.objects.filter(rubric=obj.rubric).order_by("-number").first().number) + 1
        try:
            super().save_model(request, obj, form, change)
        except ValidationError as error:
            messages.error(request, " ".join(error.messages))


class StudyPoolInline(admin.TabularInline):
    model = StudyPool
    extra = 1


@admin.register(Study)
class StudyAdmin(admin.ModelAdmin):
    list_display = ["name", "rubric_version", "item_count", "locked_at", "created_at"]
    list_filter = ["rubric_version__rubric__kind"]
    search_fields = ["name", "description"]
    inlines = [StudyPoolInline]

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("rubric_version__rubric").annotate(n_items=Count("items"))

    @admin.display(description="Items", ordering="n_items")
    def item_count(self, obj):
        return obj.n_items


@admin.register(StudyItem)
class StudyItemAdmin(admin.ModelAdmin):
    list_display = ["id", "study", "answer", "question", "pair", "is_attention_check"]
    list_filter = ["study", "is_attention_check"]
    search_fields = ["question__text", "answer__question__text", "pair__question_1__text"]
    list_select_related = ["study", "answer__question", "answer__source", "question", "pair__question_1",
                           "pair__question_2"]  # fmt: skip
    raw_id_fields = ["answer", "question", "pair", "answer_1", "answer_2"]


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ["id", "rater", "item", "status", "swap_answers", "active_seconds", "submitted_at"]
    list_filter = ["status", "item__study", "rater__pool"]
    search_fields = ["rater__pseudonym", "rater__user__username"]
    list_select_related = ["rater", "item__study"]
    raw_id_fields = ["item", "rater"]


@admin.register(Rating)
class RatingAdmin(admin.ModelAdmin):
    list_display = ["id", "assignment", "rubric_version", "revision", "is_current", "attention_check_passed",
                    "active_seconds", "submitted_at"]  # fmt: skip
    list_filter = ["is_current", "attention_check_passed", "rubric_version", "assignment__item__study"]
    search_fields = ["assignment__rater__pseudonym"]
    list_select_related = ["assignment__rater", "rubric_version__rubric"]
    raw_id_fields = ["assignment"]

    def has_change_permission(self, request, obj=None):
        return False  # Ratings are an audit trail: revisions add rows, nothing is edited here.
