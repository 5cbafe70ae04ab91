from django.contrib import admin
from django.db.models import Count

from .models import RaterPool, RaterProfile


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


@admin.register(RaterProfile)
class RaterProfileAdmin(admin.ModelAdmin):
    list_display = ["pseudonym", "user", "pool", "created_at"]
    list_filter = ["pool"]
    search_fields = ["pseudonym", "user__username", "user__email"]
    list_select_related = ["user", "pool"]
    raw_id_fields = ["user"]
