# The two commands a newcomer needs are `make run` and `make test`; both install what is
# missing first. See README.md.

CARGO ?= cargo
FUZZ_SECONDS ?= 60
FUZZ_CI_SECONDS ?= 15

.PHONY: deps run dist test lint bench bench-peers fuzz soak

deps:
	@./scripts/install-deps.sh

## Build and start the server on the embedded default data directory (./data).
run: deps
	$(CARGO) run --release -p svc-server --bin svcd -- serve

## The release binaries as shipped: dist/svcd and dist/svc without debug information, their
## line tables beside them in dist/*.debug (scripts/dist.sh).
dist: deps
	CARGO=$(CARGO) ./scripts/dist.sh

## Every test of the workspace, each fuzz target for FUZZ_CI_SECONDS, formatting and lints.
test: deps
	./scripts/prune-target.sh
	$(CARGO) test --workspace
	CARGO=$(CARGO) ./scripts/fuzz.sh $(FUZZ_CI_SECONDS)
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

lint: deps
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

## Criterion benchmarks (engine, query, service).
bench: deps
	$(CARGO) bench -p svc-benches

## Each fuzz target for FUZZ_SECONDS, on the stable toolchain (no sanitizer).
fuzz: deps
	CARGO=$(CARGO) ./scripts/fuzz.sh $(FUZZ_SECONDS)

## Long forms of the bounded tests: the SIGKILL durability harness with 20 kill cycles.
soak: deps
	SVC_SIGKILL_CYCLES=20 $(CARGO) test -p svc-server --test sigkill_durability -- --nocapture

## The read-query corpus on our engine, Kuzu and FalkorDB in one window (issue 25): answers
## checked against each other, table into docs/benchmarks.md, raw output in docs/bench-results/.
## Installs the peers' venv on first use (tools/bench/peers-venv.sh).
bench-peers: deps
	CARGO=$(CARGO) ./tools/bench/bench-peers.sh
