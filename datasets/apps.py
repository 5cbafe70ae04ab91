from django.apps import AppConfig


class DatasetsConfig(AppConfig):
    name = "datasets"

    def ready(self) -> None:
        # Answering a question is a kind of work of the model-call engine (engine/DESIGN.md).
        from .chains import question_kind
        from .generation import answer_kind

        answer_kind.register()
        question_kind.register()  # making a question from another is a second kind (datasets/chains/)
