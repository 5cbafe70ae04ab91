"""MEDIC's prompt-generation templates as prompt recipes (datasets/chains/medic_templates.py)."""

from django.db import migrations

from datasets.chains.medic_templates import ensure_medic_recipes, recipes


def add(apps, schema_editor):
    ensure_medic_recipes(apps.get_model("datasets", "PromptRecipe"))


def remove(apps, schema_editor):
    recipe = apps.get_model("datasets", "PromptRecipe")
    recipe.objects.filter(name__in=[fields["name"] for fields in recipes()], question_steps__isnull=True).delete()


class Migration(migrations.Migration):
    dependencies = [("datasets", "0014_question_steps")]

    operations = [migrations.RunPython(add, remove)]
