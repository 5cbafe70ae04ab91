from django.db import migrations

DEFAULT_OPTIONS = {
    "age_group": ["18-24", "25-34", "35-44", "45-54", "55-64", "65 or older"],
    "gender": ["Woman", "Man", "Non-binary", "Another gender"],
    "race_ethnicity": [
        "American Indian or Alaska Native",
        "Asian",
        "Black or African American",
        "Hispanic or Latino",
        "Middle Eastern or North African",
        "Native Hawaiian or Other Pacific Islander",
        "White",
        "Another race or ethnicity",
    ],
}


def create_options(apps, schema_editor):
    DemographicOption = apps.get_model("raters", "DemographicOption")
    for field, labels in DEFAULT_OPTIONS.items():
        for position, label in enumerate(labels):
            DemographicOption.objects.get_or_create(field=field, label=label, defaults={"position": position})


class Migration(migrations.Migration):
    dependencies = [("raters", "0004_invitation_study_raterbackground_profile")]

    operations = [migrations.RunPython(create_options, migrations.RunPython.noop)]
