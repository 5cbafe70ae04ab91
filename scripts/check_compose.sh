#!/usr/bin/env bash
# Validate docker-compose.yml without a Docker engine (compose's `config` only parses and resolves it).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v docker-compose >/dev/null 2>&1 && ! docker compose version >/dev/null 2>&1; then
  echo "check_compose: installing Debian's docker-compose to validate the compose file"
  (apt-get update -qq && apt-get install -y -qq docker-compose) >/dev/null
fi
workdir=$(mktemp -d)
trap 'rm -rf "$workdir"' EXIT
cp docker-compose.yml Dockerfile Dockerfile.local-model "$workdir"/
cp .env.example "$workdir/.env"
sed -i "s/^POSTGRES_PASSWORD=.*/POSTGRES_PASSWORD=validation-only/" "$workdir/.env"
if docker compose version >/dev/null 2>&1; then
  (cd "$workdir" && docker compose config --quiet)
else
  (cd "$workdir" && docker-compose config --quiet)
fi
echo "check_compose: docker-compose.yml is valid"
