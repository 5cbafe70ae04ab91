from django.apps import AppConfig


class AnalysisConfig(AppConfig):
    name = "analysis"

    def ready(self) -> None:
        # Study files name plans; studies never imports analysis, so analysis tells it which plans exist.
        from studies.study_files import register_plans

        from .plans import PLANS

        register_plans(PLANS)
