//! Query-engine benchmarks in the real engine, each query parsed once and run on one snapshot
//! (planning included in every iteration):
//! - group `query`: the queries of issue 3 on the synthetic read graph of `build_read_graph`
//!   (20,000 customers, 200,000 touchpoints, 50 campaigns, 5,000 opportunities, 6 stages);
//! - group `seeded`: the shapes of issue 18 on the seeded graph of `tools/bench/gen.py`
//!   (37,574 customers, 200,000 touchpoints, 50 campaigns, 5,000 opportunities, 6 stages),
//!   each answer checked against figures computed from the seed's CSV files.
//!
//! `SVC_BENCH_DATA` names the generator's output directory (generated there when missing).

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use svc_benches::seed::{load_seed, seed_dir, SeedFacts};
use svc_benches::{build_read_graph, email_of, Scale};
use svc_engine::{Graph, GraphOptions, GraphRead, Value, WorkspaceId};
use svc_query::{parse, run_read, Limits, Params, QueryResult, ResultValue};

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

fn int(v: &ResultValue) -> u64 {
    match v {
        ResultValue::Int(i) => u64::try_from(*i).expect("a count"),
        other => panic!("expected an integer, got {other:?}"),
    }
}

fn float(v: &ResultValue) -> f64 {
    match v {
        ResultValue::Float(f) => *f,
        other => panic!("expected a float, got {other:?}"),
    }
}

type Check = Box<dyn Fn(&QueryResult, &SeedFacts)>;

fn one_count(expected: fn(&SeedFacts) -> u64) -> Check {
    Box::new(move |r, f| {
        assert_eq!(r.rows.len(), 1);
        assert_eq!(int(&r.rows[0][0]), expected(f));
    })
}

/// The shapes of issue 18 on the seeded graph.
fn seeded(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let graph = Graph::open(dir.path(), GraphOptions::default()).expect("open graph");
    let facts = load_seed(&graph, WS, &seed_dir()).expect("load the seeded graph");
    // The read model is built in the background on first use; build it now so that every
    // iteration runs on it (and say what it costs).
    let started = std::time::Instant::now();
    let bytes = graph
        .prepare_read_model(WS)
        .expect("build the read model")
        .expect("the read model fits the default budget");
    let built = started.elapsed();
    let snap = graph.snapshot(WS);
    assert!(snap.has_read_model());
    let nodes = snap.node_count().expect("node count");
    println!(
        "read model: {bytes} bytes ({:.1} MB) for {nodes} nodes, {:.1} MB per million nodes, \
         built in {built:?}",
        bytes as f64 / 1e6,
        bytes as f64 / nodes as f64,
    );
    // A generous time budget: the slowest shapes take close to the default 2 s before issue 18.
    let limits = Limits {
        time: Duration::from_secs(60),
        ..Limits::default()
    };
    let email = || params(&[("email", Value::String(facts.sample_email.clone()))]);
    let campaign = || params(&[("id", Value::String(facts.big_campaign.clone()))]);

    let cases: Vec<(&str, &str, Params, Check)> = vec![
        (
            "label_count",
            "MATCH (c:Customer) RETURN count(c)",
            Params::new(),
            one_count(|f| f.customers),
        ),
        (
            "customer_by_email",
            "MATCH (c:Customer {email: $email}) RETURN c.name, c.score",
            email(),
            Box::new(|r, _| assert_eq!(r.rows.len(), 1)),
        ),
        (
            "touchpoints_of_customer",
            "MATCH (c:Customer {email: $email})-[:HAS_TOUCHPOINT]->(t:Touchpoint) RETURN t.action, t.ts",
            email(),
            Box::new(|r, f| assert_eq!(r.rows.len() as u64, f.sample_touchpoints)),
        ),
        (
            "last5_touchpoints_of_customer",
            "MATCH (c:Customer {email: $email})-[:HAS_TOUCHPOINT]->(t:Touchpoint) \
             RETURN t.action, t.ts ORDER BY t.ts DESC LIMIT 5",
            email(),
            Box::new(|r, _| assert_eq!(r.rows.len(), 5)),
        ),
        (
            "campaign_touchpoint_count",
            "MATCH (k:Campaign {campaignId: $id})<-[:INFLUENCED_BY]-(t:Touchpoint) RETURN count(t)",
            campaign(),
            one_count(|f| f.big_campaign_touchpoints),
        ),
        (
            "campaign_degree",
            "MATCH (k:Campaign {campaignId: $id})<-[:INFLUENCED_BY]-(t) RETURN count(t)",
            campaign(),
            one_count(|f| f.big_campaign_touchpoints),
        ),
        (
            "top10_customers_by_score",
            "MATCH (c:Customer) RETURN c.name, c.score ORDER BY c.score DESC LIMIT 10",
            Params::new(),
            Box::new(|r, f| {
                let got: Vec<f64> = r.rows.iter().map(|row| float(&row[1])).collect();
                assert_eq!(got, f.top10_scores);
            }),
        ),
        (
            "campaign_reach_two_hops",
            "MATCH (k:Campaign {campaignId: $id})<-[:INFLUENCED_BY]-(:Touchpoint)<-[:HAS_TOUCHPOINT]-(c:Customer) \
             RETURN count(DISTINCT c)",
            campaign(),
            one_count(|f| f.big_campaign_reach),
        ),
        (
            "top5_campaigns_by_touchpoints",
            "MATCH (k:Campaign)<-[:INFLUENCED_BY]-(t:Touchpoint) \
             RETURN k.campaignId AS campaign, count(t) AS n ORDER BY n DESC LIMIT 5",
            Params::new(),
            Box::new(|r, f| {
                let got: Vec<u64> = r.rows.iter().map(|row| int(&row[1])).collect();
                assert_eq!(got, f.top5_campaign_counts);
            }),
        ),
        (
            "touchpoints_with_action",
            "MATCH (t:Touchpoint) WHERE t.action = 'purchase' RETURN count(t)",
            Params::new(),
            one_count(|f| f.purchases),
        ),
        (
            "customers_seen_since",
            "MATCH (c:Customer) WHERE c.lastSeen >= $since RETURN count(c)",
            params(&[("since", Value::DateTime(facts.seen_since_us))]),
            one_count(|f| f.seen_since_count),
        ),
        (
            "opportunities_per_stage",
            "MATCH (o:Opportunity)-[:AT_STAGE]->(s:Stage) RETURN s.name, count(o) AS n",
            Params::new(),
            Box::new(|r, f| {
                let got: std::collections::BTreeMap<String, u64> = r
                    .rows
                    .iter()
                    .map(|row| match &row[0] {
                        ResultValue::String(s) => (s.clone(), int(&row[1])),
                        other => panic!("stage name {other:?}"),
                    })
                    .collect();
                assert_eq!(got, f.per_stage);
            }),
        ),
    ];

    let mut group = c.benchmark_group("seeded");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    for (name, text, params, check) in &cases {
        let stmt = parse(text).expect("benchmark query parses");
        let first = run_read(&snap, &stmt, params, &limits).expect("benchmark query runs");
        check(&first, &facts);
        group.bench_function(*name, |b| {
            b.iter(|| run_read(&snap, &stmt, params, &limits).expect("query runs"))
        });
    }
    group.finish();
}

criterion_group!(benches, queries, seeded);
criterion_main!(benches);
