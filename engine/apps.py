from importlib import import_module

from django.apps import AppConfig
from django.conf import settings


class EngineConfig(AppConfig):
    name = "engine"

    def ready(self) -> None:
        # More kinds of work than the apps register themselves (a plugin's, a test worker's).
        for module in settings.ENGINE_KIND_MODULES:
            import_module(module)
