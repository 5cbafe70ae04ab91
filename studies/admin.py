from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import Count

from config.admin_fields import STORABLE_JSON

from .models import Assignment, Rating, Rubric, RubricVersion, Study, StudyItem, StudyPool


class RatingsProtectedAdmin(admin.ModelAdmin):
    """Deleting rows that ratings hang on is refused as 'protected', not as 'you may not delete ratings'
    (which would suggest someone else could): ratings are never deleted, only ever protected."""

    formfield_overrides = STORABLE_JSON

    def get_deleted_objects(self, objs, request):
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        if protected:
            perms_needed.discard(Rating._meta.verbose_name)
        return deleted, counts, perms_needed, protected


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


@admin.register(Study)
class StudyAdmin(RatingsProtectedAdmin):
    list_display = ["name", "rubric_version", "item_count", "locked_at", "created_at"]
    list_filter = ["rubric_version__rubric__kind"]
    search_fields = ["name", "description"]
    inlines = [StudyPoolInline]

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
class RatingAdmin(admin.ModelAdmin):
    list_display = ["id", "assignment", "rubric_version", "revision", "is_current", "attention_check_passed",
                    "active_seconds", "submitted_at"]  # fmt: skip
    list_filter = ["is_current", "attention_check_passed", "rubric_version", "assignment__item__study"]
    search_fields = ["assignment__rater__pseudonym"]
    list_select_related = ["assignment__rater", "rubric_version__rubric"]
    raw_id_fields = ["assignment"]

    # Ratings are an audit trail: raters add them (a revision adds a row), nothing is edited or deleted here.
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
