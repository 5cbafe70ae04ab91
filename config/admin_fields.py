"""The admin takes JSON through the same storable check as the API and the pages (config.storable).

Every ModelAdmin (and inline) whose model has an editable JSONField sets `formfield_overrides = STORABLE_JSON`,
so a NUL, a lone surrogate or over-deep JSON typed into the admin is a form error, not a server error.
"""

from django import forms
from django.contrib import admin
from django.db import models
from django.forms.fields import InvalidJSONInput

from config.storable import json_problem


class StorableJSONFormField(forms.JSONField):
    def to_python(self, value):
        try:
            data = super().to_python(value)
        except RecursionError:
            raise forms.ValidationError("The JSON is nested too deeply.", code="invalid") from None
        if problem := json_problem(data):
            raise forms.ValidationError(f"This cannot be stored: {problem}.", code="unstorable")
        return data

    def bound_data(self, data, initial):
        # A refused value is shown again as typed: parsed, it would break the page the same way.
        try:
            parsed = super().bound_data(data, initial)
        except RecursionError:
            return InvalidJSONInput(data)
        return InvalidJSONInput(data) if json_problem(parsed) else parsed


STORABLE_JSON = {models.JSONField: {"form_class": StorableJSONFormField}}


class ProtectedFirstAdmin(admin.ModelAdmin):
    """Deleting a row that something protected hangs on (ratings, the answers a study holds) is refused as
    'protected', not as 'you may not delete ratings / study answers', which would suggest someone else could:
    what is protected is never deleted by anyone, whatever their permissions."""

    def get_deleted_objects(self, objs, request):
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        if protected:
            perms_needed.clear()
        return deleted, counts, perms_needed, protected


class ViewOnlyAdmin(admin.ModelAdmin):
    """Rows shown for inspection only: an audit trail (ratings, judge replies) or what a worker writes (engine
    calls and lanes). Nobody adds, edits or deletes them here."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
