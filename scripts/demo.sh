#!/usr/bin/env bash
# Run EquityRate on the embedded default: SQLite under var/, an embedded file-based Celery broker under
# var/broker with one worker beside the web server (no broker service needed), demo data loaded.
# Usage: scripts/demo.sh [host:port]   (default 127.0.0.1:8000)
# Each step is announced as it starts. Ctrl-C (or TERM) stops the server, the worker and the stand-in within
# a few seconds: each runs in its own process group, which the script ends and waits for.
set -euo pipefail
cd "$(dirname "$0")/.."

address="${1:-127.0.0.1:8000}"
started=$SECONDS
step() { printf 'demo [%3ss] %s\n' "$((SECONDS - started))" "$*"; }

# A child in a process group of its own (setsid where it exists; not on macOS), so that stopping it reaches
# its children too (runserver's autoreloader runs the server in a child) and a terminal's Ctrl-C reaches only
# this script, which then stops everything in order.
spawn() {
  if command -v setsid >/dev/null 2>&1; then setsid "$@" & else "$@" & fi
}
children=()
stop() {
  trap - INT TERM HUP EXIT
  [ "${#children[@]}" -gt 0 ] || return 0
  step "stopping the web server, the worker and the stand-in"
  local pid
  for pid in "${children[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true; done
  # The worker needs 5-7 s to notice TERM and shut down over the filesystem broker, even idle: give everything
  # 3 seconds, then end what is left (a job's questions left in flight are asked again once their lease ends).
  for _ in $(seq 30); do
    local alive=0
    for pid in "${children[@]}"; do kill -0 -- "-$pid" 2>/dev/null || kill -0 "$pid" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && break
    sleep 0.1
  done
  for pid in "${children[@]}"; do kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  step "stopped"
}
trap 'stop; exit 130' INT
trap 'stop; exit 143' TERM HUP
trap stop EXIT

if [ -f .venv/.installed-requirements.txt ]; then
  step "1/7 install: checking .venv's packages (seconds when nothing changed)"
else
  step "1/7 install: the first run installs ~700 MB of packages into .venv: a few minutes on a fast" \
    "connection (about 45 s with pip's cache warm); later runs skip this"
fi
scripts/bootstrap.sh requirements.txt

export DEBUG="${DEBUG:-true}"
unset DATABASE_URL
# kombu's filesystem transport: messages are files, so the web process and the worker share them.
export CELERY_BROKER_URL="filesystem://"
mkdir -p var

step "2/7 migrate: the SQLite database var/db.sqlite3"
.venv/bin/python manage.py migrate --no-input -v 0

# The stand-in model the demo's sources ask (datasets/demo.py, studies/demo_judges.py): no key, no model. Its
# two judges' model names err as studies/demo_judges.JUDGES says (a test checks these flags match it): the
# careful one at 5 %, the group-error one at 10 % and 60 % more for items mentioning a Black patient.
step "3/7 stand-in model at http://127.0.0.1:8089/v1 (log: var/demo-stand-in.log)"
spawn .venv/bin/python scripts/stand_in_llm.py --port 8089 --latency 0.05 \
  --judge-model-error stand-in-careful=0.05 \
  --judge-model-error stand-in-group-error=0.1 --judge-model-group-error stand-in-group-error:Black=0.6 \
  --judge-model-error stand-in-medic-b=0.25 \
  >var/demo-stand-in.log 2>&1
children+=("$!")
sleep 1 # the stand-in's port opens

# Queues the demo judges' calls in the broker; the worker answers them once it starts. The small MEDIC and
# ContextSRH studies run here, stage by stage, on the stand-in started above. seed_demo announces each step.
step "4/7 seeding the demo data and studies (about a minute; output also in var/demo-seed.log)"
.venv/bin/python manage.py seed_demo | tee var/demo-seed.log

# Answer generation waits on HTTP, so the worker uses threads.
step "5/7 Celery worker (log: var/demo-worker.log)"
spawn .venv/bin/celery -A config worker --pool threads --concurrency 8 --loglevel WARNING \
  --without-gossip --without-mingle >var/demo-worker.log 2>&1
children+=("$!")
echo "The two stand-in judges rate the judged study now (a minute or so); its judge page is printed above."

step "6/7 web server at http://$address/"
spawn .venv/bin/python manage.py runserver "$address"
children+=("$!")

step "7/7 started in $((SECONDS - started)) s; the logins (from var/demo-seed.log):"
grep '^login ' var/demo-seed.log || true
echo "EquityRate is at http://$address/  (Ctrl-C to stop)"
# `wait` returns as soon as a signal arrives, so the traps run at once (a foreground child would delay them).
wait "${children[-1]}"
