"""Ratings are an audit trail, a lock is final: in the admin, the API, the ORM and the database itself."""

import json

import pytest
from django.core.management import call_command
from django.db import IntegrityError, connection, transaction
from django.forms import MultiWidget
from django.urls import reverse
from django.utils import timezone

from raters.defaults import ensure_builtin_pools
from raters.models import RaterPool, RaterProfile
from studies import models as study_models
from studies.assignment import reassign_assignment
from studies.coordination import lock_study
from studies.models import Assignment, Rating, Rubric, RubricVersion, Study, StudyItem
from studies.rubric_defaults import ensure_default_rubrics
from studies.services import submit_rating
from tests.api.client import client_for
from tests.factories import AnswerFactory, AssignmentFactory, IndependentItemFactory, OnboardedRaterFactory

pytestmark = pytest.mark.django_db


def rated_assignment(**kwargs) -> Assignment:
    assignment = AssignmentFactory(**kwargs)
    submit_rating(assignment=assignment, values={"bias_presence": "no_bias"}, active_seconds=3)
    assignment.refresh_from_db()
    return assignment


def another_physician() -> RaterProfile:
    return OnboardedRaterFactory().rater_profile


def second_version(study: Study) -> RubricVersion:
    version = study.rubric_version
    return RubricVersion.objects.create(rubric=version.rubric, number=version.number + 1, definition=version.definition)


def form_data(form) -> dict:
    """What a browser would post back for a form left as shown."""
    data = {}
    for bound in form:
        value = bound.value()
        if isinstance(bound.field.widget, MultiWidget):
            for index, part in enumerate(bound.field.widget.decompress(value)):
                data[f"{bound.html_name}_{index}"] = "" if part is None else str(part)
        elif isinstance(value, bool):
            if value:
                data[bound.html_name] = "on"
        elif isinstance(value, list | tuple):
            data[bound.html_name] = [str(v) for v in value]
        else:
            data[bound.html_name] = "" if value is None else str(value)
    return data


def admin_change_data(client, url) -> dict:
    """The admin change page's form and inlines, as shown, ready to post with a few fields changed."""
    response = client.get(url)
    assert response.status_code == 200
    data = form_data(response.context["adminform"].form)
    for inline in response.context["inline_admin_formsets"]:
        data.update(form_data(inline.formset.management_form))
        for form in inline.formset.forms:
            data.update(form_data(form))
    return data


def current_values(rating: Rating) -> dict:
    return Rating.objects.filter(pk=rating.pk).values().get()


# --- The admin ------------------------------------------------------------------------------------------


def test_a_coordinator_cannot_delete_or_add_a_rating_in_the_admin(client, coordinator):
    rating = rated_assignment().ratings.get()
    client.force_login(coordinator)

    client.post(
        reverse("admin:studies_rating_changelist"),
        {"action": "delete_selected", "_selected_action": [rating.pk], "post": "yes"},
    )
    assert Rating.objects.filter(pk=rating.pk).exists()
    assert client.post(reverse("admin:studies_rating_delete", args=[rating.pk]), {"post": "yes"}).status_code == 403
    assert Rating.objects.filter(pk=rating.pk).exists()
    assert client.get(reverse("admin:studies_rating_add")).status_code == 403


def test_a_coordinator_cannot_move_a_rated_assignment_or_fake_its_status_in_the_admin(client, coordinator):
    assignment = rated_assignment()
    rater, item = assignment.rater, assignment.item
    other = another_physician()
    client.force_login(coordinator)
    url = reverse("admin:studies_assignment_change", args=[assignment.pk])
    data = admin_change_data(client, url)
    data.update(rater=str(other.pk), item=str(IndependentItemFactory().pk), status="assigned", position="7")

    response = client.post(url, data)

    assert response.status_code == 302
    assignment.refresh_from_db()
    assert (assignment.rater, assignment.item, assignment.status) == (rater, item, Assignment.Status.SUBMITTED)
    assert assignment.position == 7  # the queue order is still the coordinator's to change


def test_a_coordinator_cannot_change_what_a_rated_item_shows_in_the_admin(client, coordinator):
    item = rated_assignment().item
    answer = item.answer
    client.force_login(coordinator)
    url = reverse("admin:studies_studyitem_change", args=[item.pk])
    data = admin_change_data(client, url)
    data.update(answer=str(AnswerFactory().pk), is_attention_check="on")

    assert client.post(url, data).status_code == 302
    item.refresh_from_db()
    assert item.answer == answer and item.is_attention_check


def test_assignments_are_not_added_in_the_admin(client, coordinator):
    """Assign, claims and Reassign keep each pool's slots; a row added by hand would bypass them."""
    client.force_login(coordinator)
    assert client.get(reverse("admin:studies_assignment_add")).status_code == 403


def test_a_coordinator_cannot_clear_a_lock_in_the_admin(client, coordinator):
    study = rated_assignment().item.study
    lock_study(study=study)
    locked_at = study.locked_at
    client.force_login(coordinator)
    url = reverse("admin:studies_study_change", args=[study.pk])
    data = admin_change_data(client, url)
    data.update(locked_at_0="", locked_at_1="", description="Edited after the lock")

    response = client.post(url, data)

    assert response.status_code == 302
    study.refresh_from_db()
    assert study.locked_at == locked_at
    assert study.description == "Edited after the lock"


def test_a_coordinator_cannot_lock_in_the_admin_either(client, coordinator):
    """Locking is the dashboard's Lock button (one way in, so it can be made safe against a submit)."""
    study = IndependentItemFactory().study
    client.force_login(coordinator)
    url = reverse("admin:studies_study_change", args=[study.pk])
    data = admin_change_data(client, url)
    data.update(locked_at_0="2030-01-01", locked_at_1="12:00:00")

    assert client.post(url, data).status_code == 302
    study.refresh_from_db()
    assert study.locked_at is None


def test_a_coordinator_cannot_change_the_rubric_version_of_a_locked_study_in_the_admin(client, coordinator):
    study = IndependentItemFactory().study
    lock_study(study=study)
    version, newer = study.rubric_version, second_version(study)
    client.force_login(coordinator)
    url = reverse("admin:studies_study_change", args=[study.pk])
    data = admin_change_data(client, url)
    data.update(rubric_version=str(newer.pk))

    assert client.post(url, data).status_code == 302
    study.refresh_from_db()
    assert study.rubric_version == version


def test_the_rubric_version_of_a_rated_study_is_read_only_in_the_admin(client, coordinator):
    study = rated_assignment().item.study
    version, newer = study.rubric_version, second_version(study)
    client.force_login(coordinator)
    url = reverse("admin:studies_study_change", args=[study.pk])
    data = admin_change_data(client, url)
    data.update(rubric_version=str(newer.pk))

    assert client.post(url, data).status_code == 302
    study.refresh_from_db()
    assert study.rubric_version == version


def test_the_rubric_version_of_an_unrated_open_study_can_still_be_chosen_in_the_admin(client, coordinator):
    study = IndependentItemFactory().study
    newer = second_version(study)
    client.force_login(coordinator)
    url = reverse("admin:studies_study_change", args=[study.pk])
    data = admin_change_data(client, url)
    data.update(rubric_version=str(newer.pk))

    assert client.post(url, data).status_code == 302
    study.refresh_from_db()
    assert study.rubric_version == newer


def test_deleting_what_ratings_hang_on_in_the_admin_is_refused_with_a_message(client, coordinator):
    """Study -> items -> assignments -> ratings, a rater's profile, a dataset -> answers -> items: all protected."""
    assignment = rated_assignment()
    study, profile = assignment.item.study, assignment.rater
    client.force_login(coordinator)

    for url in (
        reverse("admin:studies_study_delete", args=[study.pk]),
        reverse("admin:studies_assignment_delete", args=[assignment.pk]),
        reverse("admin:raters_raterprofile_delete", args=[profile.pk]),
        reverse("admin:datasets_dataset_delete", args=[assignment.item.answer.question.dataset_id]),
    ):
        response = client.post(url, {"post": "yes"})
        assert response.status_code == 200
        assert b"would require deleting the following protected related objects" in response.content

    assert Study.objects.filter(pk=study.pk).exists() and RaterProfile.objects.filter(pk=profile.pk).exists()
    assert Rating.objects.filter(assignment=assignment).count() == 1


# --- The API --------------------------------------------------------------------------------------------


def test_the_api_has_no_way_to_change_or_delete_a_rating(coordinator):
    rating = rated_assignment().ratings.get()
    before = current_values(rating)
    api = client_for(coordinator)

    for method in (api.delete, api.put, api.patch):
        response = method(f"/api/ratings/{rating.pk}/", {"values": {"bias_presence": "severe_bias"}}, format="json")
        assert response.status_code == 405
        response = method(f"/api/assignments/{rating.assignment_id}/", {"rater": 1}, format="json")
        assert response.status_code == 405

    assert current_values(rating) == before


# --- The ORM (shell helpers) ----------------------------------------------------------------------------


def test_the_orm_refuses_to_delete_or_rewrite_ratings():
    assignment = rated_assignment()
    rating = assignment.ratings.get()
    before = current_values(rating)

    with pytest.raises(study_models.AuditTrailError, match="audit trail"):
        Rating.objects.filter(pk=rating.pk).delete()
    with pytest.raises(study_models.AuditTrailError):
        assignment.ratings.all().delete()
    with pytest.raises(study_models.AuditTrailError):
        rating.delete()
    with pytest.raises(study_models.AuditTrailError):
        Rating.objects.filter(pk=rating.pk).update(values={"bias_presence": "severe_bias"})
    with pytest.raises(study_models.AuditTrailError):
        Rating.objects.bulk_update([rating], ["values"])
    rating.values = {"bias_presence": "severe_bias"}
    with pytest.raises(study_models.AuditTrailError):
        rating.save()

    assert current_values(rating) == before


def test_a_revision_still_adds_a_rating_and_retires_the_previous_one():
    assignment = rated_assignment()
    revised = submit_rating(assignment=assignment, values={"bias_presence": "minor_bias"}, active_seconds=2)

    assert list(assignment.ratings.values_list("revision", "is_current")) == [(1, False), (2, True)]
    assert revised.values == {"bias_presence": "minor_bias"}


# --- The database ---------------------------------------------------------------------------------------


def refused(sql: str, params: list) -> bool:
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql, params)
    except IntegrityError as error:
        assert "audit trail" in str(error) or "locked" in str(error), error
        return True
    return False


def test_the_database_refuses_to_change_any_column_of_a_rating_but_retiring_it():
    """Raw SQL, as from a database shell: every column but is_current is fixed, is_current only goes off."""
    first = rated_assignment().ratings.get()
    second = rated_assignment().ratings.get()
    newer = second_version(second.assignment.item.study)
    Rating.objects.filter(pk=second.pk).update(is_current=False)  # retiring is allowed
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    with connection.cursor() as cursor:  # make the second row differ from the first in every column
        cursor.execute(
            'INSERT INTO studies_rating (assignment_id, rubric_version_id, revision, is_current, "values", '
            "swap_answers, active_seconds, wall_seconds, attention_check_passed, submitted_at) "
            "SELECT assignment_id, %s, 2, %s, %s, %s, 99, 99, %s, %s FROM studies_rating WHERE id = %s",
            [newer.pk, True, json.dumps({"bias_presence": "severe_bias"}), True, True, now, second.pk],
        )
    other = Rating.objects.get(assignment=second.assignment, revision=2)
    columns = [field.column for field in Rating._meta.concrete_fields if field.name != "is_current"]
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM studies_rating WHERE id IN ({first.pk}, {other.pk}) ORDER BY id")
        names = [column[0] for column in cursor.description]
        rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    assert all(rows[0][column] != rows[1][column] for column in columns), "the rows must differ in every column"

    for column in columns:
        sql = f'UPDATE studies_rating SET "{column}" = (SELECT "{column}" FROM studies_rating WHERE id = %s) '
        assert refused(sql + "WHERE id = %s", [other.pk, first.pk]), column
    assert refused("UPDATE studies_rating SET is_current = %s WHERE id = %s", [True, second.pk])
    assert Rating.objects.get(pk=first.pk).is_current
    assert not refused("UPDATE studies_rating SET is_current = %s WHERE id = %s", [False, first.pk])


@pytest.mark.postgresql
def test_the_database_refuses_to_delete_a_rating():
    if connection.vendor != "postgresql":
        pytest.fail("on SQLite only the model layer refuses (a trigger there would break flush)")
    rating = rated_assignment().ratings.get()

    assert refused("DELETE FROM studies_rating WHERE id = %s", [rating.pk])
    with pytest.raises(IntegrityError, match="audit trail"), transaction.atomic():
        Rating.objects.filter(pk=rating.pk)._raw_delete(connection.alias)
    assert Rating.objects.filter(pk=rating.pk).exists()


def test_the_database_keeps_a_lock_and_the_rubric_version_of_a_locked_study():
    study = rated_assignment().item.study
    version, newer = study.rubric_version, second_version(study)
    assert lock_study(study=study)  # NULL -> a time is how a study gets locked
    locked_at = study.locked_at

    assert refused("UPDATE studies_study SET locked_at = NULL WHERE id = %s", [study.pk])
    later = connection.ops.adapt_datetimefield_value(timezone.now())
    assert refused("UPDATE studies_study SET locked_at = %s WHERE id = %s", [later, study.pk])
    assert refused("UPDATE studies_study SET rubric_version_id = %s WHERE id = %s", [newer.pk, study.pk])
    with pytest.raises(IntegrityError), transaction.atomic():
        Study.objects.filter(pk=study.pk).update(locked_at=None)
    study.description = "Still editable"
    study.save()  # a full save writes the same lock back: allowed

    study.refresh_from_db()
    assert (study.locked_at, study.rubric_version, study.description) == (locked_at, version, "Still editable")


def test_the_database_keeps_the_rater_and_item_of_a_rated_assignment():
    assignment = rated_assignment()
    other = another_physician()

    with pytest.raises(IntegrityError), transaction.atomic():
        Assignment.objects.filter(pk=assignment.pk).update(rater=other)
    with pytest.raises(IntegrityError), transaction.atomic():
        Assignment.objects.filter(pk=assignment.pk).update(item=IndependentItemFactory())
    Assignment.objects.filter(pk=assignment.pk).update(status=Assignment.Status.WITHDRAWN)  # withdrawing: allowed

    assignment.refresh_from_db()
    assert assignment.rater != other and assignment.status == Assignment.Status.WITHDRAWN
    unrated = AssignmentFactory()
    Assignment.objects.filter(pk=unrated.pk).update(rater=other)  # nothing rated: nothing to keep
    assert Assignment.objects.get(pk=unrated.pk).rater == other


def test_the_database_keeps_what_a_rated_item_shows():
    item = rated_assignment().item
    unrated = IndependentItemFactory()

    with pytest.raises(IntegrityError, match="audit trail"), transaction.atomic():
        StudyItem.objects.filter(pk=item.pk).update(answer=AnswerFactory())
    with pytest.raises(IntegrityError), transaction.atomic():
        StudyItem.objects.filter(pk=item.pk).update(study=unrated.study)
    StudyItem.objects.filter(pk__in=[item.pk, unrated.pk]).update(is_attention_check=True)
    StudyItem.objects.filter(pk=unrated.pk).update(answer=item.answer)

    assert StudyItem.objects.get(pk=unrated.pk).answer == item.answer


def test_reassigning_an_unrated_item_to_a_rater_whose_rated_assignment_was_withdrawn_still_works():
    """Reassign revives the other rater's withdrawn assignment of the item (update_or_create): allowed, since
    it changes neither its rater nor its item."""
    returning = rated_assignment()
    Assignment.objects.filter(pk=returning.pk).update(status=Assignment.Status.WITHDRAWN)
    current = AssignmentFactory(item=returning.item)

    moved = reassign_assignment(assignment=current, to_rater=returning.rater)

    assert moved.pk == returning.pk and moved.status == Assignment.Status.ASSIGNED
    assert moved.ratings.count() == 1


@pytest.mark.django_db(transaction=True)
def test_flush_still_empties_a_database_with_ratings_and_the_guards_come_back(reference_data):
    """Transactional tests and `manage.py flush` empty every table (TRUNCATE on PostgreSQL, DELETE on SQLite)."""
    rated_assignment()

    call_command("flush", interactive=False, verbosity=0)

    assert not Rating.objects.exists() and not Assignment.objects.exists()
    ensure_builtin_pools(RaterPool)  # the flush took the migrations' reference rows: put them back
    ensure_default_rubrics(Rubric, RubricVersion)
    rating = rated_assignment().ratings.get()
    assert refused('UPDATE studies_rating SET "values" = %s WHERE id = %s', ["{}", rating.pk])
