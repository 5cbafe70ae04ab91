"""Shared fixtures: the seed datasets beside the repository, users in each role, a real Celery worker."""

import os
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest
from django.db import connection

from tests import celery_process

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


@pytest.fixture(autouse=True)
def _empty_cache():
    """Each test starts with no throttling counters. On Redis only this run's keys go (other runs share the
    server under their own CACHE_KEY_PREFIX), never a FLUSHDB."""
    yield
    from django.conf import settings
    from django.core.cache import cache

    prefix = settings.CACHES["default"].get("KEY_PREFIX", "")
    if settings.CACHES["default"]["BACKEND"].endswith("RedisCache"):
        client = cache._cache.get_client(write=True)
        keys = list(client.scan_iter(match=f"{prefix}:*", count=1000))
        if keys:
            client.delete(*keys)
    else:
        cache.clear()


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


@pytest.fixture(scope="session")
def celery_test_broker(django_db_setup, django_db_blocker):
    """What a worker needs to join this run: the test broker, the test database and the run's own queue.

    Each run gets its own queue, so runs sharing one Redis never take each other's tasks.
    """
    from config.celery import app

    broker = os.environ.get("TEST_CELERY_BROKER_URL")
    if not broker:
        pytest.fail("TEST_CELERY_BROKER_URL is not set: run the tests with scripts/test.sh")
    with django_db_blocker.unblock():
        if connection.vendor != "postgresql":
            pytest.fail(
                "integration tests need PostgreSQL: run them with scripts/test.sh (DATABASE_URL=postgres://...)"
            )
        worker_database = celery_process.database_url(connection.settings_dict)
    queue = f"equityrate-test-{uuid.uuid4().hex[:8]}"
    return SimpleNamespace(app=app, broker_url=broker, database_url=worker_database, queue=queue)


@pytest.fixture
def celery_broker(celery_test_broker):
    """Send this test's tasks through the test broker to the run's queue; eager again once the test is over.

    Per test, not per session: tests that come after rely on eager Celery running tasks in-process.
    """
    broker = celery_test_broker
    with celery_process.using_broker(broker.app, broker_url=broker.broker_url, queue=broker.queue):
        yield broker


@pytest.fixture(scope="session")
def celery_worker_process(celery_test_broker, tmp_path_factory):
    """One real `celery worker` for the whole run, on the run's queue, using the test database.

    A threads pool: engine lanes spend their time waiting on HTTP, and an endpoint's lanes run side by side.
    """
    broker = celery_test_broker
    try:
        with celery_process.using_broker(broker.app, broker_url=broker.broker_url, queue=broker.queue):
            worker = celery_process.start_worker(
                broker.app,
                queue=broker.queue,
                broker_url=broker.broker_url,
                database_url=broker.database_url,
                log=tmp_path_factory.mktemp("celery") / "worker.log",
                pool="threads",
                concurrency=8,
            )
    except celery_process.WorkerNotReady as error:
        pytest.fail(str(error))
    try:
        yield worker
    finally:
        worker.stop()


@pytest.fixture
def celery_worker(celery_worker_process, celery_broker):
    """A real Celery worker over Redis running this test's tasks (`.delay()` here reaches it)."""
    return celery_worker_process
