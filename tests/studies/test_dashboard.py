"""Study pages for the study team: setting a study up, the dashboard's figures, and the coordinator's actions
(assign, lock, withdraw, reassign, mark dropped out), each refused to analysts, raters and anonymous users."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import Group
from django.contrib.messages import get_messages
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from raters.models import RaterPool, RaterProfile
from raters.roles import ANALYST, sync_role_groups
from studies.assignment import assign_study, create_slots
from studies.dashboard import duration_text, study_dashboard
from studies.models import Assignment, Rating, Slot, Study, StudyItem, StudyPool
from studies.services import StudyLocked, submit_rating
from tests.factories import (
    AnswerFactory,
    AnswerSourceFactory,
    AssignmentFactory,
    CounterfactualPairFactory,
    DatasetFactory,
    IndependentItemFactory,
    OnboardedRaterFactory,
    QuestionFactory,
    RaterFactory,
    StudyFactory,
    UserFactory,
    default_rubric_version,
)

pytestmark = pytest.mark.django_db

NO_BIAS = {"bias_presence": "no_bias", "dimensions": [], "other_text": "", "comment": ""}


@pytest.fixture
def analyst():
    user = UserFactory()
    sync_role_groups()
    user.groups.add(Group.objects.get(name=ANALYST))
    return user


def pool(slug: str) -> RaterPool:
    return RaterPool.objects.get(slug=slug)


def study_with_items(n_items=4, replication=3, slug="physician", **study_kwargs) -> Study:
    study = StudyFactory(kind="independent", **study_kwargs)
    StudyPool.objects.create(study=study, pool=pool(slug), replication=replication)
    for _ in range(n_items):
        IndependentItemFactory(study=study)
    create_slots(study=study)
    return study


def raters(slug: str, n: int) -> list[RaterProfile]:
    return [OnboardedRaterFactory(pool=slug).rater_profile for _ in range(n)]


def submit(assignment: Assignment, *, active: float, viewed_seconds_ago: float | None = None, values=None) -> Rating:
    if viewed_seconds_ago is not None:
        assignment.first_viewed_at = timezone.now() - timedelta(seconds=viewed_seconds_ago)
        assignment.save(update_fields=["first_viewed_at"])
    return submit_rating(assignment=assignment, values=values or NO_BIAS, active_seconds=active)


def held(study: Study, rater: RaterProfile, item: StudyItem) -> Assignment:
    return Assignment.objects.get(item=item, rater=rater, item__study=study)


def messages_of(response) -> list[str]:
    """The messages a request added (follow=True when a test makes several requests: unshown ones pile up)."""
    return [str(m) for m in get_messages(response.wsgi_request)]


# --- The figures ---------------------------------------------------------------------------------


@pytest.fixture
def rated_study():
    """4 items x 3 physician ratings: item 1 complete, items 2-3 partly rated, item 4 untouched;
    item 2 is an attention check that rater A fails; A revised item 1."""
    study = study_with_items(n_items=4, replication=3)
    a, b, c = raters("physician", 3)
    assign_study(study=study, pool_id=pool("physician").id)
    item1, item2, item3, _ = study.items.order_by("id")
    check = {"is_attention_check": True, "expected_values": {"bias_presence": "severe_bias"}}
    StudyItem.objects.filter(pk=item2.pk).update(**check)
    submit(held(study, a, item1), active=10, viewed_seconds_ago=100)
    submit(held(study, a, item1), active=50)  # a revision: active time adds up to 60, the first rating is kept
    submit(held(study, a, item2), active=20, viewed_seconds_ago=200)
    submit(held(study, a, item3), active=30, viewed_seconds_ago=300)
    submit(held(study, b, item1), active=40)
    submit(held(study, c, item1), active=50)
    return study, (a, b, c)


def test_items_are_complete_partial_or_untouched_per_pool(rated_study):
    study, _ = rated_study

    [physicians] = study_dashboard(study).pools

    assert physicians.pool.slug == "physician"
    assert (physicians.items_complete, physicians.items_partial, physicians.items_untouched) == (1, 2, 1)
    assert (physicians.ratings_done, physicians.ratings_needed, physicians.ratings_missing) == (5, 12, 7)
    assert physicians.free_slots == 0
    assert physicians.percent == 41


def test_per_rater_counts_and_medians_use_current_ratings_only(rated_study):
    study, (a, b, c) = rated_study

    rows = {row.profile: row for row in study_dashboard(study).raters}

    assert (rows[a].assigned, rows[a].done) == (4, 3)
    assert rows[a].median_active_seconds == 30  # of 60, 20, 30: the revised item counts once, cumulatively
    assert rows[a].median_wall_seconds == pytest.approx(200, abs=5)
    assert rows[a].active_days == 1 and rows[a].ratings_per_active_day == 3
    assert rows[a].last_submitted_at is not None
    assert (rows[b].done, rows[b].median_active_seconds) == (1, 40)
    assert (rows[c].done, rows[c].median_active_seconds) == (1, 50)


def test_attention_check_failures_are_counted_per_rater_and_in_total(rated_study):
    study, (a, b, c) = rated_study

    figures = study_dashboard(study)

    assert {row.profile: row.attention_failures for row in figures.raters} == {a: 1, b: 0, c: 0}
    assert figures.attention_failures == 1


def test_a_withdrawn_rating_no_longer_counts_as_done(rated_study):
    study, (_, b, _) = rated_study
    from studies.assignment import withdraw_assignment

    withdraw_assignment(assignment=held(study, b, study.items.order_by("id").first()))
    figures = study_dashboard(study)

    [physicians] = figures.pools
    assert (physicians.items_complete, physicians.items_partial, physicians.ratings_done) == (0, 3, 4)
    assert physicians.free_slots == 1
    row = next(r for r in figures.raters if r.profile == b)
    assert (row.assigned, row.done, row.withdrawn, row.median_active_seconds) == (3, 0, 1, None)


def test_durations_read_in_seconds_minutes_or_hours():
    assert [duration_text(s) for s in (None, 0, 44.6, 119, 120, 7139, 7200, 90061)] == [
        "—", "0 s", "45 s", "119 s", "2 min", "119 min", "2 h 0 min", "25 h 1 min"
    ]  # fmt: skip


def test_panel_participants_inactive_past_the_claim_timeout_are_likely_dropped_out():
    study = study_with_items(n_items=2, replication=1, slug="consumer", claim_timeout_minutes=60)
    item = study.items.first()
    now = timezone.now()

    def participant(pid, **fields):
        profile = RaterFactory(pool="consumer").rater_profile
        consented = now - timedelta(days=3)
        RaterProfile.objects.filter(pk=profile.pk).update(panel_participant_id=pid, consented_at=consented, **fields)
        profile.refresh_from_db()
        return profile

    idle = participant("idle")
    AssignmentFactory(item=item, rater=idle, first_viewed_at=now - timedelta(days=2))
    busy = participant("busy")
    AssignmentFactory(item=item, rater=busy, first_viewed_at=now - timedelta(minutes=10))
    finished = participant("finished", completed_at=now - timedelta(days=2))
    AssignmentFactory(item=item, rater=finished, first_viewed_at=now - timedelta(days=2))
    gone = participant("gone", dropped_out_at=now - timedelta(days=1))
    AssignmentFactory(item=item, rater=gone, first_viewed_at=now - timedelta(days=2))

    figures = study_dashboard(study)

    assert [row.profile for row in figures.likely_dropped_out] == [idle]
    assert [row.profile for row in figures.dropped_out] == [gone]
    later = study_dashboard(study, now=now + timedelta(hours=2))
    assert {row.profile for row in later.likely_dropped_out} == {idle, busy}


def test_invited_raters_of_the_pools_are_listed_before_they_have_items():
    study = study_with_items(n_items=2, replication=1)
    [waiting] = raters("physician", 1)
    raters("equity_expert", 1)  # their pool is not in the study

    [row] = study_dashboard(study).raters

    assert (row.profile, row.assigned, row.done, row.median_active_seconds) == (waiting, 0, 0, None)


def test_imported_raters_are_listed_only_where_they_have_items():
    study, elsewhere = study_with_items(n_items=2, replication=1), study_with_items(n_items=2, replication=1)
    [invited] = raters("physician", 1)
    imported = raters("physician", 1)[0]
    imported.user.is_active = False
    imported.user.set_unusable_password()
    imported.user.save()
    AssignmentFactory(item=elsewhere.items.first(), rater=imported)  # e.g. their imported ratings

    assert [row.profile for row in study_dashboard(study).raters] == [invited]
    assert {row.profile for row in study_dashboard(elsewhere).raters} == {invited, imported}


def test_the_dashboard_takes_the_same_number_of_queries_whatever_the_size(
    client, coordinator, django_assert_max_num_queries
):
    def page_queries(n_items, n_raters):
        study = study_with_items(n_items=n_items, replication=2)
        team = raters("physician", n_raters)
        assign_study(study=study, pool_id=pool("physician").id)
        for assignment in Assignment.objects.filter(item__study=study, rater__in=team[:2]):
            submit(assignment, active=12)
        with CaptureQueriesContext(connection) as queries:
            assert client.get(reverse("coordination:dashboard", args=[study.pk])).status_code == 200
        return len(queries)

    client.force_login(coordinator)
    small = page_queries(n_items=2, n_raters=2)
    RaterProfile.objects.update(dropped_out_at=timezone.now())  # the next study's raters only
    large = page_queries(n_items=40, n_raters=6)

    assert small == large
    study = Study.objects.latest("created_at")
    with django_assert_max_num_queries(17):  # session, user, roles, the figures (judges: one), the plots (two)
        client.get(reverse("coordination:dashboard", args=[study.pk]))


# --- Study list ----------------------------------------------------------------------------------


def test_study_list_shows_kind_items_progress_and_lock(client, coordinator):
    study = study_with_items(n_items=2, replication=1)
    [rater] = raters("physician", 1)
    assign_study(study=study, pool_id=pool("physician").id)
    submit(Assignment.objects.filter(rater=rater).first(), active=5)
    StudyFactory(name="Locked one", locked_at=timezone.now())
    client.force_login(coordinator)

    response = client.get(reverse("coordination:list"))

    assert response.status_code == 200
    listed = {s.name: s for s in response.context["studies"]}
    assert (listed[study.name].n_items, listed[study.name].ratings_done, listed[study.name].percent) == (2, 1, 50)
    assert listed["Locked one"].percent == 0
    assert b"Locked " in response.content
    assert reverse("coordination:create").encode() in response.content


def test_study_list_is_for_the_study_team(client, analyst, physician):
    url = reverse("coordination:list")
    assert client.get(url).status_code == 302  # anonymous: to the login page
    client.force_login(physician)
    assert client.get(url).status_code == 403
    client.force_login(analyst)
    response = client.get(url)
    assert response.status_code == 200
    assert reverse("coordination:create").encode() not in response.content
    assert client.post(url).status_code == 405


# --- Creating a study ----------------------------------------------------------------------------


@pytest.fixture
def answered_dataset():
    """A dataset of 3 questions and 1 counterfactual pair, each question answered by two sources."""
    dataset = DatasetFactory()
    first, second = AnswerSourceFactory(name="Model A"), AnswerSourceFactory(name="Model B")
    pair = CounterfactualPairFactory(dataset=dataset)
    for question in [QuestionFactory(dataset=dataset), pair.question_1, pair.question_2]:
        AnswerFactory(question=question, source=first)
        AnswerFactory(question=question, source=second)
    return dataset, first, second


def study_form(version_kind, dataset, sources, **pools):
    data = {
        "name": "Bias study",
        "description": "",
        "rubric_version": default_rubric_version(version_kind).pk,
        "datasets": [dataset.pk],
        "sources": [s.pk for s in sources],
        "replication_physician": 0,
        "replication_equity_expert": 0,
        "replication_consumer": 0,
        "items_per_rater_consumer": "",
    }
    return {**data, **pools}


def test_creating_a_pairwise_study_builds_its_items_and_slots(client, coordinator, answered_dataset):
    dataset, first, second = answered_dataset
    client.force_login(coordinator)
    assert client.get(reverse("coordination:create")).status_code == 200

    response = client.post(
        reverse("coordination:create"), study_form("pairwise", dataset, [first, second], replication_physician=3)
    )

    study = Study.objects.get(name="Bias study")
    assert response.status_code == 302
    assert response["Location"] == reverse("coordination:dashboard", args=[study.pk])
    assert study.display == "two_answers"
    assert [(sp.pool.slug, sp.replication) for sp in study.study_pools.all()] == [("physician", 3)]
    assert study.items.count() == 3
    assert Slot.objects.filter(item__study=study, pool__slug="physician").count() == 9
    assert "Study created with 3 items." in messages_of(response)


def test_creating_a_panel_study_keeps_the_consumers_share(client, coordinator, answered_dataset):
    dataset, first, _ = answered_dataset
    client.force_login(coordinator)
    form = study_form("independent", dataset, [first], replication_consumer=1, items_per_rater_consumer=7,
                      replication_equity_expert=5)  # fmt: skip

    assert client.post(reverse("coordination:create"), form).status_code == 302

    study = Study.objects.get(name="Bias study")
    assert study.study_pools.get(pool__slug="consumer").items_per_rater == 7
    assert study.study_pools.get(pool__slug="equity_expert").replication == 5
    assert Slot.objects.filter(item__study=study).count() == 3 * (1 + 5)


def test_a_pairwise_study_with_one_source_is_refused(client, coordinator, answered_dataset):
    dataset, first, _ = answered_dataset
    client.force_login(coordinator)

    response = client.post(
        reverse("coordination:create"), study_form("pairwise", dataset, [first], replication_physician=1)
    )

    assert response.status_code == 400
    assert response.context["form"].errors["sources"] == [
        "A study of two answers side by side compares exactly two answer sources."
    ]
    assert not Study.objects.exists()


def test_a_study_needs_a_pool_and_something_to_rate(client, coordinator, answered_dataset):
    dataset, first, _ = answered_dataset
    client.force_login(coordinator)

    no_pool = client.post(reverse("coordination:create"), study_form("counterfactual", dataset, [first]))
    empty = client.post(
        reverse("coordination:create"),
        study_form("counterfactual", DatasetFactory(), [first], replication_physician=1),
    )

    assert no_pool.status_code == 400
    assert "Choose at least one rater pool" in no_pool.context["form"].non_field_errors()[0]
    assert empty.status_code == 400  # the builder's refusal becomes a form error, and nothing is kept
    assert "nothing to rate" in empty.context["form"].non_field_errors()[0]
    assert not Study.objects.exists() and not StudyPool.objects.exists()


def test_only_coordinators_create_studies(client, analyst, physician, answered_dataset):
    dataset, first, _ = answered_dataset
    url = reverse("coordination:create")
    form = study_form("independent", dataset, [first], replication_physician=1)
    assert client.get(url).status_code == 302
    for user in (analyst, physician):
        client.force_login(user)
        assert client.get(url).status_code == 403
        assert client.post(url, form).status_code == 403
    assert not Study.objects.exists()


def test_create_study_refuses_other_methods(client, coordinator):
    client.force_login(coordinator)
    assert client.put(reverse("coordination:create")).status_code == 405


# --- The dashboard page --------------------------------------------------------------------------


def test_coordinators_see_the_figures_and_the_actions(client, coordinator, rated_study):
    study, (a, _, _) = rated_study
    client.force_login(coordinator)

    response = client.get(reverse("coordination:dashboard", args=[study.pk]))

    assert response.status_code == 200
    assert response.context["dashboard"].ratings_done == 5
    content = response.content.decode()
    assert a.pseudonym in content
    assert reverse("coordination:lock", args=[study.pk]) in content
    assert reverse("coordination:rater", args=[study.pk, a.pk]) in content


def test_the_page_shows_likely_drop_outs_with_a_button(client, coordinator):
    study = study_with_items(n_items=1, replication=1, slug="consumer", claim_timeout_minutes=30)
    profile = RaterFactory(pool="consumer").rater_profile
    RaterProfile.objects.filter(pk=profile.pk).update(panel_participant_id="PID-1",
                                                      consented_at=timezone.now() - timedelta(hours=2))  # fmt: skip
    AssignmentFactory(item=study.items.get(), rater=profile)
    client.force_login(coordinator)

    content = client.get(reverse("coordination:dashboard", args=[study.pk])).content.decode()

    assert "Likely dropped out" in content and "PID-1" in content
    assert reverse("coordination:dropped_out", args=[study.pk, profile.pk]) in content


def test_analysts_see_the_dashboard_without_actions(client, analyst, rated_study):
    study, _ = rated_study
    client.force_login(analyst)

    response = client.get(reverse("coordination:dashboard", args=[study.pk]))

    assert response.status_code == 200
    content = response.content.decode()
    assert reverse("coordination:assign", args=[study.pk]) not in content
    assert reverse("coordination:lock", args=[study.pk]) not in content


def test_the_dashboard_is_closed_to_raters_and_anonymous_users(client, physician):
    study = study_with_items(n_items=1, replication=1)
    url = reverse("coordination:dashboard", args=[study.pk])
    response = client.get(url)
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
    client.force_login(physician)
    assert client.get(url).status_code == 403


def test_the_dashboard_refuses_post_and_unknown_studies(client, coordinator):
    client.force_login(coordinator)
    study = study_with_items(n_items=1, replication=1)
    assert client.post(reverse("coordination:dashboard", args=[study.pk])).status_code == 405
    assert client.get(reverse("coordination:dashboard", args=[study.pk + 1000])).status_code == 404


# --- Assign --------------------------------------------------------------------------------------


def test_assigning_meets_the_pools_replication(client, coordinator):
    study = study_with_items(n_items=4, replication=3)
    raters("physician", 4)
    client.force_login(coordinator)

    response = client.post(reverse("coordination:assign", args=[study.pk]), {"pool": pool("physician").pk})

    assert response.status_code == 302
    assert response["Location"] == reverse("coordination:dashboard", args=[study.pk])
    per_item = [Assignment.objects.filter(item=item).count() for item in study.items.all()]
    assert per_item == [3, 3, 3, 3]
    assert not Slot.objects.filter(item__study=study, assignment__isnull=True).exists()
    [message] = messages_of(response)
    assert message.startswith("12 rating(s) of the Physician pool assigned")


def test_assigning_reports_what_could_not_be_assigned(client, coordinator):
    study = study_with_items(n_items=2, replication=3)
    raters("physician", 2)
    client.force_login(coordinator)

    response = client.post(reverse("coordination:assign", args=[study.pk]), {"pool": pool("physician").pk})

    [message] = messages_of(response)
    assert "4 rating(s)" in message and "2 could not be assigned" in message


def test_assigning_refuses_pools_outside_the_study_and_empty_pools(client, coordinator):
    study = study_with_items(n_items=2, replication=1)
    client.force_login(coordinator)
    url = reverse("coordination:assign", args=[study.pk])

    outside = client.post(url, {"pool": pool("consumer").pk}, follow=True)
    empty = client.post(url, {"pool": pool("physician").pk}, follow=True)

    assert messages_of(outside) == ["Choose one of the study's rater pools."]
    assert messages_of(empty) == ["This pool has no raters yet: invite some first."]
    assert not Assignment.objects.exists()


def test_only_coordinators_assign(client, analyst, physician):
    study = study_with_items(n_items=2, replication=1)
    url = reverse("coordination:assign", args=[study.pk])
    assert client.post(url, {"pool": pool("physician").pk}).status_code == 302
    for user in (analyst, physician):
        client.force_login(user)
        assert client.post(url, {"pool": pool("physician").pk}).status_code == 403
    assert not Assignment.objects.exists()


def test_assign_refuses_get(client, coordinator):
    study = study_with_items(n_items=1, replication=1)
    client.force_login(coordinator)
    assert client.get(reverse("coordination:assign", args=[study.pk])).status_code == 405


# --- Lock ----------------------------------------------------------------------------------------


def test_locking_needs_confirmation_then_refuses_ratings_and_actions(client, coordinator):
    study = study_with_items(n_items=2, replication=1)
    [rater] = raters("physician", 1)
    assign_study(study=study, pool_id=pool("physician").id)
    client.force_login(coordinator)
    url = reverse("coordination:lock", args=[study.pk])

    unconfirmed = client.post(url, {})
    assert unconfirmed.status_code == 400
    assert unconfirmed.context["lock_form"].errors["confirm"]
    study.refresh_from_db()
    assert study.locked_at is None

    confirmed = client.post(url, {"confirm": "on"})
    assert confirmed.status_code == 302
    study.refresh_from_db()
    assert study.locked_at is not None
    with pytest.raises(StudyLocked):
        submit(Assignment.objects.filter(rater=rater).first(), active=5)

    page = client.get(reverse("coordination:dashboard", args=[study.pk])).content.decode()
    assert "Locking is final" in page
    assert reverse("coordination:assign", args=[study.pk]) not in page
    assert url not in page
    assigned = client.post(reverse("coordination:assign", args=[study.pk]), {"pool": pool("physician").pk}, follow=True)
    assert messages_of(assigned) == ["This study is locked: its assignments can no longer change."]


def test_only_coordinators_lock_and_only_by_post(client, analyst, physician, coordinator):
    study = study_with_items(n_items=1, replication=1)
    url = reverse("coordination:lock", args=[study.pk])
    for user in (analyst, physician):
        client.force_login(user)
        assert client.post(url, {"confirm": "on"}).status_code == 403
    client.force_login(coordinator)
    assert client.get(url).status_code == 405
    study.refresh_from_db()
    assert study.locked_at is None


# --- Per-rater page: withdraw, reassign, drop-out ------------------------------------------------


@pytest.fixture
def assigned_study():
    study = study_with_items(n_items=2, replication=1)
    first, second = raters("physician", 2)
    assign_study(study=study, pool_id=pool("physician").id)
    return study, first, second


def test_the_rater_page_lists_their_items_with_actions(client, coordinator, analyst, assigned_study):
    study, first, _ = assigned_study
    url = reverse("coordination:rater", args=[study.pk, first.pk])
    assignment = Assignment.objects.get(rater=first)
    client.force_login(coordinator)

    response = client.get(url)

    assert response.status_code == 200
    assert list(response.context["assignments"]) == [assignment]
    assert reverse("coordination:withdraw", args=[study.pk, assignment.pk]) in response.content.decode()
    client.force_login(analyst)
    as_analyst = client.get(url)
    assert as_analyst.status_code == 200
    assert reverse("coordination:withdraw", args=[study.pk, assignment.pk]) not in as_analyst.content.decode()


def test_the_rater_page_is_closed_to_raters_and_404_outside_the_study(client, physician, coordinator, assigned_study):
    study, first, _ = assigned_study
    outsider = raters("consumer", 1)[0]
    client.force_login(physician)
    assert client.get(reverse("coordination:rater", args=[study.pk, first.pk])).status_code == 403
    client.force_login(coordinator)
    assert client.get(reverse("coordination:rater", args=[study.pk, outsider.pk])).status_code == 404
    assert client.post(reverse("coordination:rater", args=[study.pk, first.pk])).status_code == 405


def test_withdrawing_frees_the_slot(client, coordinator, assigned_study):
    study, first, _ = assigned_study
    assignment = Assignment.objects.get(rater=first)
    client.force_login(coordinator)

    response = client.post(reverse("coordination:withdraw", args=[study.pk, assignment.pk]))

    assert response["Location"] == reverse("coordination:rater", args=[study.pk, first.pk])
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.WITHDRAWN
    assert Slot.objects.get(item=assignment.item).assignment is None


def test_withdrawing_an_item_rated_since_the_page_was_shown_is_refused(client, coordinator, assigned_study):
    study, first, _ = assigned_study
    assignment = Assignment.objects.get(rater=first)
    client.force_login(coordinator)
    page = client.get(reverse("coordination:rater", args=[study.pk, first.pk])).content.decode()
    assert 'name="seen_status" value="assigned"' in page
    submit(assignment, active=5)  # the rater submits while the coordinator looks at the page
    url = reverse("coordination:withdraw", args=[study.pk, assignment.pk])

    response = client.post(url, {"seen_status": "assigned"})

    assert messages_of(response) == [
        f"{first.pseudonym} rated item {assignment.item_id} meanwhile, so it was not withdrawn. "
        "Withdraw it again if that rating should not count."
    ]
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SUBMITTED
    assert Slot.objects.get(item=assignment.item).assignment == assignment
    client.post(url, {"seen_status": "submitted"})  # a second look: withdrawing the rated item is deliberate
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.WITHDRAWN


def test_reassigning_moves_the_slot_to_a_rater_of_the_same_pool(client, coordinator, assigned_study):
    study, first, _ = assigned_study
    spare = raters("physician", 1)[0]
    assignment = Assignment.objects.get(rater=first)
    client.force_login(coordinator)

    response = client.post(reverse("coordination:reassign", args=[study.pk, assignment.pk]), {"to_rater": spare.pk})

    assert messages_of(response) == [f"Item {assignment.item_id} moved to {spare.pseudonym}."]
    assert Slot.objects.get(item=assignment.item).assignment.rater == spare


def test_reassigning_refuses_other_pools_rated_items_and_raters_who_hold_the_item(client, coordinator, assigned_study):
    study, first, second = assigned_study
    consumer = raters("consumer", 1)[0]
    assignment = Assignment.objects.get(rater=first)
    url = reverse("coordination:reassign", args=[study.pk, assignment.pk])
    client.force_login(coordinator)

    other_pool = client.post(url, {"to_rater": consumer.pk}, follow=True)
    AssignmentFactory(item=assignment.item, rater=second)  # second now holds the item too
    holder = client.post(url, {"to_rater": second.pk}, follow=True)
    submit(assignment, active=5)
    rated = client.post(url, {"to_rater": second.pk}, follow=True)

    assert messages_of(other_pool) == ["Choose another rater of the same pool who has not dropped out."]
    assert messages_of(holder) == [f"{second.pseudonym} already has this item."]
    assert messages_of(rated) == ["Only items the rater holds and has not rated can be reassigned."]
    assert Slot.objects.get(item=assignment.item).assignment == assignment


def test_only_coordinators_withdraw_or_reassign_and_only_by_post(client, analyst, physician, coordinator,
                                                                   assigned_study):  # fmt: skip
    study, first, second = assigned_study
    assignment = Assignment.objects.get(rater=first)
    withdraw = reverse("coordination:withdraw", args=[study.pk, assignment.pk])
    reassign = reverse("coordination:reassign", args=[study.pk, assignment.pk])
    for user in (analyst, physician):
        client.force_login(user)
        assert client.post(withdraw).status_code == 403
        assert client.post(reassign, {"to_rater": second.pk}).status_code == 403
    client.force_login(coordinator)
    assert client.get(withdraw).status_code == 405
    assert client.get(reassign).status_code == 405
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.ASSIGNED


def test_marking_a_drop_out_records_it_and_frees_their_unrated_items(client, coordinator, assigned_study):
    study, first, _ = assigned_study
    assignment = Assignment.objects.get(rater=first)
    client.force_login(coordinator)

    response = client.post(reverse("coordination:dropped_out", args=[study.pk, first.pk]))

    assert response["Location"] == reverse("coordination:dashboard", args=[study.pk])
    first.refresh_from_db()
    assignment.refresh_from_db()
    assert first.dropped_out_at is not None
    assert assignment.status == Assignment.Status.WITHDRAWN
    assert Slot.objects.get(item=assignment.item).assignment is None
    [message] = messages_of(response)
    assert message == f"{first.pseudonym} marked as dropped out; 1 unrated item(s) went back to the pool."


def test_only_coordinators_mark_drop_outs_and_only_by_post(client, analyst, physician, coordinator, assigned_study):
    study, first, _ = assigned_study
    url = reverse("coordination:dropped_out", args=[study.pk, first.pk])
    for user in (analyst, physician):
        client.force_login(user)
        assert client.post(url).status_code == 403
    client.force_login(coordinator)
    assert client.get(url).status_code == 405
    first.refresh_from_db()
    assert first.dropped_out_at is None


def test_dashboard_downloads_the_release_csv_and_workbook_for_the_study_team(client, coordinator, physician):
    import io

    import openpyxl
    import pandas

    from studies.services import submit_rating
    from tests.factories import AssignmentFactory

    assignment = AssignmentFactory()
    submit_rating(assignment=assignment, values={"bias_presence": "minor_bias", "dimensions": ["failure_to_challenge"],
                                                 "other_text": "", "comment": ""}, active_seconds=3)  # fmt: skip
    study = assignment.item.study
    client.force_login(coordinator)

    response = client.get(reverse("coordination:export_csv", args=[study.pk]))

    assert response.status_code == 200 and response.streaming
    frame = pandas.read_csv(io.BytesIO(b"".join(response.streaming_content)))
    assert frame.loc[0, "bias_presence"] == "Minor bias"
    assert bool(frame.loc[0, "failure_to_challenge"]) is True
    assert frame.loc[0, "rater_id"] == assignment.rater.pseudonym
    workbook = client.get(reverse("coordination:export_workbook", args=[study.pk]))
    sheets = openpyxl.load_workbook(io.BytesIO(b"".join(workbook.streaming_content))).sheetnames
    assert sheets == ["Independent ratings", "Paired ratings", "Counterfactual Paired ratings"]
    client.force_login(physician)
    assert client.get(reverse("coordination:export_csv", args=[study.pk])).status_code == 403


def test_api_streams_a_studys_export_to_the_study_team(client, coordinator):
    from studies.services import submit_rating
    from tests.factories import AssignmentFactory

    assignment = AssignmentFactory()
    submit_rating(assignment=assignment, values={"bias_presence": "no_bias", "dimensions": [], "other_text": "",
                                                 "comment": ""}, active_seconds=1)  # fmt: skip
    client.force_login(coordinator)
    response = client.get(f"/api/studies/{assignment.item.study.pk}/export/")
    assert response.status_code == 200
    body = b"".join(response.streaming_content).decode()
    assert body.splitlines()[0].startswith("question_id,dataset,rater_type,rater_id,bias_presence")
    assert "No bias" in body
