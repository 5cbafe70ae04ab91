"""Bulk withdraw and reassign (studies/DESIGN.md, "Bulk withdraw and reassign"), and usernames for coordinators:
every unrated item of a rater at once, under the per-item rules (locks, re-checks, ratings kept), all or none."""

import pytest
from django.urls import reverse

from studies import coordination
from studies.assignment import AssignmentError, assign_study
from studies.models import Assignment, Rating, Slot
from studies.services import StudyLocked
from tests.factories import AnalystFactory, AssignmentFactory
from tests.studies.test_dashboard import messages_of, pool, raters, study_with_items, submit

pytestmark = pytest.mark.django_db


@pytest.fixture
def study_and_raters():
    """Three items, one rating each, all held by `first` (the pool's only rater when they were assigned);
    `second` joined the pool later."""
    study = study_with_items(n_items=3, replication=1)
    first = raters("physician", 1)[0]
    assign_study(study=study, pool_id=pool("physician").id)
    second = raters("physician", 1)[0]
    return study, first, second


def held_by(rater, *statuses):
    return Assignment.objects.filter(rater=rater, status__in=statuses or ["assigned", "started"])


def test_withdrawing_all_takes_back_the_unrated_items_and_keeps_the_ratings(client, coordinator, study_and_raters):
    study, first, _ = study_and_raters
    rated = held_by(first).first()
    submit(rated, active=5)
    client.force_login(coordinator)

    response = client.post(reverse("coordination:withdraw_open", args=[study.pk, first.pk]))

    assert response["Location"] == reverse("coordination:rater", args=[study.pk, first.pk])
    assert messages_of(response) == [f"2 unrated item(s) withdrawn from {first.pseudonym}; they can be assigned "
                                     "again. Ratings are kept."]  # fmt: skip
    assert not held_by(first).exists()
    rated.refresh_from_db()
    assert rated.status == "submitted" and Rating.objects.filter(assignment=rated, is_current=True).exists()
    withdrawn = Assignment.objects.filter(rater=first, status="withdrawn")
    assert withdrawn.count() == 2 and not Slot.objects.filter(assignment__in=withdrawn).exists()


def test_reassigning_all_moves_every_unrated_item_and_its_slot(client, coordinator, study_and_raters):
    study, first, _ = study_and_raters
    spare = raters("physician", 1)[0]
    moving = list(held_by(first).values_list("item_id", flat=True))
    client.force_login(coordinator)

    response = client.post(reverse("coordination:reassign_open", args=[study.pk, first.pk]), {"to_rater": spare.pk})

    assert messages_of(response) == [f"3 unrated item(s) moved from {first.pseudonym} to {spare.pseudonym}."]
    assert not held_by(first).exists()
    assert sorted(held_by(spare).values_list("item_id", flat=True)) == sorted(moving)
    assert {Slot.objects.get(item_id=item).assignment.rater for item in moving} == {spare}


def test_reassigning_all_moves_nothing_when_one_item_cannot_go(client, coordinator, study_and_raters):
    study, first, second = study_and_raters
    blocked = held_by(first).order_by("pk").last()
    AssignmentFactory(item=blocked.item, rater=second)  # second already holds one of them
    client.force_login(coordinator)

    response = client.post(reverse("coordination:reassign_open", args=[study.pk, first.pk]), {"to_rater": second.pk})

    assert messages_of(response) == [
        f"Nothing was moved. Item {blocked.item_id}: {second.pseudonym} already has this item."
    ]
    assert held_by(first).count() == 3


def test_reassigning_all_refuses_an_author_of_an_item(study_and_raters):
    study, first, second = study_and_raters
    answer = held_by(first).first().item.answer
    answer.author = second.user
    answer.save()

    with pytest.raises(AssignmentError, match="Nothing was moved"):
        coordination.reassign_open_items(study=study, profile=first, to_rater=second)
    assert held_by(first).count() == 3


def test_a_locked_study_refuses_both(study_and_raters):
    study, first, second = study_and_raters
    coordination.lock_study(study=study)

    with pytest.raises(StudyLocked):
        coordination.withdraw_open_items(study=study, profile=first)
    with pytest.raises(StudyLocked):
        coordination.reassign_open_items(study=study, profile=first, to_rater=second)
    assert held_by(first).count() == 3


def test_only_coordinators_act_in_bulk_and_only_by_post(client, study_and_raters, physician):
    study, first, second = study_and_raters
    urls = [reverse(f"coordination:{name}", args=[study.pk, first.pk]) for name in ("withdraw_open", "reassign_open")]
    for user in (AnalystFactory(), physician):
        client.force_login(user)
        assert [client.post(url, {"to_rater": second.pk}).status_code for url in urls] == [403, 403]
    assert held_by(first).count() == 3


def test_coordinators_see_usernames_and_analysts_pseudonyms(client, coordinator, study_and_raters):
    study, first, _ = study_and_raters
    client.force_login(coordinator)
    dashboard = client.get(reverse("coordination:dashboard", args=[study.pk])).content.decode()
    rater_page = client.get(reverse("coordination:rater", args=[study.pk, first.pk])).content.decode()
    assert first.user.username in dashboard and first.pseudonym in dashboard
    assert first.user.username in rater_page and "Withdraw all 3 unrated items" in rater_page

    client.force_login(AnalystFactory())
    as_analyst = client.get(reverse("coordination:dashboard", args=[study.pk])).content.decode()
    assert first.user.username not in as_analyst and first.pseudonym in as_analyst


def test_the_bulk_forms_only_show_with_open_items(client, coordinator, study_and_raters):
    study, first, _ = study_and_raters
    coordination.withdraw_open_items(study=study, profile=first)
    client.force_login(coordinator)

    page = client.get(reverse("coordination:rater", args=[study.pk, first.pk])).content.decode()

    assert reverse("coordination:withdraw_open", args=[study.pk, first.pk]) not in page
