"""Rubric definitions become typed questions (DESIGN.md, "Typed rubrics"): same wording, same option keys."""

from django.db import migrations, models

from studies.rubric_legacy import convert_stored, restore_stored


def to_typed(apps, schema_editor):
    convert_stored(apps.get_model("studies", "RubricVersion"))


def to_legacy(apps, schema_editor):
    restore_stored(apps.get_model("studies", "RubricVersion"))


class Migration(migrations.Migration):
    dependencies = [("studies", "0005_study_answers")]

    operations = [
        migrations.RunPython(to_typed, to_legacy),
        migrations.AlterField(
            model_name="rubric",
            name="kind",
            field=models.CharField(
                blank=True,
                choices=[("independent", "Independent"), ("pairwise", "Pairwise"), ("counterfactual", "Counterfactual")],
                help_text="A label (EquityMedQA's rubric kinds).",
                max_length=20,
            ),
        ),
        migrations.AlterField(
            model_name="rubricversion",
            name="definition",
            field=models.JSONField(
                help_text="Typed questions (studies/rubric_schema.py): what is shown, the questions, their wording "
                "and rules."
            ),
        ),
    ]
