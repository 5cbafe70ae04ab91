"""A real `celery -A config worker` process, for integration tests and benchmarks.

`start_worker` launches one on its own queue against a given database and broker and returns once it answers
a ping; `CeleryWorker.stop` shuts it down warmly and `CeleryWorker.kill` SIGKILLs it (a crash: no clean-up
runs, its leases and lane heartbeats are simply left behind). `using_broker` points this process's Celery app
at the same broker, so that `.delay()` here reaches the worker instead of running eagerly.
"""

import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from kombu import pools

REPO = Path(__file__).resolve().parent.parent


class WorkerNotReady(RuntimeError):
    pass


@dataclass
class CeleryWorker:
    process: subprocess.Popen
    name: str  # the node name's prefix, e.g. "equityrate-test-1a2b3c4d-a"; the node is "<name>@<host>"
    queue: str
    log: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    def log_tail(self, chars: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else "(no log)"

    def stop(self, timeout: float = 20) -> None:
        """Warm shutdown (SIGTERM): running tasks finish, reserved ones go back to the broker."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()

    def kill(self) -> None:
        """SIGKILL: the process dies at once, as in a crash or an out-of-memory kill."""
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)


def database_url(settings_dict: dict) -> str:
    """The PostgreSQL URL a worker needs to use the same database as this process (after test set-up)."""
    user = settings_dict.get("USER") or "postgres"
    password = f":{settings_dict['PASSWORD']}" if settings_dict.get("PASSWORD") else ""
    host = settings_dict.get("HOST") or "127.0.0.1"
    port = settings_dict.get("PORT") or 5432
    return f"postgres://{user}{password}@{host}:{port}/{settings_dict['NAME']}"


def start_worker(
    app,
    *,
    queue: str,
    broker_url: str,
    database_url: str,
    log: Path,
    name: str | None = None,
    pool: str = "threads",
    concurrency: int = 8,
    env: dict[str, str] | None = None,
    ready_timeout: float = 60,
) -> CeleryWorker:
    """Start a worker consuming only `queue`; return once `app` (on the same broker) gets its ping reply.

    The worker's engine tasks (resume on start, lane hand-over) go to `queue` too. `env` adds or
    overrides environment variables, e.g. GENERATION_LEASE_MARGIN_SECONDS.
    """
    name = name or queue
    worker_env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "CELERY_BROKER_URL": broker_url,
        "CELERY_GENERATION_QUEUE": queue,
        "DEBUG": "true",
        **(env or {}),
    }
    command = [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", queue, "-n", f"{name}@%h",
               "--pool", pool, "--concurrency", str(concurrency), "--loglevel=INFO",
               "--without-gossip", "--without-mingle"]  # fmt: skip
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a") as output:
        process = subprocess.Popen(command, cwd=REPO, env=worker_env, stdout=output, stderr=subprocess.STDOUT)
    worker = CeleryWorker(process=process, name=name, queue=queue, log=log)
    try:
        wait_for_worker(app, worker, timeout=ready_timeout)
    except BaseException:
        worker.kill()
        raise
    return worker


@contextmanager
def running_worker(app, **options):
    """`start_worker` as a context manager: the worker is stopped (or killed, if stopping hangs) on the way out."""
    worker = start_worker(app, **options)
    try:
        yield worker
    finally:
        worker.stop()


def wait_for_worker(app, worker: CeleryWorker, timeout: float = 60) -> None:
    """Wait until the worker answers a ping over the broker; fail with its log if it exits or stays silent."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if worker.process.poll() is not None:
            raise WorkerNotReady(f"the Celery worker exited with {worker.process.returncode}:\n{worker.log_tail()}")
        try:
            replies = app.control.ping(timeout=1.0) or []
        except Exception:  # the broker may be restarting; keep asking until the deadline
            reset_connection_pools(app)
            time.sleep(0.5)
            continue
        if any(node.startswith(f"{worker.name}@") for reply in replies for node in reply):
            return
    raise WorkerNotReady(f"the Celery worker did not answer within {timeout:g} s:\n{worker.log_tail()}")


@contextmanager
def using_broker(app, *, broker_url: str, queue: str):
    """Send this process's tasks through `broker_url` to `queue` (not eagerly); restore the app on the way out."""
    keys = ("broker_url", "task_always_eager", "task_default_queue")
    saved = {key: app.conf[key] for key in keys}
    app.conf.update(broker_url=broker_url, task_always_eager=False, task_default_queue=queue)
    reset_connection_pools(app)
    try:
        yield
    finally:
        app.conf.update(saved)
        reset_connection_pools(app)


def reset_connection_pools(app) -> None:
    # Even an eager .delay() opens a producer pool for the broker configured at that moment;
    # drop it so the next call connects to the broker set now. kombu keeps its pools in a registry keyed
    # by broker URL: clear that too, or switching back to a broker would find its pool closed.
    pools.reset()
    app._pool = None
    app.amqp._producer_pool = None
