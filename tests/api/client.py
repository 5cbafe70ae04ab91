"""An API client logged in as a user (or anonymous), shared by the API tests."""

from rest_framework.test import APIClient


def client_for(user=None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client
