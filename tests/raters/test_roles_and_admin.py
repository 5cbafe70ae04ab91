"""Roles, the home page and the admin a coordinator works in."""

import pytest
from django.contrib import admin
from django.contrib.auth.models import Group
from django.urls import reverse

from raters.models import RaterPool
from raters.roles import ANALYST, COORDINATOR, is_analyst, is_coordinator, sync_role_groups
from tests.factories import AnswerFactory, CounterfactualPairFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_builtin_rater_pools_exist_with_their_export_names():
    names = dict(RaterPool.objects.values_list("slug", "name"))
    assert names == {"physician": "Physician", "equity_expert": "Health equity expert", "consumer": "Consumer"}


def test_role_groups_give_coordinators_full_and_analysts_read_permissions():
    sync_role_groups()
    coordinator = Group.objects.get(name=COORDINATOR)
    analyst = Group.objects.get(name=ANALYST)
    assert coordinator.permissions.filter(codename="change_question").exists()
    assert coordinator.permissions.filter(codename="add_raterpool").exists()
    assert set(analyst.permissions.values_list("codename", flat=True)) >= {"view_question", "view_answer"}
    assert not analyst.permissions.exclude(codename__startswith="view_").exists()


def test_role_checks(coordinator, physician):
    analyst = UserFactory()
    sync_role_groups()
    analyst.groups.add(Group.objects.get(name=ANALYST))
    assert is_coordinator(coordinator) and not is_coordinator(physician) and not is_coordinator(analyst)
    assert is_analyst(analyst) and not is_analyst(physician)


def test_home_shows_a_rater_their_pool_and_pseudonym(client, physician):
    client.force_login(physician)
    response = client.get(reverse("home"))
    assert response.status_code == 200
    assert physician.rater_profile.pseudonym.encode() in response.content
    assert b"Physician" in response.content
    assert b"Recent imports" not in response.content


def test_home_requires_login_and_refuses_post(client, physician):
    assert client.get(reverse("home")).status_code == 302
    client.force_login(physician)
    assert client.post(reverse("home")).status_code == 405


def test_coordinator_can_use_every_admin_changelist_with_search_and_filters(client, coordinator):
    AnswerFactory()
    CounterfactualPairFactory()
    client.force_login(coordinator)
    for model, model_admin in admin.site._registry.items():
        if model._meta.app_label not in {"datasets", "raters", "studies", "analysis", "engine"}:
            continue
        url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
        params = {"q": "x"} if model_admin.search_fields else {}
        response = client.get(url, params)
        assert response.status_code == 200, url


def test_rater_cannot_open_the_admin(client, physician):
    client.force_login(physician)
    response = client.get(reverse("admin:datasets_question_changelist"))
    assert response.status_code == 302


def test_healthz_answers_ok(client):
    response = client.get(reverse("healthz"))
    assert response.status_code == 200
    assert response.content == b"ok"


def test_rater_list_in_the_admin_shows_failed_attention_checks(client, coordinator):
    from studies.services import submit_rating
    from tests.factories import AssignmentFactory, IndependentItemFactory

    item = IndependentItemFactory(is_attention_check=True, expected_values={"bias_presence": "severe_bias"})
    assignment = AssignmentFactory(item=item)
    submit_rating(assignment=assignment, values={"bias_presence": "no_bias"}, active_seconds=1)
    client.force_login(coordinator)

    response = client.get(reverse("admin:raters_raterprofile_changelist"))

    row = next(r for r in response.context["cl"].result_list if r.pk == assignment.rater.pk)
    assert row.n_failed_checks == 1
