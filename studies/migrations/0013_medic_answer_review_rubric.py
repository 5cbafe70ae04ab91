from django.db import migrations

from studies.rubric_defaults import ensure_default_rubrics


def create_medic_rubric(apps, schema_editor):
    """MEDIC's judge rubric, "MEDIC answer review" v1 (studies/medic.py via rubric_defaults.OTHER_RUBRICS), on
    databases made before it."""
    ensure_default_rubrics(apps.get_model("studies", "Rubric"), apps.get_model("studies", "RubricVersion"))


class Migration(migrations.Migration):

    dependencies = [
        ("studies", "0012_judge_questions"),
    ]

    operations = [
        migrations.RunPython(create_medic_rubric, migrations.RunPython.noop),
    ]
