from django.contrib import admin
from django.db.models import Count, Q

from config.admin_fields import STORABLE_JSON, ProtectedFirstAdmin

from .models import DemographicOption, Invitation, RaterBackground, RaterPool, RaterProfile


@admin.register(RaterPool)
class RaterPoolAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "rater_count"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(n_raters=Count("raters"))

    @admin.display(description="Raters", ordering="n_raters")
    def rater_count(self, obj):
        return obj.n_raters


class RaterBackgroundInline(admin.StackedInline):
    formfield_overrides = STORABLE_JSON
    model = RaterBackground
    can_delete = False


@admin.register(RaterProfile)
class RaterProfileAdmin(ProtectedFirstAdmin):
    list_display = ["pseudonym", "user", "pool", "panel_participant_id", "consented_at", "completed_at",
                    "dropped_out_at", "failed_attention_checks"]  # fmt: skip
    list_filter = ["pool", ("completed_at", admin.EmptyFieldListFilter), ("dropped_out_at", admin.EmptyFieldListFilter)]
    search_fields = ["pseudonym", "user__username", "user__email", "panel_participant_id"]
    inlines = [RaterBackgroundInline]
    list_select_related = ["user", "pool"]
    raw_id_fields = ["user"]

    def get_queryset(self, request):
        failed = Count(
            "assignments__ratings",
            filter=Q(assignments__ratings__is_current=True, assignments__ratings__attention_check_passed=False),
        )
        return super().get_queryset(request).annotate(n_failed_checks=failed)

    @admin.display(description="Failed attention checks", ordering="n_failed_checks")
    def failed_attention_checks(self, obj):
        return obj.n_failed_checks


@admin.register(DemographicOption)
class DemographicOptionAdmin(admin.ModelAdmin):
    list_display = ["label", "field", "position"]
    list_editable = ["position"]
    list_filter = ["field"]
    search_fields = ["label"]


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):
    list_display = ["token", "pool", "study", "note", "uses", "max_uses", "expires_at", "created_at"]
    list_filter = ["pool", "study"]
    search_fields = ["note", "token"]
    readonly_fields = ["token", "uses", "created_by", "created_at"]

    def save_model(self, request, obj, form, change):
        if not change:
            obj.created_by = request.user
        super().save_model(request, obj, form, change)
