from django.contrib import admin

from .models import Score


@admin.register(Score)
class ScoreAdmin(admin.ModelAdmin):
    """Scores are written by scorers and importers only, never edited (scoring/DESIGN.md)."""

    list_display = ["id", "answer", "scorer", "version", "outcome", "created_at"]
    list_filter = ["scorer", "version", "outcome"]
    list_select_related = ["answer__source", "answer__question"]
    search_fields = ["answer__question__external_id", "answer__source__name"]
    raw_id_fields = ["answer"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
