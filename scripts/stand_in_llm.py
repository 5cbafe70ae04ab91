"""A stand-in OpenAI-compatible server (chat completions and completions), to try generation without a model.

It answers "Generated answer to: <prompt>" after a delay, a multiple-choice prompt (a line "### Options:
A: ..., B: ...") with one of its letters chosen by a hash of the prompt; a question containing REFUSE gets a
refusal; a Q-Pain prompt (ending "Answer:" after a "Vignette:") gets " Yes.\nDosage: ..." or " No." with
log-probabilities when asked; a judge's request (it carries the rubric's JSON Schema) gets a JSON object valid for
it, drawn by a hash of the item, wrong at the rates given (tests/llm_server.py).
Usage: .venv/bin/python scripts/stand_in_llm.py [--port 8089] [--latency 0.2] [--judge-error-rate 0.1]
       [--judge-group-error Black=0.4 ...] [--judge-invalid-rate 0.05]
       [--judge-model-error MODEL=RATE ...] [--judge-model-group-error MODEL:GROUP=RATE ...]
Then add a model source with base URL http://127.0.0.1:8089/v1 (any model name). A request naming a MODEL given
to --judge-model-error or --judge-model-group-error errs at that model's rates instead of the server's, so two
sources on this one server (two model names) are two judges erring differently (scripts/demo.sh does this).
"""

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.llm_server import FakeLLM, JudgeErrors  # noqa: E402 (after the path set-up)


def model_errors(rates: list[str], groups: list[str]) -> dict[str, JudgeErrors]:
    """{model: JudgeErrors} from MODEL=RATE and MODEL:GROUP=RATE entries; ValueError for a malformed one."""
    base: dict[str, float] = {}
    extra: dict[str, dict[str, float]] = {}
    for entry in rates:
        model, rate = entry.rsplit("=", 1)
        base[model.strip()] = float(rate)
    for entry in groups:
        named, rate = entry.rsplit("=", 1)
        model, group = named.rsplit(":", 1)
        extra.setdefault(model.strip(), {})[group.strip()] = float(rate)
    return {model: JudgeErrors(base.get(model, 0.0), extra.get(model, {})) for model in {*base, *extra}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8089)
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per answer")
    parser.add_argument(
        "--judge-error-rate",
        type=float,
        default=0.0,
        help="share of a judge's answers (per question) moved to another value",
    )
    parser.add_argument(
        "--judge-group-error",
        action="append",
        default=[],
        metavar="GROUP=RATE",
        help="an extra error rate for items mentioning GROUP (a whole word), e.g. Black=0.4",
    )
    parser.add_argument(
        "--judge-invalid-rate",
        type=float,
        default=0.0,
        help="share of a judge's replies that are prose instead of JSON (asked again)",
    )
    parser.add_argument(
        "--judge-model-error",
        action="append",
        default=[],
        metavar="MODEL=RATE",
        help="a judge asking as MODEL (the request's model name) errs at RATE instead of --judge-error-rate",
    )
    parser.add_argument(
        "--judge-model-group-error",
        action="append",
        default=[],
        metavar="MODEL:GROUP=RATE",
        help="an extra error rate for MODEL's items mentioning GROUP, e.g. stand-in-group-error:Black=0.4",
    )
    options = parser.parse_args()
    try:
        groups = {
            group.strip(): float(rate) for group, rate in (entry.split("=", 1) for entry in options.judge_group_error)
        }
    except ValueError:
        parser.error("--judge-group-error takes GROUP=RATE, e.g. Black=0.4")
    try:
        models = model_errors(options.judge_model_error, options.judge_model_group_error)
    except ValueError:
        parser.error("--judge-model-error takes MODEL=RATE, --judge-model-group-error MODEL:GROUP=RATE")
    judging = {
        "judge_models": models,
        "judge_error_rate": options.judge_error_rate,
        "judge_group_errors": groups,
        "judge_invalid_rate": options.judge_invalid_rate,
    }
    with FakeLLM(latency=options.latency, port=options.port, **judging) as server:
        print(f"Stand-in model server at {server.base_url} (Ctrl-C to stop)", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
