"""Benchmark the sentence embeddings of minilm_cosine (scoring/embeddings.py): pure, no database.

Embeds --answers texts (default 10,000) through `embed`: MEDIC's LLM-written texts (its answers and restyled
prompts, /work/shared/datasets/medic), cycled, each copy with a numbered sentence added so no two are equal.
Prints answers/s (the model's load apart), the mean word pieces per text, the peak resident memory and the load
average before and after.

    .venv/bin/python benchmarks/embedding.py [--answers 10000]
"""

import argparse
import itertools
import os
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scoring import embeddings  # noqa: E402
from tests.scoring import medic_texts  # noqa: E402


def texts(count: int) -> list[str]:
    real = medic_texts.answers() + [restyled for _, restyled in medic_texts.restyled_pairs()]
    cycled = itertools.islice(itertools.cycle(real), count)
    return [f"{text} (Note {number}.)" for number, text in enumerate(cycled)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=10_000)
    options = parser.parse_args()
    load_before = os.getloadavg()[0]
    answers = texts(options.answers)

    started = time.perf_counter()
    embeddings.model()
    loaded = time.perf_counter() - started
    started = time.perf_counter()
    embedded = embeddings.embed_texts(answers)
    seconds = time.perf_counter() - started

    tokens = sum(embedded.tokens) / len(answers)
    cut = sum(count > embeddings.MAX_TOKENS for count in embedded.tokens)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    print(f"model: {embeddings.MODEL_ID}, {embeddings.THREADS} threads, loaded in {loaded:.2f} s")
    print(f"embedded {len(answers)} answers in {seconds:.1f} s = {len(answers) / seconds:.0f} answers/s")
    print(f"mean word pieces per answer: {tokens:.0f} ({cut} cut at {embeddings.MAX_TOKENS})")
    print(f"vectors: {embedded.vectors.shape[0]} x {embedded.vectors.shape[1]} {embedded.vectors.dtype}")
    print(f"peak RSS: {peak:.0f} MiB")
    print(f"load average (1 min) before {load_before:.2f}, after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
