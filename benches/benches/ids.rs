//! The Cypher id codec (issue 29): one encode and one decode of a node id under the keyed
//! codec (the service's) and the identity (embedders, the TCK), and `RETURN id(n)` over 10,000
//! nodes of an in-memory graph under each, so the per-row share of the codec shows.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use svc_engine::NodeId;
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
    group.finish();
}

criterion_group!(benches, codec);
criterion_main!(benches);
