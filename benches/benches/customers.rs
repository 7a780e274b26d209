//! The customers list of issue 28: searching, filtering, sorting and paging 100,000 customers
//! with `svc_domains::customers::search::search_in`, the function the API (`GET
//! /v1/customers`) and the dashboard call. Target: under 100 ms per query.
//!
//! The workspace: 100,000 customers with names from common first and last names, emails,
//! phones in several notations, external ids, traits (plan, company, city), lifecycle stages,
//! `lastSeen` over 90 days, conversion and churn scores on 80% of them, and 200,000
//! touchpoints of which a third are attributed to one of 20 campaigns (in the style of
//! `tools/bench/gen.py`; deterministic). Each query runs on the read-model path (the usual
//! case) and, for reference, on the row path (the same snapshot with its model hidden, which
//! is what a query meets before the first model is built); both must give the same page.
//!
//! `cargo bench -p svc-benches --bench customers`; `SVC_CUSTOMERS_SKIP_ROWS=1` skips the row
//! path.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use svc_domains::customers::search::search_in;
use svc_domains::customers::{CustomerQuery, CustomerSort};
use svc_engine::{
    EngineError, Graph, GraphOptions, GraphWrite, NodeId, Properties, Value, WorkspaceId,
};
use svc_query::ModelSwitch;

const WS: WorkspaceId = WorkspaceId(1);
const CUSTOMERS: usize = 100_000;
const TOUCHPOINTS: usize = 200_000;
const CAMPAIGNS: usize = 20;
/// 2025-01-01T00:00:00Z in microseconds.
const START_US: i64 = 1_735_689_600_000_000;
const DAY_US: i64 = 86_400_000_000;

const FIRST: &[&str] = &[
    "Ada", "Grace", "Alan", "Yuki", "Hiro", "Maria", "José", "Lin", "Wei", "Olga", "Ivan",
    "Fatima", "Omar", "Priya", "Arjun", "Emma", "Noah", "Liam", "Sofia", "Lucas", "Chloé", "Mateo",
    "Aiko", "Kenji", "Zara", "Amara", "Tomás", "Ingrid", "Sven", "Nia",
];
const LAST: &[&str] = &[
    "Tanaka", "Suzuki", "Garcia", "Smith", "Johnson", "Müller", "Rossi", "Dubois", "Kowalski",
    "Nguyen", "Kim", "Patel", "Singh", "Okafor", "Haddad", "Silva", "Santos", "Jensen", "Novak",
    "Cohen", "Brown", "Lopez", "Ivanova", "Sato", "Chen", "Wang", "Ali", "Mensah", "Larsen",
    "O'Brien", "Fischer", "Moreau", "Costa", "Yamamoto", "Hughes", "Baker",
];
const DOMAINS: &[&str] = &[
    "gmail.com",
    "corp.example",
    "outlook.com",
    "acme.io",
    "mail.jp",
];
const PLANS: &[&str] = &["free", "starter", "pro", "enterprise"];
const CITIES: &[&str] = &[
    "Tokyo",
    "Berlin",
    "Lagos",
    "São Paulo",
    "Austin",
    "Paris",
    "Pune",
];
const STAGES: &[&str] = &["lead", "trial", "customer", "churned"];
const ACTIONS: &[(&str, &str)] = &[
    ("page_viewed", "web"),
    ("email_opened", "email"),
    ("email_clicked", "email"),
    ("demo_booked", "sales"),
    ("purchase", "web"),
];

fn props(pairs: Vec<(&str, Value)>) -> Properties {
    pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

/// The generated workspace; returns an email, a phone and a name that exist in it.
fn build(graph: &Graph) -> Result<(String, String), EngineError> {
    let mut rng = StdRng::seed_from_u64(28);
    let campaigns: Vec<NodeId> = graph.write(|txn| {
        let mut w = txn.workspace(WS);
        (0..CAMPAIGNS)
            .map(|k| {
                w.create_node(
                    &["Campaign"],
                    props(vec![
                        ("campaignId", format!("cmp-{k:02}").into()),
                        ("name", format!("Campaign {k:02}").into()),
                    ]),
                )
            })
            .collect()
    })?;
    let mut customers = Vec::with_capacity(CUSTOMERS);
    let mut sample = (String::new(), String::new());
    for start in (0..CUSTOMERS).step_by(5_000) {
        let rows: Vec<Properties> = (start..(start + 5_000).min(CUSTOMERS))
            .map(|i| {
                let first = FIRST[rng.gen_range(0..FIRST.len())];
                let last = LAST[rng.gen_range(0..LAST.len())];
                let email = format!(
                    "{}.{}{i}@{}",
                    first.to_lowercase(),
                    last.to_lowercase().replace('\'', ""),
                    DOMAINS[i % DOMAINS.len()]
                );
                let digits = format!("{:07}", rng.gen_range(0..10_000_000));
                let phone = match i % 3 {
                    0 => format!("+1 555 {} {}", &digits[..3], &digits[3..]),
                    1 => format!("+81-90-{}-{}", &digits[..3], &digits[3..]),
                    _ => format!("(555) {}-{}", &digits[..3], &digits[3..]),
                };
                if i == CUSTOMERS / 2 {
                    sample = (email.clone(), phone.clone());
                }
                let mut p = vec![
                    ("name", Value::from(format!("{first} {last}").as_str())),
                    ("email", Value::from(email.as_str())),
                    (
                        "lastSeen",
                        Value::DateTime(START_US + rng.gen_range(0..90 * DAY_US)),
                    ),
                    ("plan", PLANS[rng.gen_range(0..PLANS.len())].into()),
                    ("city", CITIES[rng.gen_range(0..CITIES.len())].into()),
                    (
                        "lifecycle_stage",
                        STAGES[rng.gen_range(0..STAGES.len())].into(),
                    ),
                ];
                if i % 2 == 0 {
                    p.push(("phone", Value::from(phone.as_str())));
                }
                if i % 4 == 0 {
                    p.push(("externalId", format!("crm-{i:06}").into()));
                }
                if i % 5 != 0 {
                    let churn: f64 = rng.gen();
                    p.push(("churnScore", Value::Float((churn * 1e4).round() / 1e4)));
                    p.push(("score", Value::Float(((1.0 - churn) * 1e4).round() / 1e4)));
                }
                if i % 7 == 0 {
                    p.push(("company", format!("Company {}", i % 997).into()));
                }
                props(p)
            })
            .collect();
        let ids = graph.write(move |txn| {
            let mut w = txn.workspace(WS);
            rows.into_iter()
                .map(|p| w.create_node(&["Customer"], p))
                .collect::<Result<Vec<_>, EngineError>>()
        })?;
        customers.extend(ids);
    }
    for start in (0..TOUCHPOINTS).step_by(5_000) {
        let rows: Vec<(NodeId, Option<NodeId>, usize, i64)> = (start
            ..(start + 5_000).min(TOUCHPOINTS))
            .map(|_| {
                let c = customers[rng.gen_range(0..customers.len())];
                let k = rng
                    .gen_bool(1.0 / 3.0)
                    .then(|| campaigns[rng.gen_range(0..campaigns.len())]);
                (
                    c,
                    k,
                    rng.gen_range(0..ACTIONS.len()),
                    START_US + rng.gen_range(0..90 * DAY_US),
                )
            })
            .collect();
        graph.write(move |txn| {
            let mut w = txn.workspace(WS);
            for (c, k, a, ts) in rows {
                let (action, channel) = ACTIONS[a];
                let tp = w.create_node(
                    &["Touchpoint"],
                    props(vec![
                        ("action", action.into()),
                        ("channel", channel.into()),
                        ("ts", Value::DateTime(ts)),
                    ]),
                )?;
                w.create_edge(c, tp, "HAS_TOUCHPOINT", Properties::new())?;
                if let Some(k) = k {
                    w.create_edge(tp, k, "INFLUENCED_BY", Properties::new())?;
                }
            }
            Ok::<_, EngineError>(())
        })?;
    }
    Ok(sample)
}

fn customers(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let graph = Graph::open(dir.path(), GraphOptions::default()).expect("open graph");
    let (email, phone) = build(&graph).expect("build the workspace");
    graph
        .prepare_read_model(WS)
        .expect("build the read model")
        .expect("the read model fits the default budget");
    let snap = graph.snapshot(WS);
    assert!(snap.has_read_model());
    let rows_path = ModelSwitch::rows(&snap);
    let skip_rows = std::env::var_os("SVC_CUSTOMERS_SKIP_ROWS").is_some();
    let page = |f: fn(&mut CustomerQuery)| {
        let mut q = CustomerQuery {
            limit: 50,
            ..CustomerQuery::default()
        };
        f(&mut q);
        q.checked().expect("valid query")
    };
    let mut cases: Vec<(&str, CustomerQuery)> = vec![
        ("first_page_last_seen", page(|_| {})),
        (
            "sort_name_asc",
            page(|q| {
                q.sort = CustomerSort::Name;
                q.ascending = true;
            }),
        ),
        ("substring_tanaka", page(|q| q.q = "tanaka".into())),
        (
            "trait_enterprise_by_churn",
            page(|q| {
                q.q = "Enterprise".into();
                q.sort = CustomerSort::Churn;
            }),
        ),
        (
            "stage_and_churn_range",
            page(|q| {
                q.stage = Some("trial".into());
                q.min_churn = Some(0.7);
                q.max_churn = Some(0.95);
                q.sort = CustomerSort::Churn;
            }),
        ),
        (
            "campaign_by_score",
            page(|q| {
                q.campaign = Some("cmp-07".into());
                q.sort = CustomerSort::Score;
            }),
        ),
        (
            "deep_page_email",
            page(|q| {
                q.sort = CustomerSort::Email;
                q.offset = 99_000;
            }),
        ),
        ("no_match", page(|q| q.q = "nobody-matches-this".into())),
    ];
    let mut exact = page(|_| {});
    exact.q = email.to_uppercase();
    cases.push(("exact_email", exact));
    let mut by_phone = page(|_| {});
    by_phone.q = phone.chars().filter(char::is_ascii_digit).skip(3).collect();
    cases.push(("phone_digits", by_phone));

    let mut group = c.benchmark_group("customers");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    // Rendering the page's ids is part of the work; any key costs the same.
    let public = svc_core::plumbing::ids::PublicIds::random(0);
    for (name, q) in &cases {
        let m = search_in(&public, &snap, q).expect("model path");
        let r = search_in(&public, &rows_path, q).expect("row path");
        let ids = |p: &svc_domains::customers::CustomerList| {
            p.customers.iter().map(|c| c.id.clone()).collect::<Vec<_>>()
        };
        assert_eq!(
            (ids(&m), m.total),
            (ids(&r), r.total),
            "{name}: paths differ"
        );
        println!("{name}: {} of {} customers", m.customers.len(), m.total);
        group.bench_function(format!("{name}/model"), |b| {
            b.iter(|| search_in(&public, &snap, q).expect("search"))
        });
        if !skip_rows {
            group.bench_function(format!("{name}/rows"), |b| {
                b.iter(|| search_in(&public, &rows_path, q).expect("search"))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, customers);
criterion_main!(benches);
