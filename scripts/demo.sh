#!/usr/bin/env bash
# Run EquityRate on the embedded default: SQLite under var/, Celery tasks run eagerly, demo data loaded.
# Usage: scripts/demo.sh [host:port]   (default 127.0.0.1:8000)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh requirements.txt

export DEBUG="${DEBUG:-true}"
unset DATABASE_URL CELERY_BROKER_URL
address="${1:-127.0.0.1:8000}"

.venv/bin/python manage.py migrate --no-input -v 0
.venv/bin/python manage.py seed_demo
echo
echo "EquityRate is starting at http://$address/  (Ctrl-C to stop)"
exec .venv/bin/python manage.py runserver "$address"
