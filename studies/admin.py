from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import Count

from config.admin_fields import STORABLE_JSON, ProtectedFirstAdmin, ViewOnlyAdmin

from .models import (
    Assignment,
    Judge,
    JudgeRating,
    JudgeReply,
    Rating,
    Rubric,
    RubricVersion,
    Study,
    StudyAnswer,
    StudyItem,
    StudyJudge,
    StudyPool,
)


class RatingsProtectedAdmin(ProtectedFirstAdmin):
    formfield_overrides = STORABLE_JSON


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
class RubricVersionAdmin(RatingsProtectedAdmin):
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


class StudyJudgeInline(admin.TabularInline):
    """The judges the study holds (its file's `judges`): one of another rubric version is refused (`clean`)."""

    model = StudyJudge
    extra = 0


@admin.register(Study)
class StudyAdmin(RatingsProtectedAdmin):
    list_display = ["name", "rubric_version", "item_count", "locked_at", "created_at"]
    list_filter = ["rubric_version__rubric__kind"]
    search_fields = ["name", "description"]
    inlines = [StudyPoolInline, StudyJudgeInline]

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("rubric_version__rubric").annotate(n_items=Count("items"))

    def get_readonly_fields(self, request, obj=None):
        # A lock is set by the dashboard's Lock button and is final; ratings name the version they were given
        # under, so a rated or locked study keeps its version (a new wording is a new study).
        if obj is not None and (obj.is_locked or obj.has_ratings()):
            return ["locked_at", "rubric_version"]
        return ["locked_at"]

    @admin.display(description="Items", ordering="n_items")
    def item_count(self, obj):
        return obj.n_items


@admin.register(StudyAnswer)
class StudyAnswerAdmin(admin.ModelAdmin):
    """Which answers belong to which study, and how: written by jobs, imports and items only, never by hand."""

    list_display = ["id", "study", "answer", "via", "added_at"]
    list_filter = ["via", "study"]
    list_select_related = ["study", "answer__question", "answer__source"]
    search_fields = ["answer__question__external_id", "answer__source__name"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(StudyItem)
class StudyItemAdmin(RatingsProtectedAdmin):
    list_display = ["id", "study", "answer", "question", "pair", "is_attention_check"]
    list_filter = ["study", "is_attention_check"]
    search_fields = ["question__text", "answer__question__text", "pair__question_1__text"]
    list_select_related = ["study", "answer__question", "answer__source", "question", "pair__question_1",
                           "pair__question_2"]  # fmt: skip
    raw_id_fields = ["answer", "question", "pair", "answer_1", "answer_2"]

    def get_readonly_fields(self, request, obj=None):
        if obj is not None and Rating.objects.filter(assignment__item=obj).exists():
            return ["study", *self.raw_id_fields]  # what was rated stays what was rated
        return []


@admin.register(Assignment)
class AssignmentAdmin(RatingsProtectedAdmin):
    list_display = ["id", "rater", "item", "status", "swap_answers", "active_seconds", "submitted_at"]
    list_filter = ["status", "item__study", "rater__pool"]
    search_fields = ["rater__pseudonym", "rater__user__username"]
    list_select_related = ["rater", "item__study"]
    # Made and moved only by Assign, claims, Reassign and Withdraw on the dashboard, which keep each pool's
    # slots (replication) right; what a rater did is measured, not typed in.
    readonly_fields = ["item", "rater", "status", "swap_answers", "active_seconds", "assigned_at", "first_viewed_at",
                       "submitted_at"]  # fmt: skip

    def has_add_permission(self, request):
        return False


@admin.register(Rating)
class RatingAdmin(ViewOnlyAdmin):  # an audit trail: raters add ratings (a revision adds a row), nothing else
    list_display = ["id", "assignment", "rubric_version", "revision", "is_current", "attention_check_passed",
                    "active_seconds", "submitted_at"]  # fmt: skip
    list_filter = ["is_current", "attention_check_passed", "rubric_version", "assignment__item__study"]
    search_fields = ["assignment__rater__pseudonym"]
    list_select_related = ["assignment__rater", "rubric_version__rubric"]
    raw_id_fields = ["assignment"]


@admin.register(Judge)
class JudgeAdmin(admin.ModelAdmin):
    formfield_overrides = STORABLE_JSON  # shown fields and examples typed here pass the storable check
    list_display = ["name", "source", "rubric_version", "repeats", "created_at"]
    list_select_related = ["source", "rubric_version__rubric"]
    search_fields = ["name"]

    def get_readonly_fields(self, request, obj=None):
        # What a judge asks is part of what its replies mean (Judge.save refuses a change too).
        if obj is not None and obj.replies.exists():
            return ["source", "rubric_version", "instructions", "shown_fields", "examples", "questions"]
        return []

    def has_delete_permission(self, request, obj=None):
        return obj is None or not obj.replies.exists()


@admin.register(JudgeReply)
class JudgeReplyAdmin(ViewOnlyAdmin):  # judge replies and ratings: an audit trail (DESIGN.md, "Judges")
    list_display = ["id", "judge", "item", "repeat", "swap_answers", "model", "latency_ms", "received_at"]
    list_filter = ["judge", "item__study"]
    list_select_related = ["judge"]
    raw_id_fields = ["item"]


@admin.register(JudgeRating)
class JudgeRatingAdmin(ViewOnlyAdmin):  # judge replies and ratings: an audit trail (DESIGN.md, "Judges")
    list_display = ["id", "judge", "item", "repeat", "rubric_version", "swap_answers", "submitted_at"]
    list_filter = ["judge", "item__study"]
    list_select_related = ["judge", "rubric_version__rubric"]
    raw_id_fields = ["item", "reply"]
