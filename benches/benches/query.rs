//! Query-engine benchmarks on the generated read graph (20,000 customers, 200,000 touchpoints,
//! 50 campaigns, 5,000 opportunities, 6 stages) in the real engine: the queries of issue 3,
//! each parsed once and run on one snapshot (planning included in every iteration).

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use svc_benches::{build_read_graph, email_of, Scale};
use svc_engine::{Graph, GraphOptions, Value, WorkspaceId};
use svc_query::{parse, run_read, Limits, Params};

const WS: WorkspaceId = WorkspaceId(1);

fn params(pairs: &[(&str, Value)]) -> Params {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

fn queries(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let graph = Graph::open(dir.path(), GraphOptions::default()).expect("open graph");
    build_read_graph(&graph, WS, Scale::FULL, 42).expect("build the read graph");
    let snap = graph.snapshot(WS);
    let limits = Limits::default();

    let cases: Vec<(&str, &str, Params)> = vec![
        ("label_count", "MATCH (c:Customer) RETURN count(c)", Params::new()),
        (
            "customer_by_email",
            "MATCH (c:Customer {email: $email}) RETURN c.name, c.score",
            params(&[("email", Value::String(email_of(12_345)))]),
        ),
        (
            "touchpoints_of_customer",
            "MATCH (c:Customer {email: $email})-[:HAS_TOUCHPOINT]->(t:Touchpoint) RETURN t.action, t.ts",
            params(&[("email", Value::String(email_of(777)))]),
        ),
        (
            "touchpoints_of_hub_customer_100",
            "MATCH (c:Customer {email: $email})-[:HAS_TOUCHPOINT]->(t:Touchpoint) RETURN t.action, t.ts",
            params(&[("email", Value::String("hub@bench.test".into()))]),
        ),
        (
            "top10_customers_by_score",
            "MATCH (c:Customer) WHERE c.score >= 0 RETURN c.name, c.score ORDER BY c.score DESC LIMIT 10",
            Params::new(),
        ),
        (
            "opportunities_per_stage_score_filter",
            "MATCH (o:Opportunity)-[:AT_STAGE]->(s:Stage) WHERE o.score > 0.9 RETURN s.name, count(o) AS n",
            Params::new(),
        ),
        (
            "campaign_reach_two_hops",
            "MATCH (k:Campaign {campaignId: $id})<-[:INFLUENCED_BY]-(:Touchpoint)<-[:HAS_TOUCHPOINT]-(c:Customer) \
             RETURN count(DISTINCT c)",
            params(&[("id", Value::String("cmp-007".into()))]),
        ),
    ];

    let mut group = c.benchmark_group("query");
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    for (name, text, params) in &cases {
        let stmt = parse(text).expect("benchmark query parses");
        let first = run_read(&snap, &stmt, params, &limits).expect("benchmark query runs");
        assert!(!first.rows.is_empty(), "{name} returned nothing");
        group.bench_function(*name, |b| {
            b.iter(|| run_read(&snap, &stmt, params, &limits).expect("query runs"))
        });
    }
    group.bench_function("parse_campaign_reach", |b| {
        b.iter(|| parse(cases[6].1).expect("parses"))
    });
    group.finish();
}

criterion_group!(benches, queries);
criterion_main!(benches);
