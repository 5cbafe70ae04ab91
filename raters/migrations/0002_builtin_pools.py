from django.db import migrations

from raters.defaults import ensure_builtin_pools


def create_pools(apps, schema_editor):
    ensure_builtin_pools(apps.get_model("raters", "RaterPool"))


class Migration(migrations.Migration):
    dependencies = [("raters", "0001_initial")]

    operations = [migrations.RunPython(create_pools, migrations.RunPython.noop)]
