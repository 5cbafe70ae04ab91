#!/usr/bin/env bash
# Make sure PostgreSQL (127.0.0.1:5432) and Redis (127.0.0.1:6379) answer; start them when they do not.
set -uo pipefail

pg_up() { pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null || (exec 3<>/dev/tcp/127.0.0.1/5432) 2>/dev/null; }
redis_up() { [ "$(redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null)" = "PONG" ]; }

wait_for() {
  local name="$1" check="$2"
  for _ in $(seq 1 30); do
    "$check" && return 0
    sleep 1
  done
  echo "services: $name is not reachable" >&2
  return 1
}

if ! pg_up; then
  echo "services: starting PostgreSQL"
  if command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ]; then
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n 1)" main start || true
  fi
fi
if ! redis_up; then
  echo "services: starting Redis"
  if command -v redis-server >/dev/null 2>&1; then
    mkdir -p /var/lib/redis /var/log/redis 2>/dev/null || true
    redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
      --dir /var/lib/redis --logfile /var/log/redis/ci.log || true
  fi
fi

status=0
wait_for "PostgreSQL on 127.0.0.1:5432 (install and start it, or set TEST_DATABASE_URL)" pg_up || status=1
wait_for "Redis on 127.0.0.1:6379 (install and start it, or set TEST_CELERY_BROKER_URL)" redis_up || status=1
exit $status
