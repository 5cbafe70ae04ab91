from django.urls import path

from . import design_views, source_views, step_views, views

app_name = "datasets"

urlpatterns = [
    path("", views.dataset_list, name="list"),
    path("<int:pk>/", views.dataset_detail, name="detail"),
    path("import/questions/", views.import_questions, name="import_questions"),
    path("import/answers/", views.import_answers, name="import_answers"),
    path("import/<int:pk>/", views.import_status, name="import_status"),
    path("<int:dataset_pk>/questions/<int:pk>/", views.question_detail, name="question"),
    path("sources/", source_views.source_list, name="sources"),
    path("sources/new/", source_views.source_create, name="source_create"),
    path("sources/<int:pk>/", source_views.source_edit, name="source"),
    path("sources/<int:pk>/test/", source_views.source_test, name="source_test"),
    path("generate/", views.generate, name="generate"),
    path("generation/<int:pk>/", views.generation_job, name="generation_job"),
    path("generation/<int:pk>/progress/", views.generation_progress, name="generation_progress"),
    path("generation/<int:pk>/retry-failed/", views.generation_retry, name="generation_retry"),
    path("generation/<int:pk>/cancel/", views.generation_cancel, name="generation_cancel"),
    path("generation/<int:pk>/resume/", views.generation_resume, name="generation_resume"),
    path("recipes/", design_views.recipe_list, name="recipes"),
    path("recipes/new/", design_views.recipe_create, name="recipe_create"),
    path("recipes/<int:pk>/", design_views.recipe_detail, name="recipe"),
    path("recipes/<int:pk>/edit/", design_views.recipe_edit, name="recipe_edit"),
    path("recipes/<int:pk>/generate/", design_views.recipe_generate, name="recipe_generate"),
    path("variants/", design_views.variant_run_list, name="variant_runs"),
    path("variants/new/", design_views.variant_run_create, name="variant_run_create"),
    path("variants/<int:pk>/", design_views.variant_run_detail, name="variant_run"),
    path("steps/", step_views.step_list, name="steps"),
    path("steps/<int:pk>/", step_views.step_detail, name="step"),
    path("steps/<int:pk>/run/", step_views.step_run, name="step_run"),
]
