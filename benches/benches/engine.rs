//! Engine benchmarks: durable identity-resolved event recording with 1 and 8 writers, and the
//! point reads the query engine leans on (customer by email, label count, neighbour expansion).

use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use svc_benches::{build_read_graph, email_of, ingest, Scale};
use svc_engine::{Direction, Graph, GraphOptions, GraphRead, IdentityKeys, Value, WorkspaceId};

const WS: WorkspaceId = WorkspaceId(1);

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
            |b| b.iter_custom(|iters| ingest(&graph, WS, writers, per_call, iters, &counter)),
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
