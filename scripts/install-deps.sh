#!/usr/bin/env bash
# Installs what a fresh Debian machine with only the Rust toolchain lacks, and nothing twice.
# - libclang-dev: RocksDB's Rust bindings are generated with bindgen, which loads libclang.
# - python3-venv (when python3 cannot make virtualenvs): the MCP tests install the Python MCP
#   client from PyPI into one (scripts/mcp-venv.sh).
# - chromium + chromium-driver: the dashboard's browser tests (tests/tests/dashboard.rs) drive a
#   headless Chromium through WebDriver.
set -euo pipefail

need_apt=()
dpkg -s libclang-dev >/dev/null 2>&1 || need_apt+=(libclang-dev)
dpkg -s chromium >/dev/null 2>&1 || need_apt+=(chromium)
dpkg -s chromium-driver >/dev/null 2>&1 || need_apt+=(chromium-driver)
if command -v python3 >/dev/null 2>&1 && ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
  dpkg -s python3-venv >/dev/null 2>&1 || need_apt+=(python3-venv)
fi

if [ ${#need_apt[@]} -gt 0 ]; then
  echo "installing system packages: ${need_apt[*]}"
  if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq || true
  $sudo apt-get install -y -qq --no-install-recommends "${need_apt[@]}"
fi

command -v python3 >/dev/null 2>&1 || { echo "python3 is required by the tests (workload generator)"; exit 1; }
