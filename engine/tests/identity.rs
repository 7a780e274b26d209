//! Identity resolution: priority, enrichment, blocked values, normalisation, races, and a
//! replay that must end with exactly the reference resolver's customers.

mod common;

use std::collections::HashMap;
use std::process::Command;
use std::sync::{Arc, Barrier};

use common::*;
use svc_engine::{
    Direction, EngineError, EventInput, GraphRead, GraphWrite, IdentityKeys, NodeId, Properties,
    Value,
};

fn record(graph: &svc_engine::Graph, ev: EventInput) -> svc_engine::EventOutcome {
    graph.record_event(WS, ev).expect("record event")
}

fn prop(graph: &svc_engine::Graph, id: NodeId, key: &str) -> Option<Value> {
    node(graph, WS, id).properties.get(key).cloned()
}

#[test]
fn an_event_creates_customer_touchpoint_campaign_and_edges() {
    let (_dir, graph) = temp_graph();
    let mut ev = email_event(" Ada@Example.com ", 1_000);
    ev.channel = Some("web".into());
    ev.campaign_id = Some("spring".into());
    ev.properties.insert("path".into(), "/pricing".into());
    let out = record(&graph, ev.clone());
    assert!(out.is_new);
    assert_eq!(out.nodes_mutated, 3);
    assert_eq!(
        prop(&graph, out.customer_id, "email"),
        Some("ada@example.com".into())
    );
    assert_eq!(
        prop(&graph, out.customer_id, "lastSeen"),
        Some(Value::DateTime(ms(1_000)))
    );
    let tp = node(&graph, WS, out.touchpoint_id);
    assert_eq!(tp.labels, vec!["Touchpoint"]);
    assert_eq!(tp.get("action"), Some(&"page_viewed".into()));
    assert_eq!(tp.get("channel"), Some(&"web".into()));
    assert_eq!(tp.get("ts"), Some(&Value::DateTime(ms(1_000))));
    assert!(
        matches!(tp.get("properties"), Some(Value::Map(m)) if m.get("path") == Some(&"/pricing".into()))
    );
    let snap = graph.snapshot(WS);
    let campaigns = snap
        .index_seek("Campaign", "campaignId", &"spring".into())
        .expect("seek")
        .expect("indexed");
    assert_eq!(campaigns.len(), 1);
    let influenced = snap
        .adjacent(
            out.touchpoint_id,
            Direction::Outgoing,
            Some("INFLUENCED_BY"),
        )
        .expect("adjacent");
    assert_eq!(influenced[0].neighbour, campaigns[0]);
    drop(snap);

    // The second event reuses customer and campaign.
    let again = record(&graph, ev);
    assert!(!again.is_new);
    assert_eq!(again.customer_id, out.customer_id);
    assert_eq!(
        again.nodes_mutated, 1,
        "only the touchpoint: lastSeen did not move"
    );
    let snap = graph.snapshot(WS);
    assert_eq!(snap.label_count("Campaign").expect("count"), 1);
    assert_eq!(
        snap.degree(out.customer_id, Direction::Outgoing, Some("HAS_TOUCHPOINT"))
            .expect("degree"),
        2
    );
    drop(snap);
    assert_valid(&graph);
}

#[test]
fn last_seen_is_the_latest_event_time_not_the_last_received() {
    let (_dir, graph) = temp_graph();
    let a = record(&graph, email_event("a@x.io", 5_000)).customer_id;
    record(&graph, email_event("a@x.io", 3_000));
    assert_eq!(
        prop(&graph, a, "lastSeen"),
        Some(Value::DateTime(ms(5_000)))
    );
    record(&graph, email_event("a@x.io", 9_000));
    assert_eq!(
        prop(&graph, a, "lastSeen"),
        Some(Value::DateTime(ms(9_000)))
    );
}

#[test]
fn priority_is_email_then_phone_then_external_id() {
    let (_dir, graph) = temp_graph();
    let by_email = record(&graph, event(keys(Some("e@x.io"), None, None), "a", 1)).customer_id;
    let by_phone = record(
        &graph,
        event(keys(None, Some("+15550001111"), None), "a", 2),
    )
    .customer_id;
    let by_xid = record(&graph, event(keys(None, None, Some("crm-1")), "a", 3)).customer_id;
    assert_ne!(by_email, by_phone);
    // Email wins over phone and external id.
    let all = record(
        &graph,
        event(
            keys(Some("E@X.IO"), Some("+15550001111"), Some("crm-1")),
            "a",
            4,
        ),
    );
    assert_eq!(all.customer_id, by_email);
    // Phone wins over external id.
    let two = record(
        &graph,
        event(
            keys(Some("new@x.io"), Some("+1 555 000 1111"), Some("crm-1")),
            "a",
            5,
        ),
    );
    assert_eq!(two.customer_id, by_phone);
    assert!(!two.is_new);
    let one = record(
        &graph,
        event(keys(Some("other@x.io"), None, Some("crm-1")), "a", 6),
    );
    assert_eq!(one.customer_id, by_xid);
    assert_eq!(
        graph.snapshot(WS).label_count("Customer").expect("count"),
        3
    );
    assert_valid(&graph);
}

#[test]
fn enrichment_fills_missing_keys_only_when_nobody_holds_them() {
    let (_dir, graph) = temp_graph();
    let a = record(&graph, event(keys(Some("a@x.io"), None, None), "a", 1)).customer_id;
    let b = record(
        &graph,
        event(keys(None, Some("+15550002222"), None), "a", 2),
    )
    .customer_id;
    // a gains an external id (free) but not b's phone (held), and keeps its email.
    let out = record(
        &graph,
        event(
            keys(Some("a@x.io"), Some("+15550002222"), Some("crm-9")),
            "a",
            3,
        ),
    );
    assert_eq!(out.customer_id, a);
    assert_eq!(prop(&graph, a, "externalId"), Some("crm-9".into()));
    assert_eq!(prop(&graph, a, "phone"), None);
    // Existing values are never overwritten, customers never merged.
    record(
        &graph,
        event(keys(None, Some("+15550002222"), Some("crm-9")), "a", 4),
    );
    assert_eq!(prop(&graph, b, "externalId"), None);
    let c = record(
        &graph,
        event(keys(Some("c@x.io"), None, Some("crm-9")), "a", 5),
    );
    // c@x.io is unknown, so the external id decides; a keeps its own email.
    assert_eq!((c.customer_id, c.is_new), (a, false));
    assert_eq!(prop(&graph, a, "email"), Some("a@x.io".into()));
    assert_valid(&graph);
}

#[test]
fn blocked_and_invalid_values_are_never_identity_keys() {
    let (_dir, graph) = temp_graph();
    for blocked in ["", "null", "undefined", "anonymous", "-1", "0000"] {
        let r = graph.record_event(
            WS,
            event(keys(Some(blocked), Some(blocked), Some(blocked)), "a", 1),
        );
        assert!(
            matches!(r, Err(EngineError::NoIdentity)),
            "{blocked:?} was accepted"
        );
    }
    let a = record(&graph, event(keys(Some("null"), None, Some("x-1")), "a", 1));
    let b = record(&graph, event(keys(Some("null"), None, Some("x-2")), "a", 1));
    assert_ne!(
        a.customer_id, b.customer_id,
        "'null' emails must not join customers"
    );
    assert_eq!(prop(&graph, a.customer_id, "email"), None);
    assert_eq!(
        graph.snapshot(WS).label_count("Customer").expect("count"),
        2
    );
}

#[test]
fn a_known_customer_id_is_used_directly() {
    let (_dir, graph) = temp_graph();
    let a = record(&graph, email_event("a@x.io", 1)).customer_id;
    let mut by_id = event(
        IdentityKeys {
            customer_id: Some(a),
            ..Default::default()
        },
        "call",
        2,
    );
    by_id.keys.phone = Some("+15550003333".into());
    let out = record(&graph, by_id);
    assert_eq!(out.customer_id, a);
    assert_eq!(prop(&graph, a, "phone"), Some("+15550003333".into()));
    // An unknown id falls back to the other keys; with none it is refused.
    let unknown = IdentityKeys {
        customer_id: Some(NodeId(987_654)),
        ..Default::default()
    };
    assert!(matches!(
        graph.record_event(WS, event(unknown, "x", 3)),
        Err(EngineError::NoIdentity)
    ));
    let fallback = IdentityKeys {
        customer_id: Some(NodeId(987_654)),
        email: Some("a@x.io".into()),
        ..Default::default()
    };
    assert_eq!(record(&graph, event(fallback, "x", 4)).customer_id, a);
    // A node that is not a customer is not a customer id.
    let tp = record(&graph, email_event("a@x.io", 5)).touchpoint_id;
    let not_customer = IdentityKeys {
        customer_id: Some(tp),
        email: Some("z@x.io".into()),
        ..Default::default()
    };
    assert!(record(&graph, event(not_customer, "x", 6)).is_new);
}

#[test]
fn invalid_events_are_refused_without_side_effects() {
    let (_dir, graph) = temp_graph();
    let mut bad = email_event("a@x.io", 1);
    bad.action = String::new();
    assert!(matches!(
        graph.record_event(WS, bad),
        Err(EngineError::Invalid { .. })
    ));
    let mut bad = email_event("a@x.io", 1);
    bad.campaign_id = Some("c".repeat(300));
    assert!(matches!(
        graph.record_event(WS, bad),
        Err(EngineError::Invalid { .. })
    ));
    assert_eq!(graph.snapshot(WS).node_count().expect("count"), 0);
}

#[test]
fn a_batch_commits_good_items_and_reports_bad_ones() {
    let (_dir, graph) = temp_graph();
    let mut bad = email_event("b@x.io", 2);
    bad.action = String::new();
    let results = graph
        .record_events(
            WS,
            vec![
                email_event("a@x.io", 1),
                bad,
                email_event("a@x.io", 3),
                event(keys(None, None, None), "x", 4),
            ],
        )
        .expect("batch");
    assert!(results[0].is_ok() && results[2].is_ok());
    assert!(matches!(results[1], Err(EngineError::Invalid { .. })));
    assert!(matches!(results[3], Err(EngineError::NoIdentity)));
    let snap = graph.snapshot(WS);
    assert_eq!(
        snap.label_count("Customer").expect("count"),
        1,
        "the bad item's customer was rolled back"
    );
    assert_eq!(snap.label_count("Touchpoint").expect("count"), 2);
    drop(snap);
    assert_valid(&graph);
}

#[test]
fn thirty_two_threads_sending_one_new_email_create_one_customer() {
    let (_dir, graph) = temp_graph();
    let barrier = Arc::new(Barrier::new(32));
    let handles: Vec<_> = (0..32)
        .map(|i| {
            let (graph, barrier) = (graph.clone(), Arc::clone(&barrier));
            std::thread::spawn(move || {
                barrier.wait();
                let email = if i % 2 == 0 {
                    "Race@Example.com"
                } else {
                    " race@example.com"
                };
                graph
                    .record_event(WS, email_event(email, i))
                    .expect("record")
            })
        })
        .collect();
    let outcomes: Vec<_> = handles
        .into_iter()
        .map(|h| h.join().expect("thread"))
        .collect();
    let first = outcomes[0].customer_id;
    assert!(outcomes.iter().all(|o| o.customer_id == first));
    assert_eq!(outcomes.iter().filter(|o| o.is_new).count(), 1);
    let snap = graph.snapshot(WS);
    assert_eq!(snap.label_count("Customer").expect("count"), 1);
    assert_eq!(snap.label_count("Touchpoint").expect("count"), 32);
    assert_eq!(
        snap.degree(first, Direction::Outgoing, Some("HAS_TOUCHPOINT"))
            .expect("degree"),
        32
    );
    drop(snap);
    assert_valid(&graph);
}

#[test]
fn merging_repoints_edges_moves_identity_and_keeps_indexes_exact() {
    let (_dir, graph) = temp_graph();
    let canon = record(&graph, email_event("dup@x.io", 10)).customer_id;
    // A second customer with the same email, as a Cypher CREATE or an import could add.
    let dup = graph
        .write(move |txn| {
            let mut w = txn.workspace(WS);
            let mut p = Properties::new();
            p.insert("email".into(), "DUP@x.io".into());
            p.insert("phone".into(), "+15550004444".into());
            p.insert("lastSeen".into(), Value::DateTime(ms(50)));
            let d = w.create_node(&["Customer"], p)?;
            let t = w.create_node(&["Touchpoint"], Properties::new())?;
            w.create_edge(d, t, "HAS_TOUCHPOINT", Properties::new())?;
            w.create_edge(canon, d, "KNOWS", Properties::new())?;
            Ok::<_, EngineError>(d)
        })
        .expect("write");
    // Resolution keeps answering with the indexed holder.
    assert_eq!(
        record(&graph, email_event("dup@x.io", 11)).customer_id,
        canon
    );
    // The duplicate's phone was free, so it holds it.
    assert_eq!(
        record(
            &graph,
            event(keys(None, Some("+15550004444"), None), "a", 12)
        )
        .customer_id,
        dup
    );
    let merged = graph
        .write(move |txn| txn.workspace(WS).merge_nodes(canon, dup))
        .expect("merge");
    assert_eq!(merged.edges_moved, 3);
    let snap = graph.snapshot(WS);
    assert!(snap.node(dup).expect("read").is_none());
    assert_eq!(snap.label_count("Customer").expect("count"), 1);
    assert_eq!(
        snap.degree(canon, Direction::Outgoing, Some("HAS_TOUCHPOINT"))
            .expect("degree"),
        4
    );
    assert_eq!(
        snap.degree(canon, Direction::Outgoing, Some("KNOWS"))
            .expect("degree"),
        1,
        "became a self-loop"
    );
    let c = snap.node(canon).expect("read").expect("node");
    assert_eq!(c.get("phone"), Some(&"+15550004444".into()));
    assert_eq!(c.get("lastSeen"), Some(&Value::DateTime(ms(50))));
    drop(snap);
    assert_eq!(
        record(
            &graph,
            event(keys(None, Some("+15550004444"), None), "a", 13)
        )
        .customer_id,
        canon
    );
    assert_valid(&graph);
}

/// Parses the generator's `YYYY-MM-DDTHH:MM:SS.mmmZ` into microseconds.
fn iso_micros(s: &str) -> i64 {
    let t = time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
        .expect("timestamp");
    (t.unix_timestamp_nanos() / 1000) as i64
}

fn opt_str(v: &serde_json::Value, k: &str) -> Option<String> {
    v.get(k).and_then(|x| x.as_str()).map(str::to_owned)
}

#[test]
fn replaying_the_generated_workload_matches_the_reference_resolver() {
    let tools = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tools/bench");
    let out = tempfile::tempdir().expect("tempdir");
    let run = |args: &[&str]| {
        let st = Command::new("python3")
            .args(args)
            .current_dir(&tools)
            .output()
            .expect("python3 runs");
        assert!(
            st.status.success(),
            "{}",
            String::from_utf8_lossy(&st.stderr)
        );
    };
    let dir = out.path().to_str().expect("utf-8 path");
    run(&[
        "gen.py",
        "--events",
        "30000",
        "--customers",
        "3000",
        "--opportunities",
        "10",
        "--out",
        dir,
    ]);
    let events = out.path().join("events.jsonl");
    let expected_path = out.path().join("customers.jsonl");
    run(&[
        "ref_resolve.py",
        events.to_str().expect("path"),
        "--customers",
        expected_path.to_str().expect("path"),
    ]);

    let (_db, graph) = temp_graph();
    let text = std::fs::read_to_string(&events).expect("events");
    let inputs: Vec<EventInput> = text
        .lines()
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line).expect("json");
            EventInput {
                keys: IdentityKeys {
                    customer_id: None,
                    email: opt_str(&v, "email"),
                    phone: opt_str(&v, "phone"),
                    external_id: opt_str(&v, "externalId"),
                },
                action: opt_str(&v, "event").expect("event"),
                channel: opt_str(&v, "channel"),
                ts: iso_micros(&opt_str(&v, "timestamp").expect("timestamp")),
                campaign_id: opt_str(&v, "campaignId"),
                properties: Properties::new(),
                outbound: false,
            }
        })
        .collect();
    for chunk in inputs.chunks(500) {
        for r in graph.record_events(WS, chunk.to_vec()).expect("batch") {
            r.expect("event recorded");
        }
    }

    let snap = graph.snapshot(WS);
    let customers = snap.label_scan("Customer").expect("scan"); // ascending id = creation order
    let expected: Vec<serde_json::Value> = std::fs::read_to_string(&expected_path)
        .expect("reference")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    assert_eq!(customers.len(), expected.len(), "customer count");
    let text_prop =
        |n: &svc_engine::Node, k: &str| n.get(k).and_then(|v| v.as_str()).map(str::to_owned);
    for (id, want) in customers.iter().zip(&expected) {
        let n = snap.node(*id).expect("read").expect("node");
        let touchpoints = snap
            .degree(*id, Direction::Outgoing, Some("HAS_TOUCHPOINT"))
            .expect("degree");
        let last_seen = match n.get("lastSeen") {
            Some(Value::DateTime(us)) => us / 1000,
            other => panic!("lastSeen {other:?}"),
        };
        assert_eq!(
            text_prop(&n, "email"),
            opt_str(want, "email"),
            "email of {want}"
        );
        assert_eq!(
            text_prop(&n, "phone"),
            opt_str(want, "phone"),
            "phone of {want}"
        );
        assert_eq!(
            text_prop(&n, "externalId"),
            opt_str(want, "externalId"),
            "external id of {want}"
        );
        assert_eq!(
            touchpoints,
            want["touchpoints"].as_u64().expect("count"),
            "touchpoints of {want}"
        );
        assert_eq!(
            last_seen,
            want["lastSeen"].as_i64().expect("ms"),
            "lastSeen of {want}"
        );
    }
    let campaigns: HashMap<String, ()> = inputs
        .iter()
        .filter_map(|e| e.campaign_id.clone())
        .map(|c| (c, ()))
        .collect();
    assert_eq!(
        snap.label_count("Campaign").expect("count"),
        campaigns.len() as u64
    );
    assert_eq!(
        snap.label_count("Touchpoint").expect("count"),
        inputs.len() as u64
    );
    drop(snap);
    assert_valid(&graph);
}
