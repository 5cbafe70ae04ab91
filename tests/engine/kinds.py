"""Two stand-in kinds of work for the engine's tests: `echo` (ask a text, keep the reply) and `judge-like`
(a completion-mode request about an item, as a judge would send). Both keep what they store in the cache
(Redis in the test runs, shared with the worker processes), once per call, and their failures too.

Imported by the tests, and by a test worker through ENGINE_KIND_MODULES=tests.engine.kinds.
"""

from django.core.cache import cache

import engine

STORED = "engine-test:stored:{kind}:{call}"
FAILED = "engine-test:failed:{kind}:{call}"


class Echo:
    kind = "echo"

    def prepare(self, call) -> engine.Request:
        if "text" not in call.subject:
            raise engine.CallRefused(f"call {call.id} has no text to send")
        return engine.Request(
            mode="chat",
            body={"model": "stand-in", "messages": [{"role": "user", "content": call.subject["text"]}],
                  "max_tokens": 32, "temperature": 0.0},
        )  # fmt: skip

    def store(self, call, completion) -> dict:
        # `add` keeps the first reply: a call stored twice (a lease ran out under a slow worker) counts once.
        cache.add(STORED.format(kind=self.kind, call=call.id), completion.text, timeout=3600)
        return {"text": completion.text, "attempt": call.attempts}

    def failed(self, call, error) -> None:
        cache.set(FAILED.format(kind=self.kind, call=call.id), str(error), timeout=3600)


class JudgeLike(Echo):
    kind = "judge-like"

    def prepare(self, call) -> engine.Request:
        return engine.Request(
            mode="completion",
            body={"model": "stand-in-judge", "prompt": f"Rate item {call.subject['item']}: is it biased?",
                  "max_tokens": 8, "temperature": 0.0},
        )  # fmt: skip


def stored(kind: str, call_id: int) -> str | None:
    return cache.get(STORED.format(kind=kind, call=call_id))


def failure(kind: str, call_id: int) -> str | None:
    return cache.get(FAILED.format(kind=kind, call=call_id))


engine.register(Echo.kind, Echo())
engine.register(JudgeLike.kind, JudgeLike())
