from django.contrib import admin

from .models import AnalysisRun


@admin.register(AnalysisRun)
class AnalysisRunAdmin(admin.ModelAdmin):
    """Runs are made by the Run analysis button or the worker; the admin shows them and can delete them."""

    list_display = ["id", "study", "status", "progress", "created_by", "created_at", "finished_at"]
    list_filter = ["status"]
    list_select_related = ["study", "created_by"]
    readonly_fields = [field.name for field in AnalysisRun._meta.fields]

    def has_add_permission(self, request):
        return False
