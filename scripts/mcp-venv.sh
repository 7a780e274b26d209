#!/usr/bin/env bash
# Creates (once) the Python virtual environment of the tests that drive real third-party Python
# programs: the MCP client SDK (`mcp`, a real client of `svc mcp` and of svcd's `/mcp`) and the
# SMTP server `aiosmtpd` (a real SMTP relay on loopback for the integrations tests), both from
# PyPI at pinned versions.
# Idempotent: an existing environment with the pinned versions is reused; concurrent runs wait
# for each other (one lock per environment). Prints the path of the environment's python on its
# last line.
#
# Location: $SVC_MCP_VENV, else ~/.cache/svc-mcp-venv.
set -euo pipefail

MCP_VERSION="1.26.0"
AIOSMTPD_VERSION="1.4.6"
venv="${SVC_MCP_VENV:-${HOME}/.cache/svc-mcp-venv}"
py="$venv/bin/python"

pinned() {
  [ -x "$py" ] && "$py" -c "
import importlib.metadata as m, sys
want = {'mcp': '$MCP_VERSION', 'aiosmtpd': '$AIOSMTPD_VERSION'}
try:
    sys.exit(any(m.version(p) != v for p, v in want.items()))
except m.PackageNotFoundError:
    sys.exit(1)
" 2>/dev/null
}

if pinned; then
  echo "$py"
  exit 0
fi

command -v python3 >/dev/null 2>&1 || { echo "python3 is required for these tests" >&2; exit 1; }
mkdir -p "$(dirname "$venv")"
# Two test binaries may ask at once (cargo runs test binaries of different crates in parallel
# under some runners): the second waits and then finds the environment ready.
exec 9>"$venv.lock"
flock 9
if pinned; then
  echo "$py"
  exit 0
fi
if [ ! -x "$py" ]; then
  rm -rf "$venv"
  python3 -m venv "$venv" >&2 || {
    echo "python3 -m venv failed; on Debian install python3-venv (make deps does)" >&2
    exit 1
  }
fi
"$py" -m pip install --quiet --disable-pip-version-check \
  "mcp==$MCP_VERSION" "aiosmtpd==$AIOSMTPD_VERSION" >&2
echo "$py"
