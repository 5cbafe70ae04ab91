"""A coordinator uploads a study file in Chromium: a bad file shows every problem with its line and key and
creates nothing; the corrected file creates the study and opens its page."""

import pytest

from studies.models import Study
from tests.browser.conftest import log_in, screenshot
from tests.factories import PASSWORD, AnswerSourceFactory, CoordinatorFactory, DatasetFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

GOOD = """\
format: 1
name: Uploaded in the browser
questions:
- dataset: Questions
conditions:
- source: Model A
scorers:
- {name: letter, version: 2}
"""


def test_a_bad_upload_lists_its_problems_then_the_corrected_file_creates_the_study(page, tmp_path):
    coordinator = CoordinatorFactory()
    DatasetFactory(name="Questions")
    AnswerSourceFactory(name="Model A")
    bad, good = tmp_path / "bad.yaml", tmp_path / "good.yaml"
    bad.write_text(GOOD.replace("Model A", "Model Z").replace("version: 2", "version: two"), encoding="utf-8")
    good.write_text(GOOD, encoding="utf-8")
    log_in(page, coordinator.username, PASSWORD)

    page.goto("/studies/")
    page.get_by_role("link", name="Load a study file").click()
    page.set_input_files("#id_file", str(bad))
    page.get_by_role("button", name="Load the study").click()

    problems = page.locator("[data-study-file-problems] li")
    assert problems.all_inner_texts() == [
        "line 6, conditions[0].source: no answer source named 'Model Z'",
        'line 8, scorers[0].version: expected a whole number, not "two"',
    ]
    assert "2 problems in the file" in page.inner_text("[data-study-file-problems] h2")
    screenshot(page, "study_file_upload_problems")
    assert not Study.objects.exists()

    page.set_input_files("#id_file", str(good))
    page.get_by_role("button", name="Load the study").click()

    study = Study.objects.get(name="Uploaded in the browser")
    page.wait_for_url(f"**/studies/{study.pk}/")
    assert "Study file loaded: created" in page.inner_text("body")
    screenshot(page, "study_file_upload_loaded")
