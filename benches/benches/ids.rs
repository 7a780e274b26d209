//! The Cypher id codec (issue 29): one encode and one decode of a node id under the keyed
//! codec (the service's) and the identity (embedders, the TCK), and `RETURN id(n)` over 10,000
//! nodes under each, of the in-memory graph and of the store (a snapshot with its read model,
//! as the service reads; also `RETURN n`), so the per-row share of the codec shows.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use svc_engine::{Graph, GraphOptions, NodeId, WorkspaceId};
use svc_query::model::ModelGraph;
use svc_query::{parse, run_read, run_write, IdCodec, Limits, Params};

fn codec(c: &mut Criterion) {
    let keyed = IdCodec::keyed(*b"bench-cypher-ids");
    let mut group = c.benchmark_group("ids");
    let mut n = 0u64;
    group.bench_function("encode_keyed", |b| {
        b.iter(|| {
            n = n.wrapping_add(1);
            black_box(keyed.node(NodeId(black_box(n))))
        })
    });
    let mut shown = 0i64;
    group.bench_function("decode_keyed", |b| {
        b.iter(|| {
            shown = shown.wrapping_add(1);
            black_box(keyed.node_id(black_box(shown)))
        })
    });
    let identity = IdCodec::identity();
    group.bench_function("encode_identity", |b| {
        b.iter(|| {
            n = n.wrapping_add(1);
            black_box(identity.node(NodeId(black_box(n))))
        })
    });

    let mut g = ModelGraph::new();
    let create = parse("UNWIND range(1, 10000) AS i CREATE (:N {i: i})").expect("parse");
    let big = Limits {
        max_rows: 20_000,
        ..Limits::default()
    };
    run_write(&mut g, &create, &Params::new(), &big).expect("create");
    let read = parse("MATCH (n:N) RETURN id(n)").expect("parse");
    for (name, ids) in [("keyed", keyed), ("identity", identity)] {
        let limits = Limits { ids, ..big.clone() };
        group.bench_function(format!("return_id_10k_rows_{name}"), |b| {
            b.iter(|| run_read(&g, &read, &Params::new(), &limits).expect("read"))
        });
    }

    // The store: the same nodes in one workspace, read through a snapshot with its model.
    let dir = tempfile::tempdir().expect("tempdir");
    let graph = Graph::open(dir.path(), GraphOptions::default()).expect("open graph");
    let ws = WorkspaceId(1);
    let (stmt, limits) = (create.clone(), big.clone());
    graph
        .write(move |txn| {
            let mut w = txn.workspace(ws);
            run_write(&mut w, &stmt, &Params::new(), &limits)
        })
        .expect("create");
    graph.prepare_read_model(ws).expect("build").expect("fits");
    let snap = graph.snapshot(ws);
    let nodes = parse("MATCH (n:N) RETURN n").expect("parse");
    for (name, ids) in [("keyed", keyed), ("identity", identity)] {
        let limits = Limits { ids, ..big.clone() };
        group.bench_function(format!("store_return_id_10k_rows_{name}"), |b| {
            b.iter(|| run_read(&snap, &read, &Params::new(), &limits).expect("read"))
        });
        group.bench_function(format!("store_return_node_10k_rows_{name}"), |b| {
            b.iter(|| run_read(&snap, &nodes, &Params::new(), &limits).expect("read"))
        });
    }
    group.finish();
}

criterion_group!(benches, codec);
criterion_main!(benches);
