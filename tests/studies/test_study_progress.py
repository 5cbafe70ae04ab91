"""Progress of every study: the studies list and dashboard count each study's answers (generated, imported, in
items) and how many are scored, beside its ratings; a study read by scorers only (no rubric) shows its answers'
progress, never "0 / 0", and has no items, queue, pools, exports or rating pages."""

import pytest
from django.contrib.messages import get_messages
from django.core.exceptions import ValidationError
from django.urls import reverse

from studies.answer_progress import answer_progress
from studies.assignment import AssignmentError, build_items
from studies.dashboard import studies_with_progress
from studies.exports import NO_RATINGS_TO_EXPORT
from studies.models import StudyAnswer, StudyItem
from studies.ratings_import import RatingsImportError, import_ratings
from studies.release import FILENAMES
from tests.factories import (
    AnalystFactory,
    AnswerFactory,
    IndependentItemFactory,
    ScoreFactory,
    StudyFactory,
)
from tests.studies.test_exports import build_release
from tests.studies.test_import_ratings import wipe_everything_the_release_holds

pytestmark = pytest.mark.django_db

GENERATED, IMPORTED = StudyAnswer.Via.GENERATED, StudyAnswer.Via.IMPORTED
SCORERS = [{"name": "letter", "version": 2}, {"name": "released", "version": 1}]


def link(study, answers, via) -> None:
    StudyAnswer.objects.link(study_id=study.pk, answer_ids=[a.pk for a in answers], via=via)


@pytest.fixture
def automatic():
    """A BiasMedQA-like study read by scorers only: 3 generated and 2 imported answers; letter v2 scored 4 of
    them, the released label 2 (an older letter v1 score does not count)."""
    study = StudyFactory(name="BiasMedQA run", rubric_version=None,
                         definition={"format": 1, "name": "BiasMedQA run", "scorers": SCORERS})  # fmt: skip
    generated, imported = AnswerFactory.create_batch(3), AnswerFactory.create_batch(2)
    link(study, generated, GENERATED)
    link(study, imported, IMPORTED)
    for answer in [*generated, imported[0]]:
        ScoreFactory(answer=answer, scorer="letter", version=2)
    ScoreFactory(answer=imported[1], scorer="letter", version=1)
    for answer in imported:
        ScoreFactory(answer=answer, scorer="released", version=1)
    return study


def test_answer_progress_counts_each_way_and_each_scorer_of_the_definition(automatic):
    unscored = StudyFactory(name="Imported, no scorers named", rubric_version=None)
    answers = AnswerFactory.create_batch(2)
    link(unscored, answers, IMPORTED)
    ScoreFactory(answer=answers[0], scorer="p_no", outcome="measured", number=0.5)
    link(unscored, answers[:1], GENERATED)  # already linked: keeps its first way

    progress = answer_progress([automatic, unscored, StudyFactory()])

    first = progress[automatic.pk]
    assert (first.linked, first.generated, first.imported, first.in_items, first.scored_any) == (5, 3, 2, 0, 5)
    assert [(s.label, s.scored) for s in first.scorers] == [("letter v2", 4), ("released v1", 2)]
    assert first.scored == 2 and first.percent == 40  # scored by every scorer named: the fewest
    second = progress[unscored.pk]
    assert (second.linked, second.imported, second.scorers, second.scored, second.percent) == (2, 2, [], 1, 50)
    assert progress[max(progress)].linked == 0


def test_the_studies_list_shows_every_studys_answers_and_progress(client, automatic, django_assert_max_num_queries):
    rated = IndependentItemFactory().study
    client.force_login(AnalystFactory())
    studies = {study.pk: study for study in studies_with_progress()}
    assert studies[automatic.pk].percent == 40 and studies[rated.pk].answer_progress.in_items == 1

    with django_assert_max_num_queries(13):  # a fixed number, whatever the number of studies (judges: one)
        page = client.get(reverse("coordination:list")).content.decode()

    page = " ".join(page.split())  # the cells' own line breaks aside
    row = page[page.index("BiasMedQA run") :].split("</tr>")[0]
    assert "Scorers only" in row and '5 <span class="hint">(3 generated, 2 imported)</span>' in row
    # The fewest of the scorers it names (released v1: 2 of 5), each scorer's count in the cell's title.
    assert '<span title="letter v2: 4 / 5; released v1: 2 / 5">2 / 5</span>' in row
    assert "(by each of 2 scorers)" in row and "40 % scored" in row
    assert "0 / 0" not in row and "no rubric: not rated" in row
    rated_row = page[page.index(rated.name) :].split("</tr>")[0]
    assert '1 <span class="hint">(1 in items)</span>' in rated_row
    assert "<td> — </td>" in rated_row  # scored: it names no scorer and holds no score


def test_the_dashboard_of_a_scorers_only_study_shows_its_answers_and_no_rating_sections(client, automatic):
    client.force_login(AnalystFactory())
    response = client.get(reverse("coordination:dashboard", args=[automatic.pk]))
    page = response.content.decode()

    assert response.status_code == 200
    assert "Read by scorers only (no rubric)" in page and "nobody rates its answers" in page
    assert "<dt>Generated for it</dt><dd>3</dd>" in page and "<dt>Imported into it</dt><dd>2</dd>" in page
    assert "<dt>Scored by letter v2</dt><dd>4 / 5</dd>" in page
    assert f"{reverse('analysis:index')}?study={automatic.pk}" in page
    for section in ("Progress by rater pool", "Raters", "Drop-outs", "Lock the study", "export.csv"):
        assert section not in page


def test_the_dashboard_of_a_rated_study_counts_its_answers_too(client):
    item = IndependentItemFactory()
    ScoreFactory(answer=item.answer, scorer="letter", version=2)
    client.force_login(AnalystFactory())
    page = client.get(reverse("coordination:dashboard", args=[item.study.pk])).content.decode()

    assert "<dt>Rated in its items</dt><dd>1</dd>" in page and "<dt>Scored</dt><dd>1 / 1</dd>" in page
    assert "Progress by rater pool" in page and "export.csv" in page


def test_progress_pages_refuse_raters_and_the_wrong_method(client, automatic, physician):
    client.force_login(physician)
    assert client.get(reverse("coordination:list")).status_code == 403
    assert client.get(reverse("coordination:dashboard", args=[automatic.pk])).status_code == 403
    client.force_login(AnalystFactory())
    assert client.post(reverse("coordination:dashboard", args=[automatic.pk])).status_code == 405


# --- Everything that reads a study's rubric handles a study without one -------------------------------------------


def test_a_scorers_only_study_has_no_items(automatic):
    with pytest.raises(AssignmentError, match="read by scorers only: nobody rates its answers, so it has no items"):
        build_items(study=automatic, dataset_ids=[], source_ids=[])
    item = StudyItem(study=automatic, answer=AnswerFactory())
    with pytest.raises(ValidationError, match="has no items"):
        item.clean()
    rated = IndependentItemFactory().study
    rated.rubric_version = None
    with pytest.raises(ValidationError, match="Give it a rubric version"):
        rated.clean()


def test_exports_of_a_scorers_only_study_are_refused_with_the_reason(client, coordinator, automatic):
    client.force_login(coordinator)
    for name in ("coordination:export_csv", "coordination:export_workbook"):
        response = client.get(reverse(name, args=[automatic.pk]))
        assert response.status_code == 302 and response.url == reverse("coordination:dashboard", args=[automatic.pk])
        said = {str(message) for message in get_messages(response.wsgi_request)}
        assert said == {"The export was not made: " + NO_RATINGS_TO_EXPORT}
    api = client.get(f"/api/studies/{automatic.pk}/export/")
    assert api.status_code == 409 and "has no ratings to export" in api.json()["detail"]


def test_the_api_lists_a_scorers_only_study(client, coordinator, automatic):
    client.force_login(coordinator)
    response = client.get(f"/api/studies/{automatic.pk}/")
    data = response.json()
    assert response.status_code == 200
    assert (data["kind"], data["scorers_only"], data["rubric_version"], data["item_count"]) == (None, True, None, 0)
    rated = IndependentItemFactory().study
    assert client.get(f"/api/studies/{rated.pk}/").json()["scorers_only"] is False


def test_admin_pages_of_a_scorers_only_study_open(client, coordinator, automatic):
    client.force_login(coordinator)
    assert client.get(reverse("admin:studies_study_changelist")).status_code == 200
    assert client.get(reverse("admin:studies_study_change", args=[automatic.pk])).status_code == 200
    add = client.post(reverse("admin:studies_studyitem_add"), {"study": automatic.pk, "answer": AnswerFactory().pk,
                                                               "expected_values": "{}"})  # fmt: skip
    assert add.status_code == 200 and "has no items" in add.content.decode() and not StudyItem.objects.exists()
    links = client.get(reverse("admin:studies_studyanswer_changelist"), {"study__id__exact": automatic.pk})
    assert links.status_code == 200 and "5 study answers" in links.content.decode()
    link = StudyAnswer.objects.filter(study=automatic).first()
    assert client.post(reverse("admin:studies_studyanswer_delete", args=[link.pk]), {"post": "yes"}).status_code == 403


def test_panel_and_analysis_pages_of_a_scorers_only_study_say_what_it_is(client, automatic):
    panel = client.get(reverse("raters:panel_start", args=[automatic.pk]), {"PROLIFIC_PID": "p1", "STUDY_ID": "s"})
    assert panel.status_code == 404 and "This study is not open to panel participants." in panel.content.decode()
    client.force_login(AnalystFactory())
    assert client.get(reverse("analysis:index"), {"study": automatic.pk}).status_code == 200


def test_ratings_cannot_be_imported_into_a_scorers_only_study(tmp_path):
    from studies.exports import write_csv_files

    build_release()
    write_csv_files(tmp_path)
    wipe_everything_the_release_holds()
    StudyFactory(name="Independent study", rubric_version=None)

    with pytest.raises(RatingsImportError) as refused:
        import_ratings(path=tmp_path)
    message = "the study 'Independent study' is read by scorers only (it has no rubric): it takes no ratings"
    assert any(message in problem for problem in refused.value.problems)
    assert not StudyItem.objects.exists() and (tmp_path / FILENAMES["independent"]).exists()


def test_the_studies_list_counts_the_ratings_of_a_study_whose_ratings_were_imported_without_slots(client):
    """A ratings release imported for re-analysis has ratings but no slots: the list shows how many it keeps,
    not "0 / 0" and "0 %"."""
    from studies.services import submit_rating
    from tests.factories import AssignmentFactory

    assignment = AssignmentFactory()  # no slot: as the ratings import makes them
    submit_rating(assignment=assignment, values={"bias_presence": "no_bias"}, active_seconds=3)
    client.force_login(AnalystFactory())

    page = " ".join(client.get(reverse("coordination:list")).content.decode().split())
    row = page[page.index(assignment.item.study.name) :].split("</tr>")[0]
    assert '<td>1 <span class="hint">(imported: no slots)</span></td>' in row and "0 / 0" not in row
