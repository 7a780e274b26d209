//! The batch executor (issue 25) on the seeded graph of `tools/bench/gen.py`: each query of the
//! issue's table (kinds of query, our own text) runs on the batch path (the snapshot's read
//! model) and on the row path (the same snapshot with its model hidden), after checking that
//! both give the same rows.
//!
//! `SVC_BENCH_DATA` names the generator's output directory (generated there when missing).

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use svc_benches::seed::{load_seed, seed_dir};
use svc_engine::{Graph, GraphOptions, Value, WorkspaceId};
use svc_query::{parse, run_read, Limits, ModelSwitch, Params};

const WS: WorkspaceId = WorkspaceId(1);

/// (name, query) of each shape; `$email` is a customer with touchpoints.
const QUERIES: &[(&str, &str)] = &[
    (
        "topk_by_alias",
        "MATCH (c:Customer) RETURN c.name AS name, c.score AS s ORDER BY s DESC LIMIT 10",
    ),
    (
        "topk_by_expression",
        "MATCH (c:Customer) RETURN c.name AS name ORDER BY c.score * 2 DESC LIMIT 10",
    ),
    (
        "group_by_channel_count_max",
        "MATCH (t:Touchpoint) RETURN t.channel AS channel, count(*) AS n, max(t.ts) AS last",
    ),
    (
        "distinct_action",
        "MATCH (t:Touchpoint) RETURN DISTINCT t.action",
    ),
    (
        "per_customer_count_topk",
        "MATCH (c:Customer)-[:HAS_TOUCHPOINT]->(t:Touchpoint) \
         RETURN c.email AS email, count(t) AS n ORDER BY n DESC, email LIMIT 10",
    ),
    (
        "optional_filtered_per_campaign",
        "MATCH (k:Campaign) OPTIONAL MATCH (k)<-[:INFLUENCED_BY]-(t:Touchpoint) \
         WHERE t.channel = 'email' RETURN k.name AS campaign, count(t) AS n",
    ),
    (
        "with_distinct_then_avg",
        "MATCH (c:Customer)-[:HAS_TOUCHPOINT]->(t:Touchpoint) WHERE t.channel = 'web' \
         WITH DISTINCT c RETURN avg(c.score) AS avg_score",
    ),
    (
        "customers_without_campaign",
        "MATCH (c:Customer) OPTIONAL MATCH (c)-[:HAS_TOUCHPOINT]->(:Touchpoint)-[:INFLUENCED_BY]->(k:Campaign) \
         WITH c, count(k) AS n WHERE n = 0 RETURN count(c) AS customers",
    ),
    (
        "four_hops_out_and_back",
        "MATCH (c:Customer {email: $email})-[:HAS_TOUCHPOINT]->(:Touchpoint)-[:INFLUENCED_BY]->(k:Campaign)\
         <-[:INFLUENCED_BY]-(:Touchpoint)<-[:HAS_TOUCHPOINT]-(o:Customer) RETURN count(DISTINCT o) AS n",
    ),
    (
        "group_two_keys_in_filter",
        "MATCH (t:Touchpoint) WHERE t.channel IN ['email', 'web'] \
         RETURN t.channel AS channel, t.action AS action, count(*) AS n",
    ),
    (
        "string_predicates_count",
        "MATCH (c:Customer) WHERE c.email ENDS WITH '.test' AND c.name CONTAINS 'an' RETURN count(c) AS n",
    ),
    (
        "string_predicates_rows",
        "MATCH (c:Customer) WHERE c.email CONTAINS 'garcia' RETURN c.name AS name, c.email AS email",
    ),
    (
        "two_hop_rows_sorted_by_ts",
        "MATCH (c:Customer)-[:HAS_TOUCHPOINT]->(t:Touchpoint)-[:INFLUENCED_BY]->(k:Campaign) \
         WHERE k.campaignId = 'cmp-003' AND t.channel = 'email' \
         RETURN c.name AS name, t.ts AS ts ORDER BY ts DESC LIMIT 100",
    ),
    (
        "aggregates_per_stage",
        "MATCH (o:Opportunity)-[:AT_STAGE]->(s:Stage) \
         RETURN s.name AS stage, avg(o.amount) AS avg_amount, sum(o.amount) AS total, count(o) AS n",
    ),
    (
        "full_scan_filter_group",
        "MATCH (t:Touchpoint) WHERE t.ts >= datetime('2025-01-15T00:00:00Z') \
         RETURN t.action AS action, count(*) AS n",
    ),
    (
        "collect_distinct_per_campaign",
        "MATCH (k:Campaign)<-[:INFLUENCED_BY]-(t:Touchpoint) \
         RETURN k.campaignId AS campaign, collect(DISTINCT t.channel) AS channels",
    ),
];

fn batch(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let graph = Graph::open(dir.path(), GraphOptions::default()).expect("open graph");
    let facts = load_seed(&graph, WS, &seed_dir()).expect("load the seeded graph");
    graph
        .prepare_read_model(WS)
        .expect("build the read model")
        .expect("the read model fits the default budget");
    let snap = graph.snapshot(WS);
    assert!(snap.has_read_model());
    let rows_path = ModelSwitch::rows(&snap);
    let limits = Limits {
        time: Duration::from_secs(60),
        max_rows: 100_000,
        ..Limits::default()
    };
    let params: Params = [(
        "email".to_owned(),
        Value::String(facts.sample_email.clone()),
    )]
    .into_iter()
    .collect();
    let only = std::env::var("SVC_BATCH_ONLY").ok();
    let skip_rows = std::env::var_os("SVC_BATCH_SKIP_ROWS").is_some();
    let mut group = c.benchmark_group("batch");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    for (name, text) in QUERIES {
        if only.as_deref().is_some_and(|o| !name.contains(o)) {
            continue;
        }
        let stmt = parse(text).expect("benchmark query parses");
        let b = run_read(&snap, &stmt, &params, &limits).expect("batch runs");
        let r = run_read(&rows_path, &stmt, &params, &limits).expect("rows run");
        assert_eq!(
            format!("{:?}", b.rows),
            format!("{:?}", r.rows),
            "{name}: the batch and row paths differ"
        );
        println!("{name}: {} rows", b.rows.len());
        group.bench_function(format!("{name}/batch"), |bn| {
            bn.iter(|| run_read(&snap, &stmt, &params, &limits).expect("query runs"))
        });
        if !skip_rows {
            group.bench_function(format!("{name}/rows"), |bn| {
                bn.iter(|| run_read(&rows_path, &stmt, &params, &limits).expect("query runs"))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, batch);
criterion_main!(benches);
