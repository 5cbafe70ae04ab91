"""A stand-in OpenAI-compatible server (chat completions and completions), to try generation without a model.

It answers "Generated answer to: <prompt>" after a delay, a multiple-choice prompt (a line "### Options:
A: ..., B: ...") with one of its letters chosen by a hash of the prompt; a question containing REFUSE gets a
refusal; a Q-Pain prompt (ending "Answer:" after a "Vignette:") gets " Yes.\nDosage: ..." or " No." with
log-probabilities when asked (tests/llm_server.py).
Usage: .venv/bin/python scripts/stand_in_llm.py [--port 8089] [--latency 0.2]
Then add a model source with base URL http://127.0.0.1:8089/v1 (any model name).
"""

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.llm_server import FakeLLM  # noqa: E402 (after the path set-up)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8089)
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per answer")
    options = parser.parse_args()
    with FakeLLM(latency=options.latency, port=options.port) as server:
        print(f"Stand-in model server at {server.base_url} (Ctrl-C to stop)", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
