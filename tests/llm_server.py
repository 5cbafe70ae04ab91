"""A local HTTP server that speaks the OpenAI chat-completions and completions protocols, for tests and benchmarks.

A multiple-choice prompt (a line "### Options: A: ..., B: ..." or "A: ..., B: ...") is answered with one of
its letters, chosen by a hash of the prompt: deterministic, and spread over the letters, so scoring has
letters to read (it does not know the correct one).

Behaviour is configurable: latency, a number of failures with a given status before it answers, refusals
(a question containing REFUSE gets finish_reason "content_filter" and no text), log-probabilities, and a
redirect of every request to another URL. Every request's method, path and headers are kept in `received`
(e.g. to see whether an Authorization header arrived). It listens on 127.0.0.1 only.
"""

import hashlib
import json
import re
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
        letters = multiple_choice_letters(question)
        if letters:
            return letters[int(hashlib.sha256(question.encode()).hexdigest(), 16) % len(letters)]
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
        completions = "prompt" in body  # /completions: one prompt text, the answer in choices[0].text
        question = body["prompt"] if completions else body["messages"][-1]["content"]
        refused = "REFUSE" in question
        text = "" if refused else self.answer_for(question)
        finish_reason = "content_filter" if refused else "stop"
        if completions:
            choice: dict = {"index": 0, "text": text, "finish_reason": finish_reason}
            if body.get("logprobs"):
                choice["logprobs"] = {"tokens": [text[:1]], "token_logprobs": [-0.1], "text_offset": [0],
                                      "top_logprobs": [{text[:1] or "A": -0.1, "B": -2.4}]}  # fmt: skip
        else:
            choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish_reason}
        if body.get("logprobs") and not completions:
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
                if not self.path.endswith("/completions"):  # /chat/completions and /completions
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


# "### Options: A: x, B: y" (BiasMedQA's item template) or a line of options "A: x, B: y, ..."
OPTIONS_START = re.compile(r"(?:### Options: )?[A-J]: ")
OPTION_LETTER = re.compile(r"(?:^|, )([A-J]): ")


def multiple_choice_letters(prompt: str) -> list[str]:
    """The letters of the prompt's last line of options (in order), or [] when it has none."""
    lines = [line for line in prompt.splitlines() if OPTIONS_START.match(line)]
    if not lines:
        return []
    line = lines[-1].removeprefix("### Options: ")
    letters = list(dict.fromkeys(OPTION_LETTER.findall(line)))
    return letters if len(letters) >= 2 else []
