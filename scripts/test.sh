#!/usr/bin/env bash
# Run the whole test suite against real PostgreSQL and Redis, with a real Celery worker for integration tests.
# Usage: scripts/test.sh [pytest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh requirements-dev.txt
scripts/services.sh
scripts/chromium.sh

export DEBUG=true
export DATABASE_URL="${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}"
export TEST_CELERY_BROKER_URL="${TEST_CELERY_BROKER_URL:-redis://127.0.0.1:6379/15}"
# Throttling counters live in Redis, as in production (each run under its own key prefix: tests/conftest.py).
export CACHE_URL="${TEST_CACHE_URL:-redis://127.0.0.1:6379/14}"
export CACHE_KEY_PREFIX="equityrate-test-$$"
# The Django process itself runs tasks eagerly unless a test points it at the worker.
unset CELERY_BROKER_URL

# pytest exits 5 when it collects no tests: that is a failure here, not a pass.
.venv/bin/python -m pytest "$@"

if [ $# -eq 0 ]; then
  # The demo runs on SQLite: check the parts it uses (importers, demo seed, assignment, rating pages) there too.
  echo "Again on SQLite (the demo's embedded default):"
  DATABASE_URL="" VAR_DIR="$(mktemp -d)" .venv/bin/python -m pytest -q -p no:cacheprovider \
    -m "not integration and not browser and not postgresql" \
    tests/datasets/test_seed_demo.py tests/studies
fi
