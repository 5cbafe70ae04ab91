from django.db import migrations

from raters.defaults import ensure_demographic_options


def create_options(apps, schema_editor):
    ensure_demographic_options(apps.get_model("raters", "DemographicOption"))


class Migration(migrations.Migration):
    dependencies = [("raters", "0004_invitation_study_raterbackground_profile")]

    operations = [migrations.RunPython(create_options, migrations.RunPython.noop)]
