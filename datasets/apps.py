from django.apps import AppConfig


class DatasetsConfig(AppConfig):
    name = "datasets"

    def ready(self) -> None:
        # Answering a question is a kind of work of the model-call engine (engine/DESIGN.md).
        from .generation import answer_kind

        answer_kind.register()
