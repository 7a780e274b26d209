#!/usr/bin/env bash
# Builds the release binaries and writes what ships into dist/: `svcd` and `svc` without debug
# information, and beside each its line tables (`svcd.debug`, `svc.debug`), which the binary
# names through a .gnu_debuglink so gdb, addr2line and perf find them when they sit next to it.
# The symbol table stays, so a panic's backtrace still names functions without the .debug file.
set -euo pipefail
cd "$(dirname "$0")/.."
CARGO=${CARGO:-cargo}
"$CARGO" build --release -p svc-server --bin svcd -p svc-cli --bin svc
target=$("$CARGO" metadata --format-version 1 --no-deps |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
mkdir -p dist
cd dist
for bin in svcd svc; do
  cp "$target/release/$bin" "$bin"
  objcopy --only-keep-debug "$bin" "$bin.debug"
  objcopy --strip-debug --add-gnu-debuglink="$bin.debug" "$bin"
  chmod 0755 "$bin"
  chmod 0644 "$bin.debug"
done
ls -l svcd svcd.debug svc svc.debug
