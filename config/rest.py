"""Shared pieces of the JSON API: pagination and query-parameter filters."""

from rest_framework import pagination, serializers


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
