#!/usr/bin/env bash
# Keeps a long-lived cargo target directory from filling the disk, without cleaning it.
#
# Every change to a crate links its test binaries and examples again under a new hash
# (about 130 MB each for the server's tests), and cargo never deletes the old ones. This keeps
# the newest file of each name in deps/ and examples/ and deletes the older copies, which no
# build reads again. When the disk is still short of MIN_FREE_GB, it also drops the incremental
# caches (they only speed up rebuilding a changed crate). Compiled libraries are never touched,
# so RocksDB is not rebuilt.
set -euo pipefail

target="${CARGO_TARGET_DIR:-target}"
min_free_gb="${MIN_FREE_GB:-20}"
[ -d "$target" ] || exit 0

freed=0
for dir in "$target"/*/deps "$target"/*/examples "$target"/*/*/deps "$target"/*/*/examples; do
  [ -d "$dir" ] || continue
  # Executables only: name-<16 hex>, no extension. Newest first, so the first of a stem stays.
  while IFS= read -r path; do
    size=$(stat -c %s "$path")
    rm -f -- "$path" "${path}.d"
    freed=$((freed + size))
  done < <(find "$dir" -maxdepth 1 -type f -perm -u+x -regextype posix-extended \
             -regex '.*/[A-Za-z0-9_]+-[0-9a-f]{16}' -printf '%T@ %p\n' \
           | sort -rn | awk '{ path = $2; stem = path; sub(/-[0-9a-f]+$/, "", stem);
                               if (seen[stem]++) print path }')
done

free_kb=$(df -Pk "$target" | awk 'NR == 2 { print $4 }')
if [ "$free_kb" -lt $((min_free_gb * 1024 * 1024)) ]; then
  for inc in "$target"/*/incremental; do
    [ -d "$inc" ] || continue
    size=$(du -sk "$inc" | awk '{ print $1 * 1024 }')
    rm -rf -- "$inc"
    freed=$((freed + size))
  done
fi

if [ "$freed" -gt 0 ]; then
  echo "prune-target: freed $((freed / 1024 / 1024)) MB of superseded build outputs in $target"
fi
free_kb=$(df -Pk "$target" | awk 'NR == 2 { print $4 }')
if [ "$free_kb" -lt $((min_free_gb * 1024 * 1024)) ]; then
  echo "prune-target: warning: only $((free_kb / 1024 / 1024)) GB free for $target" >&2
fi
