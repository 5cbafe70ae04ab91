"""The panel flow's pages, served under the `raters:` namespace as before (config/urls.py): their names and
URLs are in links already sent to participants and in the panel's own settings."""

from django.urls import path

from . import panel_views

urlpatterns = [
    path("onboarding/", panel_views.onboarding, name="onboarding"),
    path("panel/<int:study_id>/", panel_views.panel_start, name="panel_start"),
    path("panel/<int:study_id>/done/", panel_views.panel_done, name="panel_done"),
]
