"""API tokens that expire (API_TOKEN_TTL_HOURS) and are revoked at logout.

Apart from config/signin.py because DRF imports the authentication class while its views load.
"""

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication
from rest_framework.authtoken.models import Token


def token_expired(token: Token) -> bool:
    return token.created <= timezone.now() - timedelta(hours=settings.API_TOKEN_TTL_HOURS)


def issue_api_token(*, user) -> Token:
    """The user's token; a new one once it has expired (the user has one token at a time)."""
    with transaction.atomic():
        cutoff = timezone.now() - timedelta(hours=settings.API_TOKEN_TTL_HOURS)
        Token.objects.filter(user=user, created__lte=cutoff).delete()
        token, _ = Token.objects.get_or_create(user=user)
    return token


def revoke_api_token(*, user) -> None:
    Token.objects.filter(user=user).delete()


class ExpiringTokenAuthentication(TokenAuthentication):
    """DRF's token authentication, refusing tokens older than API_TOKEN_TTL_HOURS (401)."""

    def authenticate_credentials(self, key):
        user, token = super().authenticate_credentials(key)
        if token_expired(token):
            raise exceptions.AuthenticationFailed("Token expired: ask for a new one with POST /api/auth/token/.")
        return user, token
