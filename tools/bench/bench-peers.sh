#!/usr/bin/env bash
# The peer benchmark of issue 25 in one command (`make bench-peers`): every query of
# benches/corpus/queries.txt on our engine (embedded, read model prepared), then on Kuzu and
# FalkorDB, in one window on the same seed; checks that the answers match and writes the table.
#
# Output (docs/bench-results/, dated): <date>-corpus-ours.jsonl / -ours.txt and
# -ours-again.jsonl / .txt (our answers, timings, stderr; before and after the peers), -peers.jsonl / -peers.txt / -peers-meta.json (the same for the peers,
# versions, load averages), -table.md (the comparison); the table also replaces the section
# between the peers-table markers of docs/benchmarks.md.
#
# Environment: SVC_BENCH_DATA (seed directory, as benches/src/seed.rs: default <tmp>/svc-bench-data,
# generated with tools/bench/gen.py's defaults when missing), CARGO_TARGET_DIR, CARGO,
# SVC_BENCH_FILTER (only queries whose name contains it), SVC_BENCH_NO_DOC=1 (leave
# docs/benchmarks.md alone), SVC_BENCH_CORPUS (another corpus file, relative to the repository,
# e.g. benches/corpus/holdout.txt: its table goes to docs/bench-results/ only).
set -euo pipefail
cd "$(dirname "$0")/../.."
CARGO=${CARGO:-cargo}
DATA=${SVC_BENCH_DATA:-${TMPDIR:-/tmp}/svc-bench-data}
FILTER=${SVC_BENCH_FILTER:-}
STAMP=$(date -u +%Y-%m-%d-%H%M)
OUT=docs/bench-results/$STAMP-corpus
if [ -n "${SVC_BENCH_CORPUS:-}" ]; then
  OUT=docs/bench-results/$STAMP-$(basename "$SVC_BENCH_CORPUS" .txt)
  export SVC_BENCH_CORPUS
fi
TARGET=${CARGO_TARGET_DIR:-target}

PY=$(tools/bench/peers-venv.sh | tail -1)
if [ ! -f "$DATA/seed/touchpoints.csv" ]; then
  python3 tools/bench/gen.py --out "$DATA"
fi
# The build of the existing seeded benches: workspace crates at opt-level 3, dependencies at 2.
CARGO_PROFILE_DEV_OPT_LEVEL=3 $CARGO build --profile dev -p svc-benches --example corpus

# Ours runs before and after the peers (the machine's load drifts): the table takes the slower.
ours() {
  local out=$1
  {
    echo "commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- engine query benches || echo ' (with local changes)')"
    echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
    echo "load average before ours: $(cut -d' ' -f1-3 /proc/loadavg)"
  } > "$out.txt"
  SVC_BENCH_DATA="$DATA" "$TARGET/debug/examples/corpus" "$out.jsonl" "$FILTER" 2>> "$out.txt"
  echo "load average after ours: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out.txt"
  cat "$out.txt"
}
ours "$OUT-ours"

"$PY" tools/bench/peers.py --data "$DATA" --out "$OUT-peers.jsonl" --meta "$OUT-peers-meta.json" \
  --filter "$FILTER" 2> "$OUT-peers.txt"
cat "$OUT-peers.txt"

ours "$OUT-ours-again"

DOC=(--update-doc docs/benchmarks.md)
if [ -n "$FILTER" ] || [ "${SVC_BENCH_NO_DOC:-}" = 1 ] || [ -n "${SVC_BENCH_CORPUS:-}" ]; then DOC=(); fi
python3 tools/bench/compare.py "$OUT-ours.jsonl" "$OUT-peers.jsonl" --meta "$OUT-peers-meta.json" \
  --ours-again "$OUT-ours-again.jsonl" --ours-log "$OUT-ours.txt" --ours-log "$OUT-ours-again.txt" \
  --markdown "$OUT-table.md" "${DOC[@]}" \
  --title "Run of $STAMP UTC, commit $(git rev-parse --short HEAD); raw output: \`$OUT-*\`."
