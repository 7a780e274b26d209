#!/usr/bin/env bash
# The real Segment-protocol clients the ingestion tests drive (tests/tests/segment.rs), installed
# from the package registries at pinned versions, once per machine:
# - Python: Segment's `segment-analytics-python` and RudderStack's `rudder-sdk-python` in a venv
#   (scripts/pinned-venv.sh);
# - Node: Segment's `@segment/analytics-node` via npm into a cached directory.
# Prints two lines: the venv's python, then the node_modules directory.
#
# Locations: $SVC_SEGMENT_VENV (else ~/.cache/svc-segment-venv), $SVC_SEGMENT_NODE (else
# ~/.cache/svc-segment-node). Idempotent; concurrent runs wait for each other.
set -euo pipefail

python=$("$(dirname "$0")/pinned-venv.sh" "${SVC_SEGMENT_VENV:-${HOME}/.cache/svc-segment-venv}" bin/python \
  "segment-analytics-python==2.4.0" "rudder-sdk-python==2.1.9" | tail -n 1)

node_dir="${SVC_SEGMENT_NODE:-${HOME}/.cache/svc-segment-node}"
node_pkg="@segment/analytics-node"
node_version="3.1.0"
installed() {
  [ -f "$node_dir/node_modules/$node_pkg/package.json" ] &&
    grep -q "\"version\": \"$node_version\"" "$node_dir/node_modules/$node_pkg/package.json"
}
if ! installed; then
  command -v npm >/dev/null 2>&1 || { echo "npm is required for the Node client test" >&2; exit 1; }
  mkdir -p "$node_dir"
  exec 8>"$node_dir.lock"
  flock 8
  if ! installed; then
    [ -f "$node_dir/package.json" ] || echo '{"private": true}' >"$node_dir/package.json"
    (cd "$node_dir" && npm install --silent --no-audit --no-fund "$node_pkg@$node_version" >&2)
  fi
fi
echo "$python"
echo "$node_dir/node_modules"
