#!/usr/bin/env bash
# axe-core, the accessibility engine the dashboard's browser tests inject into every page
# (tests/tests/accessibility.rs), installed from npm at a pinned version once per machine.
# Prints the path of axe.min.js.
#
# Location: $SVC_AXE_NODE (else ~/.cache/svc-axe-node). Idempotent; concurrent runs wait for
# each other.
set -euo pipefail

dir="${SVC_AXE_NODE:-${HOME}/.cache/svc-axe-node}"
pkg="axe-core"
version="4.14.1"
script="$dir/node_modules/$pkg/axe.min.js"
installed() {
  [ -f "$script" ] && [ -f "$dir/node_modules/$pkg/package.json" ] &&
    grep -q "\"version\": \"$version\"" "$dir/node_modules/$pkg/package.json"
}
if ! installed; then
  command -v npm >/dev/null 2>&1 || { echo "npm is required for the accessibility test" >&2; exit 1; }
  mkdir -p "$dir"
  exec 8>"$dir.lock"
  flock 8
  if ! installed; then
    [ -f "$dir/package.json" ] || echo '{"private": true}' >"$dir/package.json"
    (cd "$dir" && npm install --silent --no-audit --no-fund "$pkg@$version" >&2)
  fi
fi
echo "$script"
