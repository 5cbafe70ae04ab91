"""A local HTTP server that speaks the OpenAI chat-completions protocol, for tests and benchmarks.

Behaviour is configurable: latency, a number of failures with a given status before it answers, refusals
(a question containing REFUSE gets finish_reason "content_filter" and no text), log-probabilities, and a
redirect of every request to another URL. Every request's method, path and headers are kept in `received`
(e.g. to see whether an Authorization header arrived). It listens on 127.0.0.1 only.
"""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeLLM:
    def __init__(
        self,
        *,
        latency: float = 0.0,
        failures: int = 0,
        failure_status: int = 500,
        port: int = 0,
        redirect_to: str | None = None,
    ):
        self.latency = latency
        self.failures = failures
        self.failure_status = failure_status
        self.redirect_to = redirect_to
        self.requests: list[dict] = []
        self.received: list[tuple[str, str, dict]] = []  # (method, path, headers) of every request
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()

    def answer_for(self, question: str) -> str:
        return f"Generated answer to: {question[:60]}"

    def _respond(self, body: dict) -> tuple[int, dict]:
        with self._lock:
            self.requests.append(body)
            failing = self.failures > 0
            if failing:
                self.failures -= 1
        if self.latency:
            time.sleep(self.latency)
        if failing:
            return self.failure_status, {"error": {"message": f"simulated failure ({self.failure_status})"}}
        question = body["messages"][-1]["content"]
        refused = "REFUSE" in question
        choice = {
            "index": 0,
            "message": {"role": "assistant", "content": "" if refused else self.answer_for(question)},
            "finish_reason": "content_filter" if refused else "stop",
        }
        if body.get("logprobs"):
            choice["logprobs"] = {"content": [{"token": "Yes", "logprob": -0.1,
                                               "top_logprobs": [{"token": "Yes", "logprob": -0.1},
                                                                {"token": "No", "logprob": -2.4}]}]}  # fmt: skip
        usage = {"prompt_tokens": len(question.split()), "completion_tokens": 6, "total_tokens": 6}
        return 200, {"id": f"chatcmpl-{len(self.requests)}", "model": body["model"], "choices": [choice],
                     "usage": usage}  # fmt: skip

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's naming)
                fake.received.append(("GET", self.path, dict(self.headers)))
                self.send_error(405)

            def do_POST(self):  # noqa: N802
                fake.received.append(("POST", self.path, dict(self.headers)))
                if fake.redirect_to:
                    self.send_response(302)
                    self.send_header("Location", fake.redirect_to + self.path)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if not self.path.endswith("/chat/completions"):
                    self.send_error(404)
                    return
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                status, payload = fake._respond(body)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):  # keep test output quiet
                pass

        return Handler
