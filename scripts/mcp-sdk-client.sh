#!/usr/bin/env bash
# The official MCP TypeScript SDK (@modelcontextprotocol/sdk) that tests/tests/mcp_oauth.rs
# drives with tests/mcp_oauth_client/sdk_client.js, installed from npm at a pinned version,
# once per machine. Prints the node_modules directory.
#
# Location: $SVC_MCP_SDK_NODE (else ~/.cache/svc-mcp-sdk-node). Idempotent; concurrent runs
# wait for each other. Exits 3 (with a message) when npm is absent and nothing is installed.
set -euo pipefail

node_dir="${SVC_MCP_SDK_NODE:-${HOME}/.cache/svc-mcp-sdk-node}"
pkg="@modelcontextprotocol/sdk"
version="1.32.2"
installed() {
  [ -f "$node_dir/node_modules/$pkg/package.json" ] &&
    grep -q "\"version\": \"$version\"" "$node_dir/node_modules/$pkg/package.json"
}
if ! installed; then
  command -v npm >/dev/null 2>&1 || { echo "npm is required for the MCP SDK test" >&2; exit 3; }
  mkdir -p "$node_dir"
  exec 8>"$node_dir.lock"
  flock 8
  if ! installed; then
    [ -f "$node_dir/package.json" ] || echo '{"private": true}' >"$node_dir/package.json"
    (cd "$node_dir" && npm install --silent --no-audit --no-fund "$pkg@$version" >&2)
  fi
fi
echo "$node_dir/node_modules"
