"""Shared pieces of the JSON API: pagination, query-parameter filters, and the checks on what comes in."""

from rest_framework import pagination, parsers, serializers
from rest_framework.exceptions import ParseError

from config.storable import MAX_JSON_DEPTH, json_problem


class PageNumberPagination(pagination.PageNumberPagination):
    page_size = 50
    page_size_query_param = "page_size"
    # A larger page would hold one request (and its database connection) for too long.
    max_page_size = 500


class QueryFilters(serializers.Serializer):
    """A list endpoint's query parameters: a malformed one is a 400 naming it, never a 500."""

    @classmethod
    def from_request(cls, request) -> dict:
        filters = cls(data=request.query_params)
        filters.is_valid(raise_exception=True)
        return filters.validated_data


class StorableJSONParser(parsers.JSONParser):
    """JSON bodies the database can store: no NUL or lone surrogate anywhere, nested at most MAX_JSON_DEPTH deep.

    The API's only JSON parser (settings.REST_FRAMEWORK), so every serializer, DictField and JSONField
    included, gets bodies that cannot fail in a query.
    """

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError(f"JSON parse error - nested more than {MAX_JSON_DEPTH} levels deep.") from None
        if problem := json_problem(data):
            raise ParseError(f"JSON parse error - {problem}.")
        return data


class StorableJSONField(serializers.JSONField):
    """A JSON value checked as the parser checks bodies: form and multipart bodies carry JSON as text too."""

    def to_internal_value(self, data):
        try:
            value = super().to_internal_value(data)  # parses JSON sent as form text
        except RecursionError:
            raise serializers.ValidationError(f"Not storable: nested more than {MAX_JSON_DEPTH} levels deep.") from None
        if problem := json_problem(value):
            raise serializers.ValidationError(f"Not storable: {problem}.")
        return value


class JSONObjectField(StorableJSONField):
    """A JSON object ({...}): settings keyed by name, never null, a list or a bare value."""

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if not isinstance(value, dict):
            raise serializers.ValidationError('Send a JSON object, e.g. {"top_p": 0.9}, or {} for none.')
        return value
