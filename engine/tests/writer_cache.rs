//! The writer's read cache (node records, identity entries) never answers with a stale or
//! rolled-back value: generic writes, failed closures and merges are seen by the next event.

mod common;

use common::*;
use svc_engine::{EngineError, GraphRead, GraphWrite, Value};

#[test]
fn events_see_generic_writes_and_not_rolled_back_ones() {
    let (_dir, graph) = temp_graph();
    let first = graph
        .record_event(WS, email_event("a@x.io", 1))
        .expect("event");
    // The customer's record and identity entry are now cached by the writer.
    let again = graph
        .record_event(WS, email_event("a@x.io", 2))
        .expect("event");
    assert_eq!(again.customer_id, first.customer_id);

    // A generic write changes the email: the old key no longer names the customer.
    let c = first.customer_id;
    graph
        .write(move |txn| {
            txn.workspace(WS)
                .set_node_property(c, "email", Value::String("b@x.io".into()))
        })
        .expect("set email");
    let by_new = graph
        .record_event(WS, email_event("b@x.io", 3))
        .expect("event");
    assert_eq!(by_new.customer_id, c);
    assert!(!by_new.is_new);
    let by_old = graph
        .record_event(WS, email_event("a@x.io", 4))
        .expect("event");
    assert!(by_old.is_new, "the released email makes a new customer");

    // A closure that changes the email and then fails leaves no trace, cached or not.
    let failed: Result<(), EngineError> = graph.write(move |txn| {
        txn.workspace(WS)
            .set_node_property(c, "email", Value::String("c@x.io".into()))?;
        Err(EngineError::NoIdentity)
    });
    assert!(failed.is_err());
    let after = graph
        .record_event(WS, email_event("b@x.io", 5))
        .expect("event");
    assert_eq!(after.customer_id, c);
    let fresh = graph
        .record_event(WS, email_event("c@x.io", 6))
        .expect("event");
    assert!(fresh.is_new);

    // A merge moves identity keys; the duplicate's key now answers with the canonical node.
    let dup = fresh.customer_id;
    graph
        .write(move |txn| txn.workspace(WS).merge_nodes(c, dup))
        .expect("merge");
    let merged = graph
        .record_event(WS, email_event("c@x.io", 7))
        .expect("event");
    assert_eq!(merged.customer_id, c);
    let snap = graph.snapshot(WS);
    assert!(snap.node(dup).expect("read").is_none());
    assert_valid(&graph);
}

#[test]
fn concurrent_batches_resolve_like_one_stream() {
    let (_dir, graph) = temp_graph();
    // Eight threads, each recording events of its own 50 people in batches while the
    // pipeline overlaps groups; every person ends as exactly one customer.
    std::thread::scope(|s| {
        for t in 0..8 {
            let graph = graph.clone();
            s.spawn(move || {
                for round in 0..20 {
                    let batch = (0..50)
                        .map(|p| email_event(&format!("p{t}-{p}@x.io"), round * 100 + p))
                        .collect();
                    for r in graph.record_events(WS, batch).expect("batch") {
                        r.expect("event");
                    }
                }
            });
        }
    });
    let snap = graph.snapshot(WS);
    assert_eq!(snap.label_count("Customer").expect("count"), 400);
    assert_eq!(snap.label_count("Touchpoint").expect("count"), 8 * 20 * 50);
    assert_valid(&graph);
}
