from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from config.health import healthz
from raters import views as rater_views

admin.site.site_header = "EquityRate administration"
admin.site.site_title = "EquityRate"

urlpatterns = [
    path("", rater_views.home, name="home"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("datasets/", include("datasets.urls")),
    path("studies/", include("studies.coordination_urls")),
    path("rate/", include("studies.urls")),
    path("analysis/", include("analysis.urls")),
    path("", include("raters.urls")),
    path("api/", include("config.api")),
    path("admin/", admin.site.urls),
    path("healthz", healthz, name="healthz"),
]
