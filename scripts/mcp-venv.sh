#!/usr/bin/env bash
# Creates (once) a Python virtual environment holding the MCP client SDK from PyPI (`mcp`), used
# by the MCP behaviour tests as a real third-party client of `svc mcp` and of svcd's `/mcp`.
# Idempotent: an existing environment with the pinned version is reused. Prints the path of the
# environment's python on its last line.
#
# Location: $SVC_MCP_VENV, else ~/.cache/svc-mcp-venv.
set -euo pipefail

MCP_VERSION="1.26.0"
venv="${SVC_MCP_VENV:-${HOME}/.cache/svc-mcp-venv}"
py="$venv/bin/python"

if [ -x "$py" ] && "$py" -c "import importlib.metadata as m, sys; sys.exit(m.version('mcp') != '$MCP_VERSION')" 2>/dev/null; then
  echo "$py"
  exit 0
fi

command -v python3 >/dev/null 2>&1 || { echo "python3 is required for the MCP tests" >&2; exit 1; }
if [ ! -x "$py" ]; then
  rm -rf "$venv"
  python3 -m venv "$venv" >&2 || {
    echo "python3 -m venv failed; on Debian install python3-venv (make deps does)" >&2
    exit 1
  }
fi
"$py" -m pip install --quiet --disable-pip-version-check "mcp==$MCP_VERSION" >&2
echo "$py"
