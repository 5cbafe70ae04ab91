from django.apps import AppConfig
from django.db.models.signals import post_migrate


class RatersConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "raters"

    def ready(self) -> None:
        from .roles import sync_role_groups

        # Permissions only exist after migrate, so groups are synced then.
        post_migrate.connect(sync_role_groups, dispatch_uid="raters.sync_role_groups")
