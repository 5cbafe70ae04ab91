from django.db import migrations

BUILTIN_POOLS = [
    ("physician", "Physician", "Physicians rating answers for bias (EquityMedQA rater pool)."),
    ("equity_expert", "Health equity expert", "Raters with expertise in health equity (EquityMedQA rater pool)."),
    ("consumer", "Consumer", "Lay raters, e.g. from a crowd panel (EquityMedQA consumer study)."),
]


def create_pools(apps, schema_editor):
    RaterPool = apps.get_model("raters", "RaterPool")
    for slug, name, description in BUILTIN_POOLS:
        RaterPool.objects.get_or_create(slug=slug, defaults={"name": name, "description": description})


class Migration(migrations.Migration):
    dependencies = [("raters", "0001_initial")]

    operations = [migrations.RunPython(create_pools, migrations.RunPython.noop)]
