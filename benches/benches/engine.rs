//! Engine benchmarks: durable identity-resolved event recording with 1 and 8 writers, and the
//! point reads the query engine leans on (customer by email, label count, neighbour expansion).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use svc_benches::{build_read_graph, email_of, Scale, START_US};
use svc_engine::{
    Direction, EventInput, Graph, GraphOptions, GraphRead, IdentityKeys, Value, WorkspaceId,
};

const WS: WorkspaceId = WorkspaceId(1);

/// An event for one of `pool` people (so some create customers and most match one).
fn event(i: usize, pool: usize) -> EventInput {
    let who = (i.wrapping_mul(2_654_435_761)) % pool;
    EventInput {
        keys: IdentityKeys {
            email: Some(format!("person{who}@ingest.test")),
            ..Default::default()
        },
        action: "page_viewed".into(),
        channel: Some("web".into()),
        ts: START_US + i as i64 * 1_000,
        campaign_id: (i % 3 == 0).then(|| format!("cmp-{}", i % 50)),
        ..Default::default()
    }
}

/// Records `total` events from `writers` threads, each call carrying `per_call` events;
/// returns the elapsed time.
fn ingest(
    graph: &Graph,
    writers: usize,
    per_call: usize,
    total: u64,
    counter: &Arc<AtomicUsize>,
) -> Duration {
    let start = Instant::now();
    let per_writer = (total as usize).div_ceil(writers);
    let handles: Vec<_> = (0..writers)
        .map(|_| {
            let (graph, counter) = (graph.clone(), Arc::clone(counter));
            std::thread::spawn(move || {
                let mut done = 0;
                while done < per_writer {
                    let n = per_call.min(per_writer - done);
                    let base = counter.fetch_add(n, Ordering::Relaxed);
                    if n == 1 {
                        graph.record_event(WS, event(base, 50_000)).expect("record");
                    } else {
                        let batch = (base..base + n).map(|i| event(i, 50_000)).collect();
                        for r in graph.record_events(WS, batch).expect("batch") {
                            r.expect("record");
                        }
                    }
                    done += n;
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("writer");
    }
    start.elapsed()
}

fn bench_ingest(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let graph = Graph::open(dir.path(), GraphOptions::default()).expect("open");
    let counter = Arc::new(AtomicUsize::new(0));
    let mut group = c.benchmark_group("ingest_durable");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(8))
        .warm_up_time(Duration::from_secs(1));
    group.throughput(Throughput::Elements(1));
    for (writers, per_call) in [(1, 1), (8, 1), (64, 1), (1, 64), (8, 64)] {
        group.bench_function(
            BenchmarkId::new(
                format!("writers_{writers}"),
                format!("events_per_call_{per_call}"),
            ),
            |b| b.iter_custom(|iters| ingest(&graph, writers, per_call, iters, &counter)),
        );
    }
    group.finish();
    assert!(graph.validate().expect("validate").is_ok());
}

fn bench_reads(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let graph = Graph::open(dir.path(), GraphOptions::default()).expect("open");
    let built = build_read_graph(&graph, WS, Scale::FULL, 42).expect("build graph");
    let snap = graph.snapshot(WS);
    let mut group = c.benchmark_group("reads");
    let mut i = 0usize;
    group.bench_function("customer_by_email", |b| {
        b.iter(|| {
            i = (i + 7919) % Scale::FULL.customers;
            let email = Value::String(email_of(i));
            let ids = snap
                .index_seek("Customer", "email", &email)
                .expect("seek")
                .expect("indexed");
            snap.node(ids[0]).expect("read").expect("node")
        })
    });
    group.bench_function("customer_by_identity", |b| {
        b.iter(|| {
            i = (i + 7919) % Scale::FULL.customers;
            let keys = IdentityKeys {
                email: Some(email_of(i)),
                ..Default::default()
            };
            snap.find_customer(&keys).expect("lookup").expect("found")
        })
    });
    group.bench_function("label_count_touchpoint", |b| {
        b.iter(|| snap.label_count("Touchpoint").expect("count"))
    });
    group.bench_function("expand_100_touchpoints", |b| {
        b.iter(|| {
            let n = snap
                .adjacent(built.hub, Direction::Outgoing, Some("HAS_TOUCHPOINT"))
                .expect("adjacent");
            assert_eq!(n.len(), 100);
            n
        })
    });
    group.bench_function("snapshot_take", |b| {
        b.iter(|| graph.snapshot(WS).workspace_id())
    });
    group.finish();
}

criterion_group!(benches, bench_ingest, bench_reads);
criterion_main!(benches);
