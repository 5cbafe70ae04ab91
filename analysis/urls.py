from django.urls import path, re_path

from . import contextsrh_views, judge_views, medic_views, views

app_name = "analysis"

urlpatterns = [
    path("", views.index, name="index"),
    path("runs/<int:pk>/", views.run_detail, name="run"),
    path("studies/<int:pk>/results.csv", views.results_csv, name="results_csv"),
    path("runs/<int:pk>/progress/", views.run_progress, name="progress"),
    path("studies/<int:pk>/judges/", judge_views.judge_study, name="judges"),
    re_path(
        r"^studies/(?P<pk>[0-9]+)/judges/(?P<table>agreement|judge_assisted|judge_place|judge_consistency)\.csv$",
        judge_views.judge_table_csv,
        name="judge_table_csv",
    ),
    re_path(r"^studies/(?P<pk>[0-9]+)/judges/plot\.(?P<fmt>svg|png)$", judge_views.judge_plot, name="judge_plot"),
    path("studies/<int:pk>/medic/", medic_views.medic_study, name="medic"),
    re_path(
        r"^studies/(?P<pk>[0-9]+)/medic/(?P<table>generalisation|judge_means|judge_agreement)\.csv$",
        medic_views.medic_table_csv,
        name="medic_table_csv",
    ),
    re_path(r"^studies/(?P<pk>[0-9]+)/medic/plot\.(?P<fmt>svg|png)$", medic_views.medic_plot, name="medic_plot"),
    path("studies/<int:pk>/contextsrh/", contextsrh_views.contextsrh_study, name="contextsrh"),
    re_path(
        r"^studies/(?P<pk>[0-9]+)/contextsrh/(?P<table>similarity|group_tests|agreement)\.csv$",
        contextsrh_views.contextsrh_table_csv,
        name="contextsrh_table_csv",
    ),
    re_path(
        r"^studies/(?P<pk>[0-9]+)/contextsrh/plot\.(?P<fmt>svg|png)$",
        contextsrh_views.contextsrh_plot,
        name="contextsrh_plot",
    ),
    path("runs/<int:pk>/<str:table>.csv", views.table_csv, name="table_csv"),
    # An analysis plan's plot, named as its table (accuracy.csv -> plots/accuracy.svg): no hyphen, unlike rates'.
    re_path(r"^runs/(?P<pk>[0-9]+)/plots/(?P<name>[a-z0-9_]+)\.(?P<fmt>svg|png)$", views.plan_plot, name="plan_plot"),
    re_path(
        r"^runs/(?P<pk>[0-9]+)/plots/(?P<rubric>[a-z_]+)-(?P<outcome>[a-z0-9_]+)-(?P<aggregation>[a-z_]+)"
        r"\.(?P<fmt>svg|png)$",
        views.plot,
        name="plot",
    ),
]
