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
# The stand-in model the demo's source "Stand-in model (demo)" asks (datasets/demo.py): no key, no model.
.venv/bin/python scripts/stand_in_llm.py --port 8089 --latency 0.05 >var/demo-stand-in.log 2>&1 &
stand_in=$!
trap 'kill "$worker" "$stand_in" 2>/dev/null || true' EXIT INT TERM

echo
echo "Celery worker started (log: var/demo-worker.log); stand-in model at http://127.0.0.1:8089/v1."
echo "EquityRate is starting at http://$address/  (Ctrl-C to stop)"
.venv/bin/python manage.py runserver "$address"
