from django.contrib import admin

from config.admin_fields import ViewOnlyAdmin

from .models import Call, Endpoint, Lane


@admin.register(Endpoint)
class EndpointAdmin(admin.ModelAdmin):
    list_display = ["name", "base_url", "concurrency", "rate_limit_per_minute", "request_timeout_seconds"]
    search_fields = ["name", "base_url"]


@admin.register(Call)
class CallAdmin(ViewOnlyAdmin):  # written by the engine, changed only by it and the kinds' pages
    list_display = ["id", "kind", "endpoint", "batch", "status", "attempts", "short_error", "updated_at"]
    list_filter = ["kind", "status", "endpoint"]
    search_fields = ["batch", "error"]
    list_select_related = ["endpoint"]
    show_full_result_count = False

    @admin.display(description="Error")
    def short_error(self, obj):
        return obj.error[:100]


@admin.register(Lane)
class LaneAdmin(ViewOnlyAdmin):  # written by the engine, changed only by it and the kinds' pages
    list_display = ["endpoint", "index", "holder", "heartbeat_at"]
    list_filter = ["endpoint"]
    list_select_related = ["endpoint"]
