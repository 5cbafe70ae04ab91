from django.db import migrations

from studies.rubric_defaults import ensure_default_rubrics


def create_default_rubrics(apps, schema_editor):
    ensure_default_rubrics(apps.get_model("studies", "Rubric"), apps.get_model("studies", "RubricVersion"))


class Migration(migrations.Migration):
    dependencies = [("studies", "0001_initial")]

    operations = [migrations.RunPython(create_default_rubrics, migrations.RunPython.noop)]
