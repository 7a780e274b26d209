//! The summary against a hand-computed fixture (window edges, pipeline and stage rules,
//! confidence fallbacks), the cache, and the reasoning feed's rules.

use svc_engine::{GraphWrite, Properties};

use svc_core::vocabulary::{AT_STAGE, STAGE};

use super::*;

const WS: WorkspaceId = WorkspaceId(11);
/// A fixed "now" (2026-01-01T00:00:00Z) in engine microseconds.
const NOW: i64 = 1_767_225_600_000_000;

fn props(pairs: &[(&str, Value)]) -> Properties {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

fn event_props(pairs: &[(&str, Value)]) -> Value {
    Value::Map(props(pairs))
}

fn customer(
    w: &mut svc_core::store::WorkspaceTxn<'_, '_>,
    p: Properties,
    tps: &[(i64, Properties)],
) -> Result<NodeId> {
    let c = w.create_node(&[CUSTOMER], p)?;
    for (ts, extra) in tps {
        let mut tp = props(&[
            ("action", Value::from("visit")),
            ("ts", Value::DateTime(*ts)),
        ]);
        tp.extend(extra.clone());
        let t = w.create_node(&[TOUCHPOINT], tp)?;
        w.create_edge(c, t, HAS_TOUCHPOINT, Properties::new())?;
    }
    Ok(c)
}

fn opp(w: &mut svc_core::store::WorkspaceTxn<'_, '_>, p: Properties) -> Result<NodeId> {
    Ok(w.create_node(&[OPPORTUNITY], p)?)
}

/// Creates the fixture of the module test in one write; returns the store (kept open).
async fn fixture(dir: &std::path::Path) -> Store {
    let store = Store::open(dir).expect("store");
    store
        .write(|tx| {
            let mut w = tx.workspace(WS);
            let none = Properties::new;
            // c1: confidence 0.8 (80); touchpoints on every window edge; one critical event.
            customer(
                &mut w,
                props(&[("confidence", Value::Float(0.8))]),
                &[
                    (NOW - 30 * 60 * 1_000_000, none()),
                    (NOW - DAY_US, none()),
                    (NOW - DAY_US - 1, none()),
                    (NOW - 2 * DAY_US, none()),
                    (NOW - 2 * DAY_US - 1, none()),
                    (
                        NOW - 3 * DAY_US,
                        props(&[(
                            "properties",
                            event_props(&[("signal_strength", Value::Float(0.9))]),
                        )]),
                    ),
                ],
            )?;
            // c2: icp_match_score 60; active near the 7-day edge; hyper_signal on the node.
            customer(
                &mut w,
                props(&[
                    ("icp_match_score", Value::Int(60)),
                    ("hyper_signal", Value::Bool(true)),
                ]),
                &[(NOW - 7 * DAY_US + 1, none())],
            )?;
            // c3: confidence 0.5 (50); last seen 8 days ago: not active, so not critical.
            customer(
                &mut w,
                props(&[
                    ("confidence", Value::Float(0.5)),
                    ("signal_strength", Value::Float(0.99)),
                ]),
                &[(NOW - 8 * DAY_US, none())],
            )?;
            // c4: no confidence; events at now and in the future are outside [now-24h, now).
            customer(&mut w, none(), &[(NOW, none()), (NOW + HOUR_US, none())])?;

            opp(
                &mut w,
                props(&[
                    ("amount", Value::Float(1000.6)),
                    ("stage", Value::from("Proposal")),
                ]),
            )?;
            let won = opp(&mut w, props(&[("arr", Value::Int(2000))]))?;
            let stage = w.create_node(&[STAGE], props(&[("name", Value::from("Closed Won"))]))?;
            w.create_edge(won, stage, AT_STAGE, Properties::new())?;
            opp(&mut w, props(&[("estimatedValue", Value::from("500"))]))?;
            opp(
                &mut w,
                props(&[
                    ("amount", Value::Int(300)),
                    ("arr", Value::Int(9999)),
                    ("stage", Value::from("negotiation")),
                ]),
            )?;
            opp(
                &mut w,
                props(&[
                    ("amount", Value::Int(1_000_000)),
                    ("stage", Value::from("lost")),
                ]),
            )?;
            opp(&mut w, props(&[("stage", Value::from("discovery"))]))?;
            Ok(())
        })
        .await
        .expect("fixture");
    store
}

#[tokio::test]
async fn summary_matches_the_hand_computed_fixture() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = fixture(dir.path()).await;
    let s = store
        .read(WS, |snap| compute(snap, NOW))
        .await
        .expect("summary");
    let mut hourly = vec![0; 24];
    hourly[0] = 1; // now-24h exactly
    hourly[23] = 1; // now-30min
    assert_eq!(
        s,
        Summary {
            active_signals: 2,
            pipeline_arr: 1800, // trunc(1000.6 + 500 + 300); won and lost excluded
            open_tasks: 4,
            avg_confidence: 63.3, // (80 + 60 + 50) / 3
            signals_last24h: 2,
            signals_prev24h: 2, // now-24h-1us and now-48h; now-48h-1us is older
            signals_hourly: hourly,
            arr_target_cents: 5_000_000,
            critical_count: 2,
            critical_capacity: 8,
            agents_total: 4,
            agents_healthy: 4,
            uptime_pct: 100.0,
            confidence_ppt_delta: 1.3,
        }
    );
    assert_eq!(s.signals_hourly.iter().sum::<u64>(), s.signals_last24h);
}

#[tokio::test]
async fn confidence_falls_back_to_relationships_and_cache_follows_the_generation() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path()).expect("store");
    store
        .write(|tx| {
            let mut w = tx.workspace(WS);
            let a = w.create_node(&[CUSTOMER], Properties::new())?;
            let b = w.create_node(&[CUSTOMER], Properties::new())?;
            w.create_edge(a, b, "KNOWS", props(&[("confidence", Value::Float(0.7))]))?;
            w.create_edge(b, a, "KNOWS", props(&[("confidence", Value::Float(0.9))]))?;
            Ok(())
        })
        .await
        .expect("write");
    let cache = SummaryCache::default();
    let first = summary(&store, &cache, WS).await;
    assert_eq!(first.avg_confidence, 80.0);
    let g = store.graph_generation(WS);
    assert_eq!(cache.get(WS, g), Some(first.clone()), "cached");
    store
        .write(|tx| {
            tx.workspace(WS)
                .create_node(&[CUSTOMER], props(&[("confidence", Value::Int(10))]))?;
            Ok(())
        })
        .await
        .expect("write");
    assert!(
        store.graph_generation(WS) > g,
        "a graph write moves the generation"
    );
    assert_eq!(cache.get(WS, store.graph_generation(WS)), None);
    assert_eq!(summary(&store, &cache, WS).await.avg_confidence, 10.0);
}

#[test]
fn stage_words_close_opportunities() {
    for closed in ["won", "Closed Won", "closed_lost", "LOST", "closed"] {
        assert!(stage_is_closed(closed), "{closed}");
    }
    for open in ["proposal", "wonderful", "unclosed", "negotiation"] {
        assert!(!stage_is_closed(open), "{open}");
    }
}

#[test]
fn reasoning_limits_truncation_and_buddies() {
    assert_eq!(clamp_limit(None), 25);
    assert_eq!(clamp_limit(Some(0)), 1);
    assert_eq!(clamp_limit(Some(-5)), 1);
    assert_eq!(clamp_limit(Some(1000)), 100);
    assert_eq!(clamp_limit(Some(40)), 40);
    let long = "é".repeat(300);
    let cut = truncate(&long);
    assert_eq!(cut.chars().count(), 240);
    assert!(cut.ends_with('…'));
    assert_eq!(truncate(&"a".repeat(240)), "a".repeat(240));
    assert_eq!(buddy_or_insights("pipeline"), "pipeline");
    assert_eq!(buddy_or_insights("orchestrator"), "insights");
    assert_eq!(buddy_or_insights("nonsense"), "insights");
}

#[tokio::test]
async fn synthetic_feed_uses_recommendations_and_touchpoints_and_is_never_empty() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = fixture(dir.path()).await;
    store
        .write(|tx| {
            tx.workspace(WS).create_node(
                &[RECOMMENDATION],
                props(&[
                    ("text", Value::from("Call c1 today: strong signal")),
                    ("buddyId", Value::from("pipeline")),
                    ("ts", Value::DateTime(NOW - 10 * DAY_US)),
                ]),
            )?;
            Ok(())
        })
        .await
        .expect("write");
    let entries = store
        .read(WS, {
            let ids = store.ids().clone();
            move |snap| synthetic(&ids, snap, 100, NOW / 1000)
        })
        .await
        .expect("feed");
    assert_eq!(
        entries.len(),
        1 + 10,
        "one recommendation and every touchpoint"
    );
    assert_eq!(
        entries[0].text, "Call c1 today: strong signal",
        "oldest first"
    );
    assert_eq!(entries[0].buddy_id, "pipeline");
    assert!(entries.windows(2).all(|w| w[0].ts <= w[1].ts));
    assert!(entries.iter().all(|e| Buddy::parse(&e.buddy_id).is_some()));
    let three = store
        .read(WS, {
            let ids = store.ids().clone();
            move |snap| synthetic(&ids, snap, 3, NOW / 1000)
        })
        .await
        .expect("feed");
    assert_eq!(three.len(), 3);
    assert_eq!(three.last(), entries.last(), "the most recent ones");

    let empty = store
        .read(WorkspaceId(99), {
            let ids = store.ids().clone();
            move |snap| synthetic(&ids, snap, 25, 0)
        })
        .await
        .expect("feed");
    assert_eq!(empty.len(), 1);
    assert_eq!(empty[0].buddy_id, "insights");
}

#[tokio::test]
async fn an_internal_failure_answers_the_zero_filled_summary() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = fixture(dir.path()).await;
    store.close();
    let s = summary(&store, &SummaryCache::default(), WS).await;
    assert_eq!(s, Summary::zero());
    assert_eq!(s.signals_hourly, vec![0; 24]);
    let json = serde_json::to_value(&s).expect("json");
    assert_eq!(json["arrTargetCents"], 0, "every figure zero: {json}");
}

#[tokio::test]
async fn the_open_pipeline_is_every_open_opportunity_in_funnel_order_and_adds_up() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = fixture(dir.path()).await;
    let stages = store
        .read(WS, |snap| open_pipeline(snap))
        .await
        .expect("pipeline");
    let names: Vec<&str> = stages.iter().map(|s| s.stage.as_str()).collect();
    assert_eq!(names, ["discovery", "Proposal", "negotiation", NO_STAGE]);
    assert_eq!(stages[1].amount, 1000.6);
    assert_eq!(stages[3].amount, 500.0, "estimatedValue, no stage");
    let s = store
        .read(WS, |snap| compute(snap, NOW))
        .await
        .expect("summary");
    assert_eq!(stages.iter().map(|s| s.count).sum::<u64>(), s.open_tasks);
    assert_eq!(
        stages.iter().map(|s| s.amount).sum::<f64>().trunc() as i64,
        s.pipeline_arr
    );
}

#[test]
fn funnel_rank_orders_known_words_then_numbers_then_names() {
    let mut stages = vec![
        "closedwon",
        "Negotiation",
        "zeta",
        NO_STAGE,
        "Qualified",
        "lead",
        "alpha",
        "Demo scheduled",
        "proposal",
        "discovery",
    ];
    stages.sort_by_key(|s| funnel_rank(s));
    assert_eq!(
        stages,
        [
            "lead",
            "Qualified",
            "discovery",
            "Demo scheduled",
            "proposal",
            "Negotiation",
            "closedwon",
            "alpha",
            "zeta",
            NO_STAGE
        ]
    );
    let mut numbered = vec!["10 Closing", "2 Demo", "1 Intro"];
    numbered.sort_by_key(|s| funnel_rank(s));
    assert_eq!(numbered, ["1 Intro", "2 Demo", "10 Closing"]);
}
