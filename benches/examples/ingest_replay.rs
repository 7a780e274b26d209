//! Replays `tools/bench` events.jsonl through `Graph::record_events` into a fresh store at
//! W writers x E events per call, prints events/s and the CPU per event of the engine's
//! threads, then checks that the customers are exactly the reference resolver's (exit code 1
//! when not). How the stream is split over writers without changing identity resolution:
//! `svc_benches::replay`.
//!
//! ```text
//! python3 tools/bench/gen.py --out /tmp/benchdata
//! python3 tools/bench/ref_resolve.py /tmp/benchdata/events.jsonl \
//!     --customers /tmp/benchdata/customers.jsonl
//! ingest_replay /tmp/benchdata <writers> <events_per_call> [max_group_writes] [write_buffer_mb]
//! ```
//!
//! With `SVC_REPLAY_READ_MODEL=1` the workspace has an in-memory read model from the start and
//! a reader asks it for a count every 100 ms during the replay (a dashboard open on the
//! workspace), so the figures include the commit hook and the model's background rebuilds.
//! With `SVC_REPLAY_DECLARED_INDEX=1` the workspace has a declared equality index on
//! `Touchpoint.action` (ONLINE before the first event), so the figures include its upkeep.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use svc_benches::engine_thread_ticks;
use svc_benches::replay::{compare, customer_lines, load_events, partition, replay};
use svc_engine::catalog::IndexSpec;
use svc_engine::{
    Comparison, Graph, GraphOptions, GraphRead, IndexKind, PropertyTest, Value, WorkspaceId,
};

/// utime + stime of the whole process (clock ticks, 100 per second).
fn process_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = stat.rsplit_once(") ").map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let t = |i: usize| {
        f.get(i - 3)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    t(14) + t(15)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = args.get(1).map_or("/tmp/benchdata", String::as_str);
    let num = |i: usize, d: usize| args.get(i).map_or(d, |a| a.parse().expect("a number"));
    let (writers, per_call) = (num(2, 8), num(3, 64));

    let t = Instant::now();
    let events = load_events(&format!("{dir}/events.jsonl")).expect("events.jsonl");
    let reference =
        std::fs::read_to_string(format!("{dir}/customers.jsonl")).expect("customers.jsonl");
    let streams = partition(&events, writers);
    let sizes: Vec<usize> = streams.iter().map(Vec::len).collect();
    println!(
        "loaded {} events in {:.1}s; streams {sizes:?}",
        events.len(),
        t.elapsed().as_secs_f64()
    );

    let store = tempfile::tempdir().expect("tempdir");
    let mut options = GraphOptions::default();
    if let Some(w) = args.get(4) {
        options.max_group_writes = w.parse().expect("a number");
    }
    if let Some(mb) = args.get(5) {
        options.store.write_buffer_bytes = mb.parse::<usize>().expect("a number") << 20;
    }
    let graph = Graph::open(store.path(), options).expect("open");
    let ws = WorkspaceId(1);
    if std::env::var("SVC_REPLAY_DECLARED_INDEX").is_ok_and(|v| v == "1") {
        let spec = IndexSpec {
            name: None,
            label: "Touchpoint".into(),
            property: "action".into(),
            kind: IndexKind::Equality,
            if_not_exists: false,
        };
        graph.declare_index(ws, spec).expect("declare");
        while graph.build_indexes_step(1_000).expect("build") {}
        println!("with a declared index on Touchpoint.action");
    }
    let with_model = std::env::var("SVC_REPLAY_READ_MODEL").is_ok_and(|v| v == "1");
    let replaying = AtomicBool::new(true);
    let cpu_before = process_ticks();
    let (elapsed, outcomes, reads) = std::thread::scope(|scope| {
        let reader = with_model.then(|| {
            graph.prepare_read_model(ws).expect("read model");
            scope.spawn(|| dashboard_reads(&graph, ws, &replaying))
        });
        let (elapsed, outcomes) = replay(&graph, ws, streams, per_call);
        replaying.store(false, Ordering::Relaxed);
        let reads = reader.map(|r| r.join().expect("reader"));
        (elapsed, outcomes, reads)
    });
    let cpu = process_ticks() - cpu_before;
    if let Some((n, from_model)) = reads {
        println!("with a read model: {n} counts during the replay, {from_model} from the model");
    }
    let failed = outcomes.iter().filter(|(_, r)| r.is_err()).count();
    let n = outcomes.len() as f64;
    println!(
        "writers={writers} events_per_call={per_call}: {} events in {:.2}s = {:.0} events/s \
         ({failed} failed)",
        outcomes.len(),
        elapsed.as_secs_f64(),
        n / elapsed.as_secs_f64()
    );
    println!(
        "  process: {:.1} µs CPU per event",
        cpu as f64 / 100.0 * 1e6 / n
    );
    for (name, ticks) in engine_thread_ticks() {
        println!(
            "  {name}: {:.1} µs CPU per event",
            ticks as f64 / 100.0 * 1e6 / n
        );
    }

    let ours = customer_lines(&graph, ws, &outcomes).expect("read customers back");
    let (bad, shown) = compare(&ours, &reference, 5);
    let snap = graph.snapshot(ws);
    let count = |l: &str| snap.label_count(l).expect("count");
    println!(
        "customers {} (reference {}), touchpoints {}, campaigns {}; {}",
        ours.len(),
        reference.lines().count(),
        count("Touchpoint"),
        count("Campaign"),
        if bad == 0 {
            "every customer equals the reference (identity keys, touchpoints, lastSeen, order)"
                .to_owned()
        } else {
            format!("{bad} customers differ from the reference")
        }
    );
    for s in &shown {
        println!("{s}");
    }
    if bad != 0 || failed != 0 {
        std::process::exit(1);
    }
}

/// A dashboard on the workspace: a count every 100 ms while the replay runs; returns how many
/// ran and how many the read model answered.
fn dashboard_reads(graph: &Graph, ws: WorkspaceId, replaying: &AtomicBool) -> (u64, u64) {
    let purchases = [PropertyTest {
        key: "action".into(),
        op: Comparison::Eq,
        value: Value::String("purchase".into()),
    }];
    let (mut n, mut from_model) = (0, 0);
    while replaying.load(Ordering::Relaxed) {
        let snap = graph.snapshot(ws);
        if snap
            .count_label_where("Touchpoint", &purchases)
            .expect("count")
            .is_some()
        {
            from_model += 1;
        }
        n += 1;
        drop(snap);
        std::thread::sleep(Duration::from_millis(100));
    }
    (n, from_model)
}
