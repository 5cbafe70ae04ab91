from django.urls import path

from . import views

app_name = "raters"

urlpatterns = [
    path("join/<slug:token>/", views.join, name="join"),  # token_urlsafe: the slug alphabet
    path("onboarding/", views.onboarding, name="onboarding"),
    path("panel/<int:study_id>/", views.panel_start, name="panel_start"),
    path("panel/<int:study_id>/done/", views.panel_done, name="panel_done"),
]
