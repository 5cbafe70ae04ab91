from django.apps import AppConfig
from django.db.models.signals import post_migrate


class StudiesConfig(AppConfig):
    name = "studies"

    def ready(self) -> None:
        from datasets import answer_links

        from . import judge_kind
        from .audit import install_audit_guards
        from .membership import StudyLinks

        answer_links.register(StudyLinks())
        # Asking a judge about an item is a kind of work of the model-call engine (engine/DESIGN.md).
        judge_kind.register()

        # After every migrate: a migration may have rebuilt a guarded table (SQLite), dropping its triggers.
        post_migrate.connect(install_audit_guards, sender=self, dispatch_uid="studies.install_audit_guards")
