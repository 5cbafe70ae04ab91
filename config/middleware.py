"""Requests refused before any view (an address no page can take), and the database time a request may take."""

from django.conf import settings
from django.db import DatabaseError, OperationalError, connection
from django.http import HttpResponse, HttpResponseBadRequest, JsonResponse


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


# PostgreSQL's code for a statement cancelled by statement_timeout (or by pg_cancel_backend).
QUERY_CANCELED = "57014"


class StatementTimeout:
    """Web requests run under PostgreSQL's statement_timeout (`WEB_STATEMENT_TIMEOUT_MS`): a query that runs
    longer (a pathological filter, say) is cancelled by the database itself and the request answered with 503,
    instead of holding a database core past the web worker's own timeout. Set at the start of each request and
    reset after it, so Celery workers and commands (analyses and imports run long) never get it. Nothing is done
    on SQLite (the demo) or when the setting is 0.

    A streamed response (an export) reads its rows after the view has returned, so without the limit.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        timeout = settings.WEB_STATEMENT_TIMEOUT_MS
        if not timeout or connection.vendor != "postgresql":
            return self.get_response(request)
        with connection.cursor() as cursor:
            cursor.execute("SELECT set_config('statement_timeout', %s, false)", [f"{int(timeout)}ms"])
        try:
            return self.get_response(request)
        finally:
            self._reset()

    def process_exception(self, request, exception):
        if not (
            isinstance(exception, OperationalError) and getattr(exception.__cause__, "sqlstate", None) == QUERY_CANCELED
        ):
            return None
        seconds = settings.WEB_STATEMENT_TIMEOUT_MS / 1000
        message = (f"The database took more than {seconds:g} seconds over this request, so it was stopped. Ask for "
                   "less at a time, or try again later.")  # fmt: skip
        if request.path.startswith("/api/"):
            return JsonResponse({"detail": message}, status=503)
        return HttpResponse(message, content_type="text/plain; charset=utf-8", status=503)

    @staticmethod
    def _reset() -> None:
        if connection.connection is None:  # closed during the request: a new connection starts without it
            return
        try:
            with connection.cursor() as cursor:
                cursor.execute("RESET statement_timeout")
        except DatabaseError:
            # A broken connection: closing it takes the setting with it, and the next use opens a fresh one.
            connection.close()
