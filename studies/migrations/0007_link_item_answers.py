"""The answers every existing item shows belong to its study (StudyAnswer via item), as new items' do."""

from django.db import migrations

BATCH = 2000


def link_item_answers(apps, schema_editor):
    StudyItem = apps.get_model("studies", "StudyItem")
    StudyAnswer = apps.get_model("studies", "StudyAnswer")
    links = set()
    for study_id, *answers in StudyItem.objects.values_list("study_id", "answer_id", "answer_1_id", "answer_2_id"):
        links.update((study_id, answer_id) for answer_id in answers if answer_id is not None)
    StudyAnswer.objects.bulk_create(
        [StudyAnswer(study_id=study_id, answer_id=answer_id, via="item") for study_id, answer_id in sorted(links)],
        ignore_conflicts=True,
        batch_size=BATCH,
    )


class Migration(migrations.Migration):
    dependencies = [("studies", "0006_typed_rubrics")]

    operations = [migrations.RunPython(link_item_answers, migrations.RunPython.noop)]
