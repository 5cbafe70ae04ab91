from django.urls import path

from . import coordination_views as views
from . import judge_setup_views

app_name = "coordination"

urlpatterns = [
    path("", views.study_list, name="list"),
    path("new/", views.study_create, name="create"),
    path("load/", views.study_file_upload, name="load_file"),
    path("<int:pk>/", views.study_dashboard, name="dashboard"),
    path("<int:pk>/plots/<slug:name>.svg", views.dashboard_plot, name="dashboard_plot"),
    path("<int:pk>/assign/", views.assign, name="assign"),
    path("<int:pk>/lock/", views.lock, name="lock"),
    path("<int:pk>/export.csv", views.export_csv, name="export_csv"),
    path("<int:pk>/export.xlsx", views.export_workbook, name="export_workbook"),
    path("<int:pk>/study.yaml", views.export_study_file, name="study_file"),
    path("<int:pk>/judges/", judge_setup_views.judges, name="judges"),
    path("<int:pk>/judges/new/", judge_setup_views.judge_create, name="judge_create"),
    path("<int:pk>/judges/<int:judge_id>/", judge_setup_views.judge_edit, name="judge"),
    path("<int:pk>/judges/<int:judge_id>/run/", judge_setup_views.judge_run, name="judge_run"),
    path("<int:pk>/raters/<int:rater_id>/", views.rater_detail, name="rater"),
    path("<int:pk>/raters/<int:rater_id>/resume-link/", views.resume_link, name="resume_link"),
    path("<int:pk>/raters/<int:rater_id>/dropped-out/", views.mark_dropped_out, name="dropped_out"),
    path("<int:pk>/raters/<int:rater_id>/withdraw-open/", views.withdraw_open, name="withdraw_open"),
    path("<int:pk>/raters/<int:rater_id>/reassign-open/", views.reassign_open, name="reassign_open"),
    path("<int:pk>/assignments/<int:assignment_id>/withdraw/", views.withdraw, name="withdraw"),
    path("<int:pk>/assignments/<int:assignment_id>/reassign/", views.reassign, name="reassign"),
]
