"""Signing in and out: failed sign-ins throttled per account and per address, the API's token endpoint, and
a logout that revokes the API token (config/tokens.py).

Every password check goes through `ThrottledModelBackend` (the login page, the admin's login, the API's
token endpoint), so none of them can be used to guess passwords faster than the budgets allow. A refused
attempt checks no password, whether or not the password is right. The pages and the token endpoint then
say why (a message on the page, a 429 with Retry-After in the API) instead of "wrong password".
"""

import math
from dataclasses import dataclass

from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import get_user_model
from django.contrib.auth import views as auth_views
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import PermissionDenied, ValidationError
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import exceptions, serializers
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.response import Response
from rest_framework.throttling import ScopedRateThrottle

from config.throttling import Budget, client_address
from config.tokens import issue_api_token, revoke_api_token


@dataclass(frozen=True)
class SignInRefused:
    message: str
    retry_after: float


def account_budget() -> Budget:
    return Budget("sign-in-account", settings.LOGIN_FAILURE_LIMIT, settings.LOGIN_FAILURE_WINDOW_SECONDS)


def address_budget() -> Budget:
    return Budget("sign-in-address", settings.LOGIN_ADDRESS_FAILURE_LIMIT, settings.LOGIN_FAILURE_WINDOW_SECONDS)


def _refusal(whose: str, wait: float) -> SignInRefused:
    minutes = math.ceil(wait / 60)
    return SignInRefused(
        f"Too many failed sign-ins {whose}. Try again in {minutes} minute{'s' if minutes != 1 else ''}.", wait
    )


def _http_request(request):
    return getattr(request, "_request", request)  # DRF wraps Django's request


def sign_in_refusal(request) -> SignInRefused | None:
    """Why the last sign-in attempt of this request was refused without checking the password, if it was."""
    return getattr(_http_request(request), "sign_in_refused", None)


class ThrottledModelBackend(ModelBackend):
    """Django's username/password check, within a budget of attempts per account and per client address.

    Attempts are counted before the password is checked. A success clears the account's count and gives
    the address its attempt back, so only failures use up a budget (signing in to one's own account does
    not erase an address's failures). Calls without a request (the shell, tests' client.login) are not
    throttled.
    """

    def authenticate(self, request, username=None, password=None, **kwargs):
        if username is None:
            username = kwargs.get(get_user_model().USERNAME_FIELD)
        if request is None or username is None:
            return super().authenticate(request, username=username, password=password, **kwargs)
        address = client_address(_http_request(request))
        address_wait = address_budget().spend(address)
        account_wait = account_budget().spend(username)
        if address_wait or account_wait:
            refusal = (
                _refusal("for this account", account_wait)
                if account_wait
                else _refusal("from your network address", address_wait)
            )
            _http_request(request).sign_in_refused = refusal
            raise PermissionDenied(refusal.message)  # stops authenticate(): no other backend is asked
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is not None:
            account_budget().reset(username)
            address_budget().refund(address)
        return user


class RefusalMessageMixin:
    """Says "too many failed sign-ins, try again in N minutes" instead of "wrong password" when so."""

    def get_invalid_login_error(self):
        refusal = sign_in_refusal(self.request) if self.request is not None else None
        if refusal is not None:
            return ValidationError(refusal.message, code="throttled")
        return super().get_invalid_login_error()


class SignInForm(RefusalMessageMixin, AuthenticationForm):
    pass


class AdminSignInForm(RefusalMessageMixin, AdminAuthenticationForm):
    pass


class LogoutView(auth_views.LogoutView):
    """Django's logout, which also revokes the user's API token: signing out ends every way in."""

    def post(self, request, *args, **kwargs):
        if request.user.is_authenticated:
            revoke_api_token(user=request.user)
        return super().post(request, *args, **kwargs)


class TokenView(ObtainAuthToken):
    """POST username and password -> {"token": ...}; throttled per address (API_TOKEN_RATE) and by the
    sign-in budgets (429 with Retry-After)."""

    authentication_classes = []  # a password, not a (perhaps expired) token, is what this endpoint checks
    throttle_classes = [ScopedRateThrottle]
    throttle_scope = "auth-token"

    @extend_schema(
        responses={
            200: inline_serializer("AuthToken", {"token": serializers.CharField()}),
            400: OpenApiResponse(description="Wrong username or password, or one missing."),
            429: OpenApiResponse(description="Too many attempts or failed sign-ins: see Retry-After."),
        },
    )
    def post(self, request, *args, **kwargs):
        serializer = self.get_serializer(data=request.data)
        if not serializer.is_valid():
            refusal = sign_in_refusal(request)
            if refusal is not None:
                raise exceptions.Throttled(wait=refusal.retry_after, detail=refusal.message)
            raise exceptions.ValidationError(serializer.errors)
        token = issue_api_token(user=serializer.validated_data["user"])
        return Response({"token": token.key})
