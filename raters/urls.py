from django.urls import path

from . import views

app_name = "raters"

# config/urls.py adds the panel flow's pages (studies/panel_urls.py) to this namespace: raters:onboarding,
# raters:panel_start, raters:panel_done.
urlpatterns = [
    path("join/<slug:token>/", views.join, name="join"),  # token_urlsafe: the slug alphabet
]
