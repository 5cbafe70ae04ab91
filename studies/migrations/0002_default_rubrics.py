from django.db import migrations

from studies.rubric_defaults import DEFAULT_RUBRICS


def create_default_rubrics(apps, schema_editor):
    Rubric = apps.get_model("studies", "Rubric")
    RubricVersion = apps.get_model("studies", "RubricVersion")
    for kind, name, description, definition in DEFAULT_RUBRICS:
        rubric, _ = Rubric.objects.get_or_create(name=name, defaults={"kind": kind, "description": description})
        RubricVersion.objects.get_or_create(
            rubric=rubric, number=1, defaults={"definition": definition, "notes": "EquityMedQA rubric (spec)."}
        )


class Migration(migrations.Migration):
    dependencies = [("studies", "0001_initial")]

    operations = [migrations.RunPython(create_default_rubrics, migrations.RunPython.noop)]
