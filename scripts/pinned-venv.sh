#!/usr/bin/env bash
# Creates (once) a Python virtual environment holding exact versions of PyPI packages, for the
# tests that drive real third-party Python programs. Used by mcp-venv.sh and
# schemathesis-venv.sh; each keeps its own environment so one's dependencies never move the
# other's.
#
# Usage: pinned-venv.sh <venv dir> <program to print, relative to the venv> <name==version>...
# Idempotent: an environment that already has every pinned version is reused; concurrent runs
# wait for each other (one lock per environment: cargo may run two test binaries that ask at
# once). Prints the path of the program on its last line.
set -euo pipefail

venv="$1"
program="$venv/$2"
shift 2
py="$venv/bin/python"

pinned() {
  [ -x "$py" ] && [ -x "$program" ] && "$py" - "$@" <<'PY' 2>/dev/null
import importlib.metadata as m, sys
try:
    sys.exit(any(m.version(n) != v for n, v in (a.split("==") for a in sys.argv[1:])))
except m.PackageNotFoundError:
    sys.exit(1)
PY
}

if pinned "$@"; then
  echo "$program"
  exit 0
fi

command -v python3 >/dev/null 2>&1 || { echo "python3 is required for these tests" >&2; exit 1; }
mkdir -p "$(dirname "$venv")"
exec 9>"$venv.lock"
flock 9
if pinned "$@"; then
  echo "$program"
  exit 0
fi
if [ ! -x "$py" ]; then
  rm -rf "$venv"
  python3 -m venv "$venv" >&2 || {
    echo "python3 -m venv failed; on Debian install python3-venv (make deps does)" >&2
    exit 1
  }
fi
"$py" -m pip install --quiet --disable-pip-version-check "$@" >&2
echo "$program"
