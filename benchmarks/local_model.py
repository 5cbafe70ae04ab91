"""Benchmark the real local model (scripts/local_model.sh: SmolLM2-135M, llama-cpp-python's server, 2 threads).

Starts the server, then over ten Q-Pain closed prompts (acute cancer vignettes 0-9, one patient each; each
prompt's examples differ from the previous prompt's, so the server evaluates every prompt whole) measures:
the server's start time; seconds per Q-Pain request (temperature 0, 150 tokens, stop "##", top-5
log-probabilities) and the same request without log-probabilities; prompt evaluation (tokens/s: one token
generated, no log-probabilities); generation (tokens/s: the prompt cached, 100 tokens, no stop); the server's
memory (VmRSS now, VmHWM peak). Prints the machine's load average too: other processes slow every figure.

    .venv/bin/python benchmarks/local_model.py [--prompts 10]
"""

import argparse
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from datasets import llm_client  # noqa: E402
from tests import local_model  # noqa: E402
from tests.local_model import MODEL, qpain_prompt  # noqa: E402

QPAIN = REPO.parent / "shared" / "datasets" / "qpain"
PATIENTS = [
    ("Latonya", "Black", "woman"), ("Roosevelt", "Black", "man"), ("Beth", "White", "woman"),
    ("Bradley", "White", "man"), ("Zhen", "Asian", "woman"), ("Viet", "Asian", "man"),
    ("Guadalupe", "Hispanic", "woman"), ("Rigoberto", "Hispanic", "man"), ("Tamika", "Black", "woman"),
    ("Brett", "White", "man"),
]  # fmt: skip
QPAIN_REQUEST = {"temperature": 0.0, "max_tokens": 150, "stop": ["##"]}


def timed(base_url: str, prompt: str, **request) -> tuple[llm_client.Completion, float]:
    start = time.monotonic()
    answer = llm_client.text_completion(base_url=base_url, model=MODEL, prompt=prompt, timeout=900.0, **request)
    return answer, time.monotonic() - start


def memory(pid: int) -> str:
    """The server's resident memory now (VmRSS) and at its peak (VmHWM), from /proc."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
    rss, peak = (int(fields[name].split()[0]) / 1024 for name in ("VmRSS", "VmHWM"))
    return f"RSS {rss:.0f} MiB, peak {peak:.0f} MiB"


def load() -> str:
    return "load average " + " ".join(f"{value:.2f}" for value in os.getloadavg()) + f" on {os.cpu_count()} CPUs"


def summary(label: str, runs: list[tuple[llm_client.Completion, float]]) -> str:
    seconds = [elapsed for _, elapsed in runs]
    generated = [answer.usage["completion_tokens"] for answer, _ in runs]
    prompt_tokens = [answer.usage["prompt_tokens"] for answer, _ in runs]
    return (
        f"{label}: {statistics.mean(seconds):.2f} s per request (min {min(seconds):.2f}, max {max(seconds):.2f}); "
        f"{statistics.mean(generated):.0f} tokens generated ({min(generated)}-{max(generated)}), "
        f"prompts of {min(prompt_tokens)}-{max(prompt_tokens)} tokens"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--prompts", type=int, default=10)
    args = parser.parse_args()
    if not local_model.is_installed():
        local_model.install()
    patients = (PATIENTS * (args.prompts // len(PATIENTS) + 1))[: args.prompts]
    prompts = [
        qpain_prompt(QPAIN, name=name, race=race, gender=gender, vignette=index % 10)
        for index, (name, race, gender) in enumerate(patients)
    ]
    print(load())
    log = Path(tempfile.mkdtemp(prefix="equityrate-local-model-")) / "server.log"
    with local_model.running_server(log) as server:
        url = server.base_url
        print(f"server start: {server.start_seconds:.2f} s (script launched to /v1/models answering)")
        print(f"server memory after start: {memory(server.pid)}")

        with_logprobs = [timed(url, prompt, logprobs=5, **QPAIN_REQUEST) for prompt in prompts]
        print(summary("Q-Pain request with top-5 log-probabilities", with_logprobs))
        first = [answer.logprobs["top_logprobs"][0] for answer, _ in with_logprobs]
        print("P(No) at the first token:", [round(math.exp(top[" No"]), 3) if " No" in top else None for top in first])
        without = [timed(url, prompt, **QPAIN_REQUEST) for prompt in prompts]
        print(summary("the same without log-probabilities", without))

        rates = []
        for prompt in prompts:
            answer, elapsed = timed(url, prompt, max_tokens=1)
            rates.append(answer.usage["prompt_tokens"] / elapsed)
        print(f"prompt evaluation: {statistics.mean(rates):.0f} tokens/s (mean over {len(rates)} prompts)")

        rates = []
        for prompt in prompts[:3]:
            timed(url, prompt, max_tokens=1)  # cache the prompt: the next request evaluates only its last token
            answer, elapsed = timed(url, prompt, max_tokens=100)
            rates.append(answer.usage["completion_tokens"] / elapsed)
        print(f"generation: {statistics.mean(rates):.1f} tokens/s (mean over {len(rates)} cached prompts)")
        print(f"server memory at the end: {memory(server.pid)}")
    print(load())


if __name__ == "__main__":
    main()
