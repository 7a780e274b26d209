#!/usr/bin/env bash
# Creates (once) the Python virtual environment of the OpenAPI contract test: schemathesis from
# PyPI at a pinned version, in its own environment (its dependencies must not move the MCP
# client's). Idempotent; concurrent runs wait for each other. Prints the path of the
# `schemathesis` executable on its last line.
#
# Location: $SVC_SCHEMATHESIS_VENV, else ~/.cache/svc-schemathesis-venv.
set -euo pipefail

SCHEMATHESIS_VERSION="4.32.5"
venv="${SVC_SCHEMATHESIS_VENV:-${HOME}/.cache/svc-schemathesis-venv}"
py="$venv/bin/python"
exe="$venv/bin/schemathesis"

pinned() {
  [ -x "$exe" ] && "$py" -c "
import importlib.metadata as m, sys
sys.exit(m.version('schemathesis') != '$SCHEMATHESIS_VERSION')
" 2>/dev/null
}

if pinned; then
  echo "$exe"
  exit 0
fi

command -v python3 >/dev/null 2>&1 || { echo "python3 is required for this test" >&2; exit 1; }
mkdir -p "$(dirname "$venv")"
exec 9>"$venv.lock"
flock 9
if pinned; then
  echo "$exe"
  exit 0
fi
if [ ! -x "$py" ]; then
  rm -rf "$venv"
  python3 -m venv "$venv" >&2 || {
    echo "python3 -m venv failed; on Debian install python3-venv (make deps does)" >&2
    exit 1
  }
fi
"$py" -m pip install --quiet --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION" >&2
echo "$exe"
