#!/usr/bin/env bash
# Run EquityRate on the embedded default: SQLite under var/, an embedded file-based Celery broker under
# var/broker with one worker beside the web server (no broker service needed), demo data loaded.
# Usage: scripts/demo.sh [host:port]   (default 127.0.0.1:8000)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh requirements.txt

export DEBUG="${DEBUG:-true}"
unset DATABASE_URL
# kombu's filesystem transport: messages are files, so the web process and the worker share them.
export CELERY_BROKER_URL="filesystem://"
address="${1:-127.0.0.1:8000}"

.venv/bin/python manage.py migrate --no-input -v 0
.venv/bin/python manage.py seed_demo

# Answer generation waits on HTTP, so the worker uses threads.
mkdir -p var
.venv/bin/celery -A config worker --pool threads --concurrency 8 --loglevel WARNING \
  --without-gossip --without-mingle >var/demo-worker.log 2>&1 &
worker=$!
trap 'kill "$worker" 2>/dev/null || true' EXIT INT TERM

echo
echo "Celery worker started (log: var/demo-worker.log)."
echo "EquityRate is starting at http://$address/  (Ctrl-C to stop)"
.venv/bin/python manage.py runserver "$address"
