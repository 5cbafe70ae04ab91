"""The demo's embedded broker: a worker over kombu's filesystem transport and SQLite, as `make demo` runs it."""

import subprocess
import sys
import time

import pytest

from tests.config.test_settings import REPO, clean_environment
from tests.llm_server import FakeLLM

pytestmark = pytest.mark.integration

GENERATE = """
import time
from datasets.generation import jobs
from datasets.models import Answer, AnswerSource, Dataset, Question
dataset = Dataset.objects.create(name="Demo check")
for n in range(6):
    Question.objects.create(dataset=dataset, external_id=str(n), text=f"Question {n}?")
source = AnswerSource.objects.create(name="Stand-in", kind="model", base_url="{base_url}", model_name="m",
                                     concurrency=3)
job = jobs.start_job(dataset=dataset, source=source)
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    job.refresh_from_db()
    if job.is_finished:
        break
    time.sleep(0.3)
print(job.status, Answer.objects.filter(source=source).count(), jobs.worker_status()["workers"])
"""


def test_the_demo_worker_generates_answers_over_the_embedded_broker(tmp_path):
    env = clean_environment(DEBUG="true", VAR_DIR=str(tmp_path), CELERY_BROKER_URL="filesystem://")
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "--no-input", "-v", "0"], cwd=REPO, env=env, check=True, timeout=120)
    log = (tmp_path / "worker.log").open("w")
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool", "threads", "-c", "4",
         "--without-gossip", "--without-mingle", "--loglevel", "INFO"],
        cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        time.sleep(1)
        with FakeLLM(latency=0.1) as server:
            result = subprocess.run(
                [*manage, "shell", "-c", GENERATE.replace("{base_url}", server.base_url)],
                cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
            )  # fmt: skip
    finally:
        worker.terminate()
        worker.wait(timeout=20)
    worker_log = (tmp_path / "worker.log").read_text()[-3000:]
    assert result.returncode == 0, result.stderr + worker_log
    status, answers, workers = result.stdout.strip().splitlines()[-1].split(" ", 2)
    assert (status, answers) == ("done", "6"), worker_log
    assert "celery@" in workers
    assert len(server.requests) == 6
    assert (tmp_path / "broker" / "messages").is_dir()
