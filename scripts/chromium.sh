#!/usr/bin/env bash
# The browser tests drive Debian's Chromium through Playwright (never Playwright's own browser download).
set -euo pipefail
if [ -x "${CHROMIUM_PATH:-/usr/bin/chromium}" ]; then
  exit 0
fi
if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  echo "chromium: installing Debian's chromium for the browser tests"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null
else
  echo "chromium: Chromium is missing; install Debian's 'chromium' package (or set CHROMIUM_PATH)" >&2
  exit 1
fi
