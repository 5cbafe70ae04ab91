"""Web requests run under a PostgreSQL statement timeout (WEB_STATEMENT_TIMEOUT_MS, config.middleware): a slow
statement is cancelled and answered with 503, and the connection outside requests (workers, commands) keeps no
limit."""

import threading
import time

import pytest
from django.db import connection, connections
from django.http import HttpResponse, JsonResponse
from django.urls import path
from django.views.decorators.http import require_GET

pytestmark = [pytest.mark.postgresql, pytest.mark.django_db(transaction=True)]


@require_GET
def sleep(request):
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_sleep(%s)", [float(request.GET["seconds"])])
    return HttpResponse("slept")


@require_GET
def show(request):
    return JsonResponse({"statement_timeout": statement_timeout()})


urlpatterns = [path("sleep/", sleep), path("api/sleep/", sleep), path("show/", show)]


def statement_timeout() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW statement_timeout")
        return cursor.fetchone()[0]


@pytest.fixture(autouse=True)
def _slow_views(settings):
    if connection.vendor != "postgresql":
        pytest.fail("this test needs PostgreSQL (statement_timeout)")
    settings.ROOT_URLCONF = __name__
    settings.WEB_STATEMENT_TIMEOUT_MS = 300


def test_a_slow_statement_in_a_request_is_cancelled_with_a_503_rather_than_hanging(client):
    started = time.monotonic()
    page = client.get("/sleep/", {"seconds": 20})
    api = client.get("/api/sleep/", {"seconds": 20})

    assert time.monotonic() - started < 10
    assert page.status_code == 503 and page["Content-Type"].startswith("text/plain")
    assert b"The database took more than 0.3 seconds over this request" in page.content
    assert api.status_code == 503 and "took more than 0.3 seconds" in api.json()["detail"]
    assert client.get("/sleep/", {"seconds": 0.01}).content == b"slept"  # the connection is still usable


def test_the_limit_holds_during_a_request_only(client):
    assert client.get("/show/").json() == {"statement_timeout": "300ms"}
    assert statement_timeout() == "0"  # reset after the request, on the same connection
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_sleep(0.5)")  # longer than the web limit: a worker or a command may take it


def test_a_worker_side_connection_has_no_timeout(client):
    client.get("/show/")
    seen = []

    def worker():  # another thread: its own connection, as a Celery worker's
        try:
            seen.append(statement_timeout())
        finally:
            connections.close_all()

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert seen == ["0"]


def test_a_timeout_of_0_sets_nothing(client, settings):
    settings.WEB_STATEMENT_TIMEOUT_MS = 0
    assert client.get("/show/").json() == {"statement_timeout": "0"}
