from django.urls import path

from . import views

app_name = "studies"

urlpatterns = [
    path("", views.queue, name="queue"),
    path("<int:pk>/", views.rate, name="rate"),
    path("<int:pk>/draft/", views.save_draft, name="draft"),
]
