"""Requests refused before any view: an address no page can take."""

from django.http import HttpResponseBadRequest


def refuse_nul_in_address(get_response):
    """A NUL character (%00) in the path or the query string is a 400 with a message, for every page and the API.

    Views pass path parts and query parameters to the database (an invitation token, a search box, a
    filter), and PostgreSQL cannot take a NUL in a query: it would fail there as a server error.
    (Lone surrogates cannot arrive this way: Django decodes addresses as UTF-8, replacing what is not.)
    """

    def middleware(request):
        query = request.GET.lists()
        if "\x00" in request.path or any("\x00" in key or "\x00" in "".join(values) for key, values in query):
            return HttpResponseBadRequest(
                "This address contains a NUL character (%00), which no page accepts.", content_type="text/plain"
            )
        return get_response(request)

    return middleware
