"""Shared fixtures: the seed datasets beside the repository, users in each role, a real Celery worker."""

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from django.db import connection

REPO = Path(__file__).resolve().parent.parent
SHARED_DATASETS = REPO.parent / "shared" / "datasets"


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix):
    """Give each test run its own database, so runs sharing one PostgreSQL server never collide."""
    from django.conf import settings

    default = settings.DATABASES["default"]
    if default["ENGINE"].endswith("postgresql"):
        default.setdefault("TEST", {})["NAME"] = f"test_{default['NAME']}_{os.getpid()}"


@pytest.fixture(scope="session")
def shared_datasets() -> Path:
    if not SHARED_DATASETS.is_dir():
        pytest.fail(f"the seed datasets are expected at {SHARED_DATASETS} (../shared beside the repository)")
    return SHARED_DATASETS


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    # Hashing strength is not under test; the default hasher makes each test user cost ~0.3 s.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def reference_data():
    """The rows migrations create (pools, rubrics, survey categories).

    Transactional tests (browser, worker) flush the database after each test, taking these with them;
    this puts them back.
    """
    from raters.defaults import ensure_builtin_pools, ensure_demographic_options
    from raters.models import DemographicOption, RaterPool
    from studies.models import Rubric, RubricVersion
    from studies.rubric_defaults import ensure_default_rubrics

    ensure_builtin_pools(RaterPool)
    ensure_demographic_options(DemographicOption)
    ensure_default_rubrics(Rubric, RubricVersion)


@pytest.fixture
def coordinator(db):
    from tests.factories import CoordinatorFactory

    return CoordinatorFactory()


@pytest.fixture
def physician(db):
    from tests.factories import RaterFactory

    return RaterFactory(pool="physician")


def _database_url_for_worker() -> str:
    settings = connection.settings_dict
    if connection.vendor != "postgresql":
        pytest.fail("integration tests need PostgreSQL: run them with scripts/test.sh (DATABASE_URL=postgres://...)")
    user = settings.get("USER") or "postgres"
    password = f":{settings['PASSWORD']}" if settings.get("PASSWORD") else ""
    host = settings.get("HOST") or "127.0.0.1"
    port = settings.get("PORT") or 5432
    return f"postgres://{user}{password}@{host}:{port}/{settings['NAME']}"


@pytest.fixture(scope="session")
def celery_worker(django_db_setup, django_db_blocker, tmp_path_factory):
    """A real `celery worker` process over Redis, using the test database; tasks go to its own queue."""
    from config.celery import app

    broker = os.environ.get("TEST_CELERY_BROKER_URL")
    if not broker:
        pytest.fail("TEST_CELERY_BROKER_URL is not set: run the tests with scripts/test.sh")
    queue = f"equityrate-test-{uuid.uuid4().hex[:8]}"
    with django_db_blocker.unblock():
        database_url = _database_url_for_worker()
    log = tmp_path_factory.mktemp("celery") / "worker.log"
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "CELERY_BROKER_URL": broker,
        "DEBUG": "true",
    }
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", queue, "-c", "2",
         "-n", f"{queue}@%h", "--loglevel=INFO", "--without-gossip", "--without-mingle"],
        cwd=REPO, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    saved = {key: app.conf[key] for key in ("broker_url", "task_always_eager", "task_default_queue")}
    app.conf.update(broker_url=broker, task_always_eager=False, task_default_queue=queue)
    _reset_connection_pools(app)
    try:
        _wait_for_worker(app, worker, f"{queue}@", log)
        yield worker
    finally:
        app.conf.update(saved)
        _reset_connection_pools(app)
        worker.terminate()
        try:
            worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()


def _reset_connection_pools(app) -> None:
    # Even an eager .delay() opens a producer pool for the broker configured at that moment;
    # drop it so the next call connects to the broker set now.
    if app._pool is not None:
        app._pool.force_close_all()
        app._pool = None
    app.amqp._producer_pool = None


def _wait_for_worker(app, worker, name_prefix: str, log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if worker.poll() is not None:
            pytest.fail(f"the Celery worker exited with {worker.returncode}:\n{log.read_text()[-3000:]}")
        replies = app.control.ping(timeout=1.0) or []
        if any(name.startswith(name_prefix) for reply in replies for name in reply):
            return
    pytest.fail(f"the Celery worker did not answer within 60 s:\n{log.read_text()[-3000:]}")
