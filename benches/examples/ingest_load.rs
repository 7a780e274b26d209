//! A plain load run of durable event recording, for profiling and quick figures outside
//! criterion: `cargo run --release -p svc-benches --example ingest_load -- <writers>
//! <events_per_call> <seconds> [max_group_writes]` prints events/s.

use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::{Duration, Instant};

use svc_benches::{engine_thread_ticks, ingest};
use svc_engine::{Graph, GraphOptions, WorkspaceId};

fn arg(i: usize, default: u64) -> u64 {
    std::env::args()
        .nth(i)
        .map(|a| a.parse().expect("a number"))
        .unwrap_or(default)
}

fn main() {
    let (writers, per_call, secs) = (arg(1, 8) as usize, arg(2, 64) as usize, arg(3, 10));
    let dir = tempfile::tempdir().expect("tempdir");
    let mut options = GraphOptions::default();
    if let Some(w) = std::env::args().nth(4) {
        options.max_group_writes = w.parse().expect("a number");
    }
    let graph = Graph::open(dir.path(), options).expect("open");
    let counter = Arc::new(AtomicUsize::new(0));
    // Warm up (memtables, caches), then measure rounds of 20,000 events until `secs` pass.
    ingest(&graph, WorkspaceId(1), writers, per_call, 20_000, &counter);
    let (start, mut events, mut busy) = (Instant::now(), 0u64, Duration::ZERO);
    while start.elapsed() < Duration::from_secs(secs) {
        busy += ingest(&graph, WorkspaceId(1), writers, per_call, 20_000, &counter);
        events += 20_000;
    }
    println!(
        "writers={writers} events_per_call={per_call}: {events} events in {:.2}s = {:.0} events/s",
        busy.as_secs_f64(),
        events as f64 / busy.as_secs_f64()
    );
    // CPU per event of the engine's own threads: the figure that holds when the machine is
    // shared (wall-clock throughput then depends on who else runs).
    for (name, ticks) in engine_thread_ticks() {
        let secs = ticks as f64 / 100.0;
        println!(
            "  {name}: {:.1} µs CPU per event",
            secs * 1e6 / (events + 20_000) as f64
        );
    }
}
