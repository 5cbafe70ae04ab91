"""The OpenAPI schema documents every status code an operation can return, errors included."""

from drf_spectacular import openapi
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse
from rest_framework.permissions import AllowAny

ERRORS = {
    "400": "Invalid input: the problems, per field (or under 'detail' / 'non_field_errors').",
    "401": "Not signed in: send 'Authorization: Token ...' (POST /api/auth/token/).",
    "403": "Signed in, but this role may not do this.",
    "404": "No such object, or not one you may see; or a page past the last.",
    "429": "Too many requests: wait for the number of seconds in Retry-After.",
    "503": "The database took longer than WEB_STATEMENT_TIMEOUT_MS over this request, which was stopped.",
}


class AutoSchema(openapi.AutoSchema):
    """drf-spectacular's schema plus the error responses the API's shared machinery returns.

    400 for every operation (the address and body checks of config.middleware and config.rest apply to all),
    401 where authentication applies, 403 where a permission does, 404 for objects and paginated lists,
    429 where a throttle applies, 503 for all (a request's queries are stopped after
    WEB_STATEMENT_TIMEOUT_MS). Operation-specific errors (409 ...) come from each view's @extend_schema.
    """

    def error_codes(self) -> list[str]:
        codes = ["400"]
        if self.view.get_authenticators():  # a wrong or expired token is refused whatever the permissions
            codes.append("401")
        if not all(isinstance(permission, AllowAny) for permission in self.view.get_permissions()):
            codes.append("403")
        if "{" in self.path or self._is_list_view() and self._get_paginator():
            codes.append("404")
        if self.view.get_throttles():
            codes.append("429")
        codes.append("503")  # config.middleware.StatementTimeout, for every request
        return codes

    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        for code in self.error_codes():
            if code not in responses:
                error = OpenApiResponse(OpenApiTypes.OBJECT, description=ERRORS[code])
                responses[code] = self._get_response_for_code(error, code, direction=direction)
        return responses
