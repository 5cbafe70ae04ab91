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
# The Django process itself runs tasks eagerly unless a test points it at the worker.
unset CELERY_BROKER_URL

# pytest exits 5 when it collects no tests: that is a failure here, not a pass.
exec .venv/bin/python -m pytest "$@"
