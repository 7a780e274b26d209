//! Shared workloads of the benchmarks: a deterministic generator of the read graph of the
//! issues' benchmarks (customers, touchpoints, campaigns, opportunities, stages), built through
//! the engine's public write API.

pub mod corpus;
pub mod replay;
pub mod seed;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
/// The allocator svcd uses, so benchmark figures are the service's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use svc_engine::{
    EngineError, EventInput, Graph, IdentityKeys, NodeId, Properties, Value, WorkspaceId,
};

/// Sizes of a generated graph.
#[derive(Clone, Copy, Debug)]
pub struct Scale {
    pub customers: usize,
    pub touchpoints: usize,
    pub campaigns: usize,
    pub opportunities: usize,
}

impl Scale {
    /// The size the benchmarks of the issues name.
    pub const FULL: Scale = Scale {
        customers: 20_000,
        touchpoints: 200_000,
        campaigns: 50,
        opportunities: 5_000,
    };
}

pub const STAGES: [(&str, f64); 6] = [
    ("lead", 0.1),
    ("qualified", 0.25),
    ("proposal", 0.5),
    ("negotiation", 0.75),
    ("won", 1.0),
    ("lost", 0.0),
];
const ACTIONS: [(&str, &str); 6] = [
    ("page_viewed", "web"),
    ("email_opened", "email"),
    ("email_clicked", "email"),
    ("ad_clicked", "social"),
    ("demo_booked", "sales"),
    ("purchase", "web"),
];

/// 2025-01-01T00:00:00Z in microseconds.
pub const START_US: i64 = 1_735_689_600_000_000;
const DAY_US: i64 = 86_400_000_000;

/// Ids of what `build_read_graph` created.
#[derive(Clone, Debug)]
pub struct ReadGraph {
    pub customers: Vec<NodeId>,
    pub campaigns: Vec<NodeId>,
    pub stages: Vec<NodeId>,
    /// A customer with exactly 100 touchpoints (email `hub@bench.test`).
    pub hub: NodeId,
}

pub fn email_of(i: usize) -> String {
    format!("customer{i}@bench.test")
}

fn props(pairs: Vec<(&str, Value)>) -> Properties {
    pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

/// Builds the read-benchmark graph in `ws` (deterministic for a seed).
pub fn build_read_graph(
    graph: &Graph,
    ws: WorkspaceId,
    scale: Scale,
    seed: u64,
) -> Result<ReadGraph, EngineError> {
    use svc_engine::GraphWrite;
    let mut rng = StdRng::seed_from_u64(seed);
    let mut out = ReadGraph {
        customers: Vec::new(),
        campaigns: Vec::new(),
        stages: Vec::new(),
        hub: NodeId(0),
    };

    let (campaigns, stages) = graph.write(move |txn| {
        let mut w = txn.workspace(ws);
        let mut campaigns = Vec::new();
        for k in 0..scale.campaigns {
            campaigns.push(w.create_node(
                &["Campaign"],
                props(vec![
                    ("campaignId", format!("cmp-{k:03}").into()),
                    ("name", format!("Campaign {k:02}").into()),
                ]),
            )?);
        }
        let mut stages = Vec::new();
        for (name, progress) in STAGES {
            stages.push(w.create_node(
                &["Stage"],
                props(vec![("name", name.into()), ("progress", progress.into())]),
            )?);
        }
        Ok::<_, EngineError>((campaigns, stages))
    })?;
    out.campaigns = campaigns;
    out.stages = stages;

    for chunk_start in (0..scale.customers).step_by(2_000) {
        let chunk: Vec<(usize, f64, i64)> = (chunk_start
            ..(chunk_start + 2_000).min(scale.customers))
            .map(|i| {
                (
                    i,
                    rng.gen::<f64>(),
                    START_US + rng.gen_range(0..90 * DAY_US),
                )
            })
            .collect();
        let ids = graph.write(move |txn| {
            let mut w = txn.workspace(ws);
            chunk
                .into_iter()
                .map(|(i, score, seen)| {
                    w.create_node(
                        &["Customer"],
                        props(vec![
                            ("name", format!("Customer {i}").into()),
                            ("email", email_of(i).into()),
                            ("phone", format!("+1555{i:07}").into()),
                            ("score", score.into()),
                            ("lastSeen", Value::DateTime(seen)),
                        ]),
                    )
                })
                .collect::<Result<Vec<_>, _>>()
        })?;
        out.customers.extend(ids);
    }

    let hub = graph.write(move |txn| {
        txn.workspace(ws).create_node(
            &["Customer"],
            props(vec![
                ("email", "hub@bench.test".into()),
                ("score", 0.5.into()),
            ]),
        )
    })?;
    out.hub = hub;
    let hub_touchpoints = 100.min(scale.touchpoints);
    let mut remaining = scale.touchpoints;
    while remaining > 0 {
        let n = remaining.min(5_000);
        remaining -= n;
        let hub_share = if remaining + n == scale.touchpoints {
            hub_touchpoints
        } else {
            0
        };
        let rows: Vec<(NodeId, usize, i64, Option<NodeId>)> = (0..n)
            .map(|j| {
                let customer = if j < hub_share || out.customers.is_empty() {
                    hub
                } else {
                    out.customers[rng.gen_range(0..out.customers.len())]
                };
                let campaign = (rng.gen::<f64>() < 0.4 && !out.campaigns.is_empty())
                    .then(|| out.campaigns[rng.gen_range(0..out.campaigns.len())]);
                (
                    customer,
                    rng.gen_range(0..ACTIONS.len()),
                    START_US + rng.gen_range(0..90 * DAY_US),
                    campaign,
                )
            })
            .collect();
        graph.write(move |txn| {
            let mut w = txn.workspace(ws);
            for (customer, action, ts, campaign) in rows {
                let (a, c) = ACTIONS[action];
                let tp = w.create_node(
                    &["Touchpoint"],
                    props(vec![
                        ("action", a.into()),
                        ("channel", c.into()),
                        ("ts", Value::DateTime(ts)),
                    ]),
                )?;
                w.create_edge(customer, tp, "HAS_TOUCHPOINT", Properties::new())?;
                if let Some(c) = campaign {
                    w.create_edge(tp, c, "INFLUENCED_BY", Properties::new())?;
                }
            }
            Ok::<_, EngineError>(())
        })?;
    }

    for chunk_start in (0..scale.opportunities).step_by(2_500) {
        let rows: Vec<(usize, f64, i64, NodeId)> = (chunk_start
            ..(chunk_start + 2_500).min(scale.opportunities))
            .map(|o| {
                (
                    o,
                    rng.gen::<f64>(),
                    rng.gen_range(1_000..200_000),
                    out.stages[rng.gen_range(0..out.stages.len())],
                )
            })
            .collect();
        graph.write(move |txn| {
            let mut w = txn.workspace(ws);
            for (o, score, amount, stage) in rows {
                let opp = w.create_node(
                    &["Opportunity"],
                    props(vec![
                        ("name", format!("Deal {o:05}").into()),
                        ("score", score.into()),
                        ("amount", Value::Int(amount)),
                    ]),
                )?;
                w.create_edge(opp, stage, "AT_STAGE", Properties::new())?;
            }
            Ok::<_, EngineError>(())
        })?;
    }
    Ok(out)
}

/// An event for one of `pool` people (so some create customers and most match one).
pub fn ingest_event(i: usize, pool: usize) -> EventInput {
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
pub fn ingest(
    graph: &Graph,
    ws: WorkspaceId,
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
                        graph
                            .record_event(ws, ingest_event(base, 50_000))
                            .expect("record");
                    } else {
                        let batch = (base..base + n).map(|i| ingest_event(i, 50_000)).collect();
                        for r in graph.record_events(ws, batch).expect("batch") {
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

/// utime + stime (clock ticks, 100 per second on Linux) of this process's engine threads.
pub fn engine_thread_ticks() -> Vec<(String, u64)> {
    let mut out = Vec::new();
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return out;
    };
    for task in tasks.flatten() {
        let name = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
        let name = name.trim().to_owned();
        if !name.starts_with("svc-engine") {
            continue;
        }
        // Fields after the parenthesised command name: state is field 3, utime 14, stime 15.
        let rest = stat.rsplit_once(") ").map(|(_, r)| r).unwrap_or("");
        let f: Vec<&str> = rest.split_whitespace().collect();
        let ticks = |i: usize| {
            f.get(i - 3)
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0)
        };
        out.push((name, ticks(14) + ticks(15)));
    }
    out.sort();
    out
}
