#!/usr/bin/env bash
# Runs every cargo-fuzz target of fuzz/ for SECONDS (first argument, default 60) each, on the
# stable toolchain without a sanitizer. `make test` calls it with a short bound so the parser's
# hostile-size checks (issue 29) run on every CI build; `make fuzz` is the long form.
# New inputs go to a scratch directory, so the committed seed corpus never changes; a crash
# leaves its input in fuzz/artifacts/<target>/ (copy it into fuzz/corpus/<target>/ to make it a
# regression case of query/tests/fuzz_corpus.rs). FUZZ_SEED repeats a run; it is drawn per run
# otherwise and printed.
set -euo pipefail
seconds=${1:-60}
cd "$(dirname "$0")/../fuzz"
cargo=${CARGO:-cargo}
command -v cargo-fuzz >/dev/null 2>&1 || $cargo install cargo-fuzz --locked
seed=${FUZZ_SEED:-$(( (RANDOM << 15 | RANDOM) + 1 ))}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
echo "fuzz: ${seconds}s per target, seed $seed (FUZZ_SEED=$seed repeats it)"
for target in $($cargo fuzz list); do
  mkdir -p "$scratch/$target"
  log="$scratch/$target.log"
  if $cargo fuzz run "$target" --sanitizer none "$scratch/$target" "corpus/$target" -- \
      -max_total_time="$seconds" -seed="$seed" -print_final_stats=1 >"$log" 2>&1; then
    echo "fuzz: $target: $(grep -E '^Done [0-9]+ runs' "$log" | tail -1)"
  else
    tail -n 60 "$log"
    echo "fuzz: $target FAILED (seed $seed); the input is in fuzz/artifacts/$target/"
    exit 1
  fi
done
