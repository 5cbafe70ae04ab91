from django.urls import path

from . import views

app_name = "raters"

urlpatterns = [
    path("join/<str:token>/", views.join, name="join"),
    path("onboarding/", views.onboarding, name="onboarding"),
    path("panel/<int:study_id>/", views.panel_start, name="panel_start"),
    path("panel/<int:study_id>/done/", views.panel_done, name="panel_done"),
]
