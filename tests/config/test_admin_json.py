"""JSON typed into the admin passes the same storable check as the API: a form error, never a server error."""

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.db import models
from django.test import RequestFactory
from django.urls import reverse

from config.admin_fields import StorableJSONFormField
from tests.factories import AnswerFactory, QuestionFactory
from tests.studies.test_audit_trail import admin_change_data

pytestmark = pytest.mark.django_db


def json_fields(model) -> set[str]:
    return {field.name for field in model._meta.get_fields() if isinstance(field, models.JSONField)}


def test_every_json_field_the_admin_lets_anyone_edit_is_checked():
    request = RequestFactory().get("/admin/")
    request.user = get_user_model().objects.create_superuser("root", "root@example.org", "x")
    checked = 0
    for model, model_admin in admin.site._registry.items():
        admins = [(model, model_admin)] + [
            (inline.model, inline) for inline in model_admin.get_inline_instances(request)
        ]
        for form_model, form_admin in admins:
            editable = json_fields(form_model)
            if not editable or not form_admin.has_change_permission(request):
                continue
            if hasattr(form_admin, "get_formset"):
                form_class = form_admin.get_formset(request).form
            else:
                form_class = form_admin.get_form(request)
            for name in editable & set(form_class.base_fields):
                assert isinstance(form_class.base_fields[name], StorableJSONFormField), (form_model, name)
                checked += 1
    assert checked >= 8  # question and pair metadata, source and answer parameters, ... (see config/admin_fields)


@pytest.mark.parametrize(
    "typed, message",
    [
        ('{"note": "a\\u0000b"}', "NUL"),
        ('{"note": "\\ud800"}', "surrogate"),
        ("[" * 40 + "]" * 40, "nested"),
        ("[" * 100_000 + "]" * 100_000, "nested"),
    ],
)
def test_unstorable_json_in_the_admin_is_a_form_error_and_changes_nothing(admin_client, typed, message):
    answer = AnswerFactory(parameters={"temperature": 0})
    url = reverse("admin:datasets_answer_change", args=[answer.pk])
    data = admin_change_data(admin_client, url)
    data["parameters"] = typed

    response = admin_client.post(url, data)

    assert response.status_code == 200
    assert message in str(response.context["adminform"].form.errors["parameters"])
    answer.refresh_from_db()
    assert answer.parameters == {"temperature": 0}


def test_storable_json_is_still_saved_in_the_admin(admin_client):
    question = QuestionFactory(metadata={})
    url = reverse("admin:datasets_question_change", args=[question.pk])
    data = admin_change_data(admin_client, url)
    data["metadata"] = '{"note": "fine"}'

    assert admin_client.post(url, data).status_code == 302
    question.refresh_from_db()
    assert question.metadata == {"note": "fine"}
