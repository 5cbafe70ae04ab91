from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from config.health import healthz
from config.help import favicon, help_index, help_page
from config.signin import AdminSignInForm, LogoutView, SignInForm
from raters import urls as rater_urls
from raters import views as rater_views
from studies import panel_urls

admin.site.site_header = "EquityRate administration"
admin.site.site_title = "EquityRate"
admin.site.login_form = AdminSignInForm

urlpatterns = [
    path("", rater_views.home, name="home"),
    path("accounts/login/", auth_views.LoginView.as_view(authentication_form=SignInForm), name="login"),
    path("accounts/logout/", LogoutView.as_view(), name="logout"),
    path("datasets/", include("datasets.urls")),
    path("studies/", include("studies.coordination_urls")),
    path("rate/", include("studies.urls")),
    path("analysis/", include("analysis.urls")),
    # The panel flow lives in studies (raters never imports studies) and keeps its raters: names and URLs.
    path("", include((rater_urls.urlpatterns + panel_urls.urlpatterns, rater_urls.app_name))),
    path("api/", include("config.api")),
    path("admin/logout/", LogoutView.as_view(next_page="admin:login")),  # revokes the API token too
    path("admin/", admin.site.urls),
    path("healthz", healthz, name="healthz"),
    path("help/", help_index, name="help_index"),
    path("help/<slug:page>/", help_page, name="help"),
    path("favicon.ico", favicon, name="favicon"),
]
