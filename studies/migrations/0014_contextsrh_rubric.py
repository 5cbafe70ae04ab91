from django.db import migrations

from studies.rubric_defaults import ensure_default_rubrics


def create_contextsrh_rubric(apps, schema_editor):
    """ContextSRH's rubric for people, "ContextSRH: correct for which groups" v1 (studies/contextsrh.py via
    rubric_defaults.OTHER_RUBRICS), on databases made before it."""
    ensure_default_rubrics(apps.get_model("studies", "Rubric"), apps.get_model("studies", "RubricVersion"))


class Migration(migrations.Migration):

    dependencies = [
        ("studies", "0013_medic_answer_review_rubric"),
    ]

    operations = [
        migrations.RunPython(create_contextsrh_rubric, migrations.RunPython.noop),
    ]
