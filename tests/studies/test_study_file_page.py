"""The coordinator's page for loading a study file: problems listed with line and key and nothing created, a good
file redirects to the study; only coordinators may load."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from studies.models import Study
from studies.study_files import export_study
from tests.factories import AnalystFactory, AnswerSourceFactory, DatasetFactory

pytestmark = pytest.mark.django_db

URL = reverse("coordination:load_file")
GOOD = b"format: 1\nname: Uploaded\nquestions:\n- dataset: Questions\nconditions:\n- source: Model A\n"


def upload(client, content: bytes, **extra):
    return client.post(URL, {"file": SimpleUploadedFile("study.yaml", content), **extra})


@pytest.fixture
def names(db):
    DatasetFactory(name="Questions")
    AnswerSourceFactory(name="Model A")


def test_a_good_file_creates_the_study_and_redirects_to_it(client, coordinator, names):
    client.force_login(coordinator)
    assert client.get(URL).status_code == 200

    response = upload(client, GOOD)

    study = Study.objects.get(name="Uploaded")
    assert response.status_code == 302
    assert response["Location"] == reverse("coordination:dashboard", args=[study.pk])
    assert upload(client, GOOD)["Location"] == response["Location"]  # the same file again: the same study
    assert Study.objects.count() == 1


def test_a_bad_file_lists_every_problem_with_its_line_and_creates_nothing(client, coordinator, names):
    client.force_login(coordinator)
    bad = GOOD.replace(b"Questions", b"Quests").replace(b"Model A", b"Model Z") + b"colour: red\n"

    response = upload(client, bad)

    assert response.status_code == 400
    page = response.content.decode()
    assert "3 problems in the file" in page
    assert "<strong>line 4</strong>, <code>questions[0].dataset</code>: no dataset named &#x27;Quests&#x27;" in page
    assert "<strong>line 6</strong>, <code>conditions[0].source</code>: no answer source named" in page
    assert "<strong>line 7</strong>, <code>colour</code>: unknown key" in page
    assert not Study.objects.exists()


def test_an_object_tag_or_binary_upload_is_refused_with_a_message(client, coordinator, names):
    client.force_login(coordinator)

    tagged = upload(client, b"format: 1\nname: !!python/object/new:os.system [echo]\n")
    binary = upload(client, b"format: 1\nname: \xff\xfe\n")

    assert "the tag !!python/object/new:os.system is refused" in tagged.content.decode()
    assert "the file is not UTF-8 text" in binary.content.decode()
    assert (tagged.status_code, binary.status_code) == (400, 400)
    assert not Study.objects.exists()


def test_only_coordinators_load_study_files(client, physician, names):
    assert client.get(URL).status_code == 302  # anonymous: to the login page
    for user in (physician, AnalystFactory()):
        client.force_login(user)
        assert client.get(URL).status_code == 403
        assert upload(client, GOOD).status_code == 403
    assert not Study.objects.exists()


def test_the_page_takes_only_get_and_post(client, coordinator):
    client.force_login(coordinator)
    assert client.put(URL).status_code == 405


def test_the_study_team_downloads_a_studys_file(client, coordinator, names):
    client.force_login(coordinator)
    upload(client, GOOD)
    study = Study.objects.get(name="Uploaded")
    url = reverse("coordination:study_file", args=[study.pk])

    for user in (coordinator, AnalystFactory()):
        client.force_login(user)
        response = client.get(url)
        assert response.status_code == 200
        assert response["Content-Disposition"] == 'attachment; filename="uploaded.yaml"'
        assert response.content.decode() == export_study(study)
    assert client.post(url).status_code == 405
    assert client.get(reverse("coordination:study_file", args=[999])).status_code == 404


def test_raters_cannot_download_a_studys_file(client, physician, names):
    study = Study.objects.create(name="Hidden")
    client.force_login(physician)
    assert client.get(reverse("coordination:study_file", args=[study.pk])).status_code == 403
