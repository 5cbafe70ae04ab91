from django.urls import path

from . import views

app_name = "datasets"

urlpatterns = [
    path("", views.dataset_list, name="list"),
    path("<int:pk>/", views.dataset_detail, name="detail"),
    path("import/questions/", views.import_questions, name="import_questions"),
    path("import/answers/", views.import_answers, name="import_answers"),
    path("import/<int:pk>/", views.import_status, name="import_status"),
    path("<int:dataset_pk>/questions/<int:pk>/", views.question_detail, name="question"),
    path("generate/", views.generate, name="generate"),
    path("generation/<int:pk>/", views.generation_job, name="generation_job"),
    path("generation/<int:pk>/progress/", views.generation_progress, name="generation_progress"),
    path("generation/<int:pk>/retry-failed/", views.generation_retry, name="generation_retry"),
    path("generation/<int:pk>/cancel/", views.generation_cancel, name="generation_cancel"),
    path("generation/<int:pk>/resume/", views.generation_resume, name="generation_resume"),
]
