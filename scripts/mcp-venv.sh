#!/usr/bin/env bash
# The Python environment of the tests that drive real third-party Python programs: the MCP
# client SDK (`mcp`, a real client of `svc mcp` and of svcd's `/mcp`) and the SMTP server
# `aiosmtpd` (a real SMTP relay on loopback for the integrations tests), at pinned versions.
# Prints the path of the environment's python on its last line.
#
# Location: $SVC_MCP_VENV, else ~/.cache/svc-mcp-venv.
set -euo pipefail

exec "$(dirname "$0")/pinned-venv.sh" "${SVC_MCP_VENV:-${HOME}/.cache/svc-mcp-venv}" bin/python \
  "mcp==1.26.0" "aiosmtpd==1.4.6"
