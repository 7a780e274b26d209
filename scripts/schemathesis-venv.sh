#!/usr/bin/env bash
# The Python environment of the OpenAPI contract test: schemathesis at a pinned version.
# Prints the path of the `schemathesis` executable on its last line.
#
# Location: $SVC_SCHEMATHESIS_VENV, else ~/.cache/svc-schemathesis-venv.
set -euo pipefail

exec "$(dirname "$0")/pinned-venv.sh" \
  "${SVC_SCHEMATHESIS_VENV:-${HOME}/.cache/svc-schemathesis-venv}" bin/schemathesis \
  "schemathesis==4.32.5"
