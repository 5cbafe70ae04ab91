"""Failed sign-ins are throttled per account and per client address, on every page that checks a password,
with the counters in the shared cache (Redis in these tests, as in production)."""

import threading
import time

import pytest
from django.conf import settings as django_settings
from django.core.cache import cache
from django.test import Client, RequestFactory
from rest_framework.test import APIClient
from rest_framework.throttling import ScopedRateThrottle

from config.throttling import Budget, client_address
from tests.factories import PASSWORD, AnalystFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _generous_token_rate(monkeypatch):
    # The token endpoint's own rate limit (tested in tests/api/test_tokens.py) would answer 429 first.
    monkeypatch.setattr(ScopedRateThrottle, "THROTTLE_RATES", {"auth-token": "1000/minute"})


def page_sign_in(client, username, password, **extra):
    return client.post("/accounts/login/", {"username": username, "password": password}, **extra)


def api_sign_in(username, password, **extra):
    return APIClient().post("/api/auth/token/", {"username": username, "password": password}, format="json", **extra)


def signed_in(client) -> bool:
    return "_auth_user_id" in client.session


def redis_keys(scope: str) -> list[bytes]:
    prefix = django_settings.CACHES["default"]["KEY_PREFIX"]
    return list(cache._cache.get_client().scan_iter(match=f"{prefix}:*throttle:{scope}:*"))


def test_the_throttling_counters_live_in_redis():
    assert django_settings.CACHES["default"]["BACKEND"] == "django.core.cache.backends.redis.RedisCache"


def test_fifty_wrong_passwords_lock_the_account_on_the_login_page_even_for_the_right_one():
    user = AnalystFactory()
    client = Client()

    wrong = [page_sign_in(client, user.username, f"guess-{n}") for n in range(50)]
    right = page_sign_in(client, user.username, PASSWORD)

    assert all(response.status_code == 200 for response in wrong)
    assert "Please enter a correct username and password" in wrong[9].content.decode()
    assert "Too many failed sign-ins for this account. Try again in 15 minutes." in wrong[10].content.decode()
    assert right.status_code == 200 and not signed_in(client)
    assert "Too many failed sign-ins for this account" in right.content.decode()
    assert redis_keys("sign-in-account") and redis_keys("sign-in-address")  # counted in Redis


def test_fifty_wrong_passwords_lock_the_account_on_the_token_endpoint_even_for_the_right_one():
    user = AnalystFactory()

    wrong = [api_sign_in(user.username, f"guess-{n}") for n in range(50)]
    right = api_sign_in(user.username, PASSWORD)

    assert [response.status_code for response in wrong] == [400] * 10 + [429] * 40
    assert right.status_code == 429 and "token" not in right.json()
    assert right.json()["detail"].startswith("Too many failed sign-ins for this account. Try again in 15 minutes.")
    assert 890 <= int(right["Retry-After"]) <= 900
    assert redis_keys("sign-in-account")


def test_the_page_and_the_api_share_the_accounts_budget():
    user = AnalystFactory()
    for n in range(10):
        page_sign_in(Client(), user.username, f"guess-{n}")
    assert api_sign_in(user.username, PASSWORD).status_code == 429


def test_the_admin_login_is_throttled_too():
    from django.contrib.auth import get_user_model

    get_user_model().objects.create_superuser("root", "root@example.org", PASSWORD)
    client = Client()
    for n in range(10):
        client.post("/admin/login/", {"username": "root", "password": f"guess-{n}"})

    response = client.post("/admin/login/", {"username": "root", "password": PASSWORD})

    assert "Too many failed sign-ins for this account" in response.content.decode() and not signed_in(client)


def test_the_lock_out_ends_with_the_window(settings):
    settings.LOGIN_FAILURE_LIMIT, settings.LOGIN_FAILURE_WINDOW_SECONDS = 3, 2
    user = AnalystFactory()
    client = Client()
    for n in range(3):
        page_sign_in(client, user.username, f"guess-{n}")

    locked = page_sign_in(client, user.username, PASSWORD)
    time.sleep(2.2)  # Redis expires the counter
    after = page_sign_in(client, user.username, PASSWORD)

    assert "Try again in 1 minute." in locked.content.decode()
    assert after.status_code == 302 and signed_in(client)


def test_a_success_clears_the_accounts_count():
    user = AnalystFactory()
    for _ in range(2):
        for n in range(9):
            page_sign_in(Client(), user.username, f"guess-{n}")
        assert page_sign_in(Client(), user.username, PASSWORD).status_code == 302


def test_one_address_failing_on_many_accounts_is_refused_on_every_account(settings):
    settings.LOGIN_ADDRESS_FAILURE_LIMIT = 5
    users = AnalystFactory.create_batch(6)
    for user in users[:5]:
        page_sign_in(Client(), user.username, "guess", REMOTE_ADDR="198.51.100.7")

    same_address = page_sign_in(Client(), users[5].username, PASSWORD, REMOTE_ADDR="198.51.100.7")
    api = api_sign_in(users[5].username, PASSWORD, REMOTE_ADDR="198.51.100.7")
    other_address = page_sign_in(Client(), users[5].username, PASSWORD, REMOTE_ADDR="198.51.100.8")

    assert "Too many failed sign-ins from your network address" in same_address.content.decode()
    assert api.status_code == 429 and "from your network address" in api.json()["detail"]
    assert other_address.status_code == 302


def test_successful_sign_ins_do_not_use_up_an_addresss_budget(settings):
    settings.LOGIN_ADDRESS_FAILURE_LIMIT = 3
    users = AnalystFactory.create_batch(5)
    page_sign_in(Client(), users[0].username, "guess", REMOTE_ADDR="198.51.100.7")
    for user in users:  # a ward of colleagues behind one address, each signing in
        assert page_sign_in(Client(), user.username, PASSWORD, REMOTE_ADDR="198.51.100.7").status_code == 302


def test_a_forged_x_forwarded_for_does_not_escape_the_address_budget(settings):
    settings.LOGIN_ADDRESS_FAILURE_LIMIT = 3
    users = AnalystFactory.create_batch(4)
    for n, user in enumerate(users[:3]):
        page_sign_in(Client(), user.username, "guess", REMOTE_ADDR="198.51.100.7", HTTP_X_FORWARDED_FOR=f"10.0.0.{n}")

    response = page_sign_in(Client(), users[3].username, PASSWORD, REMOTE_ADDR="198.51.100.7",
                            HTTP_X_FORWARDED_FOR="10.0.0.99")  # fmt: skip

    assert "from your network address" in response.content.decode()


@pytest.mark.parametrize(
    "proxies, forwarded, address",
    [
        (0, "203.0.113.9", "192.0.2.1"),  # no trusted proxy: the header is the client's own words
        (1, None, "192.0.2.1"),
        (1, "203.0.113.9", "203.0.113.9"),
        (1, "10.6.6.6, 203.0.113.9", "203.0.113.9"),  # the client wrote 10.6.6.6; our proxy appended the rest
        (2, "10.6.6.6, 203.0.113.9, 192.0.2.50", "203.0.113.9"),
        (2, "203.0.113.9", "203.0.113.9"),
    ],
)
def test_the_client_address_trusts_x_forwarded_for_only_as_far_as_the_proxies(settings, proxies, forwarded, address):
    settings.TRUSTED_PROXY_COUNT = proxies
    headers = {"HTTP_X_FORWARDED_FOR": forwarded} if forwarded else {}
    assert client_address(RequestFactory().get("/", REMOTE_ADDR="192.0.2.1", **headers)) == address


def test_concurrent_attempts_never_exceed_a_budget():
    budget = Budget("test-concurrency", limit=5, window_seconds=60)
    results = []
    start = threading.Barrier(20)

    def attempt():
        start.wait()
        results.append(budget.spend("someone"))

    threads = [threading.Thread(target=attempt) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert results.count(None) == 5 and all(wait and 0 < wait <= 60 for wait in results if wait is not None)
