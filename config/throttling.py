"""Attempt budgets in the shared cache (Redis in production): at most `limit` attempts per subject per window.

A Budget counts attempts under a key such as an account name or a client address. The count is taken
before the attempt is judged (an atomic increment), so concurrent requests cannot slip past the limit
together; a caller gives an attempt back (`refund`) or clears the subject (`reset`) once it knows the
attempt was legitimate. The window is fixed, counted from the subject's first attempt; once it ends, the
subject starts afresh. Sign-in lock-outs (config/signin.py) and rate limits on anonymous pages use it.
"""

import contextlib
import hashlib
import time
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache


@dataclass(frozen=True)
class Budget:
    scope: str  # e.g. "sign-in-account": budgets of different scopes never share a counter
    limit: int
    window_seconds: int

    def _key(self, subject: str) -> str:
        digest = hashlib.sha256(subject.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        return f"throttle:{self.scope}:{digest}"

    def spend(self, subject: str) -> float | None:
        """Count one attempt. None if it is within the budget, else the seconds until the window ends."""
        key = self._key(subject)
        now = time.time()
        cache.add(f"{key}:since", now, self.window_seconds)
        for _ in range(2):
            cache.add(key, 0, self.window_seconds)
            try:
                count = cache.incr(key)
                break
            except ValueError:  # the window ended between add and incr: start the next one
                continue
        else:
            count = 1
        if count <= self.limit:
            return None
        since = cache.get(f"{key}:since") or now
        return min(float(self.window_seconds), max(1.0, since + self.window_seconds - now))

    def refund(self, subject: str) -> None:
        """Give back one attempt (e.g. a successful sign-in, which should not use up an address's budget)."""
        with contextlib.suppress(ValueError):  # the window has ended meanwhile: nothing to give back
            cache.decr(self._key(subject))

    def reset(self, subject: str) -> None:
        key = self._key(subject)
        cache.delete_many([key, f"{key}:since"])


def client_address(request) -> str:
    """The address a request came from, trusting X-Forwarded-For only as far as TRUSTED_PROXY_COUNT says.

    Each trusted proxy appends the address it received the request from, so with N proxies the client is
    the N-th entry from the end; anything before it was written by the client and is ignored. With no
    trusted proxy (the default) the header is ignored: anyone can send it. This is DRF's rule for its
    throttles (NUM_PROXIES, set from the same setting), so both agree on who a client is.
    """
    remote = request.META.get("REMOTE_ADDR", "")
    proxies = settings.TRUSTED_PROXY_COUNT
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR")
    if not proxies or not forwarded:
        return remote
    addresses = forwarded.split(",")
    return addresses[-min(proxies, len(addresses))].strip()
