from django.urls import path

from . import views

app_name = "datasets"

urlpatterns = [
    path("", views.dataset_list, name="list"),
    path("<int:pk>/", views.dataset_detail, name="detail"),
    path("import/questions/", views.import_questions, name="import_questions"),
    path("import/answers/", views.import_answers, name="import_answers"),
    path("import/<int:pk>/", views.import_status, name="import_status"),
]
