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

mkdir -p var
# The stand-in model the demo's sources ask (datasets/demo.py, studies/demo_judges.py): no key, no model. Its
# two judges' model names err as studies/demo_judges.JUDGES says (a test checks these flags match it): the
# careful one at 5 %, the group-error one at 10 % and 60 % more for items mentioning a Black patient.
.venv/bin/python scripts/stand_in_llm.py --port 8089 --latency 0.05 \
  --judge-model-error stand-in-careful=0.05 \
  --judge-model-error stand-in-group-error=0.1 --judge-model-group-error stand-in-group-error:Black=0.6 \
  --judge-model-error stand-in-medic-b=0.25 \
  >var/demo-stand-in.log 2>&1 &
stand_in=$!
worker=""
trap 'kill $worker "$stand_in" 2>/dev/null || true' EXIT INT TERM

.venv/bin/python manage.py migrate --no-input -v 0
# Queues the demo judges' calls in the broker; the worker answers them once it starts. The small MEDIC study
# (studies/demo_medic.py) runs here, stage by stage, on the stand-in started above (~half a minute).
sleep 1  # the stand-in's port opens
.venv/bin/python manage.py seed_demo

# Answer generation waits on HTTP, so the worker uses threads.
.venv/bin/celery -A config worker --pool threads --concurrency 8 --loglevel WARNING \
  --without-gossip --without-mingle >var/demo-worker.log 2>&1 &
worker=$!

echo
echo "Celery worker started (log: var/demo-worker.log); stand-in model at http://127.0.0.1:8089/v1."
echo "The two stand-in judges rate the judged study now (a minute or so); its judge page is printed above."
echo "EquityRate is starting at http://$address/  (Ctrl-C to stop)"
.venv/bin/python manage.py runserver "$address"
