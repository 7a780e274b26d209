//! Every graph operation through the public API, checked against reads and `validate()`.

mod common;

use std::ops::Bound;

use common::*;
use svc_engine::{
    Direction, EngineError, GraphRead, GraphWrite, IndexKind, Order, Properties, Value, WorkspaceId,
};

fn props(pairs: &[(&str, Value)]) -> Properties {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

#[test]
fn nodes_edges_and_properties_round_trip() {
    let (_dir, graph) = temp_graph();
    let (a, b, e) = graph
        .write(|txn| {
            let mut w = txn.workspace(WS);
            let a = w.create_node(
                &["Customer", "Vip"],
                props(&[
                    ("name", "Ada".into()),
                    ("score", Value::Float(0.9)),
                    ("tags", Value::List(vec!["a".into(), Value::Int(2)])),
                    ("seen", Value::DateTime(5)),
                    ("ok", Value::Bool(true)),
                    ("gone", Value::Null),
                ]),
            )?;
            let b = w.create_node(&["Campaign"], props(&[("campaignId", "c1".into())]))?;
            let e = w.create_edge(a, b, "LIKES", props(&[("weight", Value::Int(3))]))?;
            Ok::<_, EngineError>((a, b, e))
        })
        .expect("write");
    let snap = graph.snapshot(WS);
    let na = snap.node(a).expect("read").expect("exists");
    assert_eq!(na.labels, vec!["Customer", "Vip"]);
    assert_eq!(na.get("name"), Some(&Value::from("Ada")));
    assert_eq!(na.get("gone"), None, "null properties are not stored");
    let edge = snap.edge(e).expect("read").expect("exists");
    assert_eq!(
        (edge.start, edge.end, edge.rel_type.as_str()),
        (a, b, "LIKES")
    );
    assert_eq!(edge.properties.get("weight"), Some(&Value::Int(3)));
    let out = snap
        .adjacent(a, Direction::Outgoing, None)
        .expect("adjacent");
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].neighbour, out[0].edge), (b, e));
    let inc = snap
        .adjacent(b, Direction::Incoming, Some("LIKES"))
        .expect("adjacent");
    assert_eq!(inc[0].neighbour, a);
    assert!(snap
        .adjacent(b, Direction::Incoming, Some("LIKE"))
        .expect("adjacent")
        .is_empty());
    assert_eq!(
        snap.degree(a, Direction::Outgoing, Some("LIKES"))
            .expect("degree"),
        1
    );
    assert_eq!(snap.label_count("Customer").expect("count"), 1);
    assert_eq!(snap.label_count("Vip").expect("count"), 1);
    assert_eq!(snap.label_scan("Campaign").expect("scan"), vec![b]);
    assert!(snap.has_label(a, "Vip").expect("has_label"));
    assert!(!snap.has_label(b, "Vip").expect("has_label"));
    assert!(!snap
        .has_label(svc_engine::NodeId(424_242), "Vip")
        .expect("has_label"));
    assert_eq!(snap.node_count().expect("count"), 2);
    assert_eq!(snap.all_nodes().expect("all"), vec![a, b]);
    drop(snap);
    assert_valid(&graph);
}

#[test]
fn updates_keep_labels_and_indexes_exact() {
    let (_dir, graph) = temp_graph();
    let a = graph
        .write(|txn| {
            txn.workspace(WS).create_node(
                &["Customer"],
                props(&[("name", "Ada".into()), ("score", Value::Int(5))]),
            )
        })
        .expect("create");
    graph
        .write(move |txn| {
            let mut w = txn.workspace(WS);
            w.set_node_property(a, "score", Value::Float(7.5))?;
            w.set_node_property(a, "name", Value::Null)?;
            w.add_node_label(a, "Vip")?;
            w.remove_node_label(a, "Customer")?;
            w.add_node_label(a, "Customer")?;
            Ok::<_, EngineError>(())
        })
        .expect("update");
    let snap = graph.snapshot(WS);
    assert_eq!(
        snap.index_seek("Customer", "name", &"Ada".into())
            .expect("seek"),
        Some(vec![])
    );
    assert_eq!(
        snap.index_seek("Customer", "score", &Value::Int(5))
            .expect("seek"),
        Some(vec![])
    );
    assert_eq!(
        snap.index_seek("Customer", "score", &Value::Float(7.5))
            .expect("seek"),
        Some(vec![a])
    );
    assert_eq!(snap.label_scan("Vip").expect("scan"), vec![a]);
    drop(snap);
    graph
        .write(move |txn| {
            txn.workspace(WS)
                .replace_node_properties(a, props(&[("name", "Grace".into())]))
        })
        .expect("replace");
    let snap = graph.snapshot(WS);
    assert_eq!(
        snap.index_seek("Customer", "name", &"Grace".into())
            .expect("seek"),
        Some(vec![a])
    );
    assert_eq!(
        snap.index_seek("Customer", "score", &Value::Float(7.5))
            .expect("seek"),
        Some(vec![])
    );
    drop(snap);
    assert_valid(&graph);
}

#[test]
fn ordered_indexes_answer_ranges_and_top_k() {
    let (_dir, graph) = temp_graph();
    let ids = graph
        .write(|txn| {
            let mut w = txn.workspace(WS);
            let mut ids = Vec::new();
            for (i, score) in [0.5, 0.1, 0.9, 0.3, 0.7].iter().enumerate() {
                ids.push(w.create_node(
                    &["Customer"],
                    props(&[("score", Value::Float(*score)), ("n", Value::Int(i as i64))]),
                )?);
            }
            // A string score and a missing score never appear in numeric ranges.
            w.create_node(&["Customer"], props(&[("score", "high".into())]))?;
            w.create_node(&["Customer"], Properties::new())?;
            Ok::<_, EngineError>(ids)
        })
        .expect("write");
    let snap = graph.snapshot(WS);
    assert_eq!(
        snap.index_kind("Customer", "score"),
        Some(IndexKind::Ordered)
    );
    assert_eq!(
        snap.index_kind("Customer", "name"),
        Some(IndexKind::Equality)
    );
    assert_eq!(snap.index_kind("Customer", "favourite"), None);
    let half = Value::Float(0.5);
    let range = |lo, hi, order, limit| {
        snap.index_range("Customer", "score", lo, hi, order, limit)
            .expect("range")
            .expect("indexed")
    };
    assert_eq!(
        range(
            Bound::Included(&half),
            Bound::Unbounded,
            Order::Ascending,
            None
        ),
        vec![ids[0], ids[4], ids[2]]
    );
    assert_eq!(
        range(
            Bound::Excluded(&half),
            Bound::Unbounded,
            Order::Ascending,
            None
        ),
        vec![ids[4], ids[2]]
    );
    assert_eq!(
        range(
            Bound::Unbounded,
            Bound::Excluded(&half),
            Order::Descending,
            None
        ),
        vec![ids[3], ids[1]]
    );
    let int_top = Value::Int(1);
    assert_eq!(
        range(
            Bound::Unbounded,
            Bound::Included(&int_top),
            Order::Descending,
            Some(2)
        ),
        vec![ids[2], ids[4]]
    );
    assert_eq!(
        range(
            Bound::Included(&Value::Float(0.8)),
            Bound::Included(&Value::Float(0.2)),
            Order::Ascending,
            None
        ),
        vec![]
    );
    assert_eq!(
        range(
            Bound::Included(&Value::from("a")),
            Bound::Included(&Value::Int(2)),
            Order::Ascending,
            None
        ),
        vec![]
    );
    assert_eq!(
        snap.index_range(
            "Customer",
            "name",
            Bound::Unbounded,
            Bound::Unbounded,
            Order::Ascending,
            None
        )
        .expect("ok"),
        None
    );
}

#[test]
fn delete_refuses_connected_nodes_and_detach_delete_removes_edges() {
    let (_dir, graph) = temp_graph();
    let (a, b) = graph
        .write(|txn| {
            let mut w = txn.workspace(WS);
            let a = w.create_node(&["Customer"], props(&[("email", "a@x.io".into())]))?;
            let b = w.create_node(&["Touchpoint"], props(&[("ts", Value::DateTime(1))]))?;
            w.create_edge(a, b, "HAS_TOUCHPOINT", Properties::new())?;
            w.create_edge(a, a, "SELF", Properties::new())?;
            Ok::<_, EngineError>((a, b))
        })
        .expect("write");
    let refused = graph.write(move |txn| txn.workspace(WS).delete_node(a));
    assert!(matches!(refused, Err(EngineError::NodeHasEdges(n)) if n == a));
    graph
        .write(move |txn| txn.workspace(WS).detach_delete_node(a))
        .expect("detach delete");
    let snap = graph.snapshot(WS);
    assert!(snap.node(a).expect("read").is_none());
    assert!(snap
        .adjacent(b, Direction::Incoming, None)
        .expect("adjacent")
        .is_empty());
    assert_eq!(snap.label_count("Customer").expect("count"), 0);
    drop(snap);
    graph
        .write(move |txn| txn.workspace(WS).delete_node(b))
        .expect("delete");
    assert_eq!(graph.snapshot(WS).node_count().expect("count"), 0);
    assert_valid(&graph);
}

#[test]
fn edges_can_be_updated_and_deleted() {
    let (_dir, graph) = temp_graph();
    let (a, b, e) = graph
        .write(|txn| {
            let mut w = txn.workspace(WS);
            let a = w.create_node(&["Opportunity"], Properties::new())?;
            let b = w.create_node(&["Stage"], Properties::new())?;
            let e = w.create_edge(a, b, "AT_STAGE", Properties::new())?;
            w.set_edge_property(e, "since", Value::Int(3))?;
            Ok::<_, EngineError>((a, b, e))
        })
        .expect("write");
    assert_eq!(
        graph
            .snapshot(WS)
            .edge(e)
            .expect("read")
            .expect("edge")
            .properties
            .get("since"),
        Some(&Value::Int(3))
    );
    graph
        .write(move |txn| {
            let mut w = txn.workspace(WS);
            w.replace_edge_properties(e, props(&[("note", "moved".into())]))?;
            w.delete_edge(e)
        })
        .expect("delete edge");
    let snap = graph.snapshot(WS);
    assert!(snap.edge(e).expect("read").is_none());
    assert_eq!(
        snap.degree(a, Direction::Outgoing, None).expect("degree"),
        0
    );
    assert_eq!(
        snap.degree(b, Direction::Incoming, None).expect("degree"),
        0
    );
    drop(snap);
    let missing = graph.write(move |txn| {
        txn.workspace(WS)
            .create_edge(a, svc_engine::NodeId(999_999), "X", Properties::new())
    });
    assert!(matches!(missing, Err(EngineError::NodeNotFound(_))));
    assert_valid(&graph);
}

#[test]
fn workspaces_never_see_each_other() {
    let (_dir, graph) = temp_graph();
    let a = graph
        .write(|txn| {
            txn.workspace(WS)
                .create_node(&["Customer"], props(&[("name", "Ada".into())]))
        })
        .expect("write");
    let other = graph.snapshot(OTHER_WS);
    assert!(other.node(a).expect("read").is_none());
    assert_eq!(other.label_count("Customer").expect("count"), 0);
    assert_eq!(
        other
            .index_seek("Customer", "name", &"Ada".into())
            .expect("seek"),
        Some(vec![])
    );
    let cross = graph.write(move |txn| {
        txn.workspace(OTHER_WS)
            .set_node_property(a, "x", Value::Int(1))
    });
    assert!(matches!(cross, Err(EngineError::NodeNotFound(_))));
    let cross_edge = graph.write(move |txn| {
        let b = txn
            .workspace(OTHER_WS)
            .create_node(&["Customer"], Properties::new())?;
        txn.workspace(OTHER_WS)
            .create_edge(b, a, "X", Properties::new())
    });
    assert!(matches!(cross_edge, Err(EngineError::NodeNotFound(n)) if n == a));
    assert_eq!(
        graph.snapshot(OTHER_WS).node_count().expect("count"),
        0,
        "the failed closure left nothing"
    );
}

#[test]
fn a_failed_or_panicking_closure_writes_nothing_and_others_in_its_group_commit() {
    let (_dir, graph) = temp_graph();
    let failed: Result<(), EngineError> = graph.write(|txn| {
        txn.workspace(WS)
            .create_node(&["Customer"], Properties::new())?;
        Err(EngineError::NoIdentity)
    });
    assert!(failed.is_err());
    let panicked: Result<(), EngineError> = graph.write(|txn| {
        txn.workspace(WS)
            .create_node(&["Customer"], Properties::new())?;
        panic!("boom");
    });
    assert!(matches!(panicked, Err(EngineError::Panicked(m)) if m == "boom"));
    let ok = graph.write(|txn| {
        txn.workspace(WS)
            .create_node(&["Customer"], Properties::new())
    });
    assert!(ok.is_ok());
    assert_eq!(
        graph.snapshot(WS).label_count("Customer").expect("count"),
        1
    );
    assert_valid(&graph);
}

#[test]
fn snapshots_keep_their_moment_while_writes_continue() {
    let (_dir, graph) = temp_graph();
    let a = graph
        .write(|txn| {
            txn.workspace(WS)
                .create_node(&["Customer"], props(&[("score", Value::Int(1))]))
        })
        .expect("write");
    let before = graph.snapshot(WS);
    graph
        .write(move |txn| {
            let mut w = txn.workspace(WS);
            w.create_node(&["Customer"], Properties::new())?;
            w.set_node_property(a, "score", Value::Int(2))
        })
        .expect("write");
    assert_eq!(before.label_count("Customer").expect("count"), 1);
    assert_eq!(
        before.node(a).expect("read").expect("node").get("score"),
        Some(&Value::Int(1))
    );
    assert_eq!(
        before
            .index_seek("Customer", "score", &Value::Int(2))
            .expect("seek"),
        Some(vec![])
    );
    let after = graph.snapshot(WS);
    assert_eq!(after.label_count("Customer").expect("count"), 2);
    assert_eq!(
        after
            .index_seek("Customer", "score", &Value::Int(2))
            .expect("seek"),
        Some(vec![a])
    );
}

#[test]
fn data_survives_reopen_with_indexes_intact() {
    let dir = tempfile::tempdir().expect("tempdir");
    let a = {
        let graph = reopen(dir.path());
        let a = graph
            .write(|txn| {
                let mut w = txn.workspace(WS);
                let a = w.create_node(&["Customer"], props(&[("name", "Ada".into())]))?;
                let b = w.create_node(&["Touchpoint"], Properties::new())?;
                w.create_edge(a, b, "HAS_TOUCHPOINT", Properties::new())?;
                Ok::<_, EngineError>(a)
            })
            .expect("write");
        graph.close();
        a
    };
    let graph = reopen(dir.path());
    assert_eq!(
        graph.format_version().expect("version"),
        Some(svc_engine::FORMAT_VERSION)
    );
    let snap = graph.snapshot(WS);
    assert_eq!(snap.label_count("Customer").expect("count"), 1);
    assert_eq!(
        snap.index_seek("Customer", "name", &"Ada".into())
            .expect("seek"),
        Some(vec![a])
    );
    assert_eq!(
        snap.degree(a, Direction::Outgoing, None).expect("degree"),
        1
    );
    // New ids never collide with old ones after a reopen.
    drop(snap);
    let b = graph
        .write(|txn| {
            txn.workspace(WS)
                .create_node(&["Customer"], Properties::new())
        })
        .expect("write");
    assert!(b.0 > a.0 + 1);
    assert_valid(&graph);
}

#[test]
fn bad_names_and_values_are_refused() {
    let (_dir, graph) = temp_graph();
    let long = "x".repeat(256);
    for labels in [vec![""], vec![long.as_str()]] {
        let labels: Vec<String> = labels.into_iter().map(str::to_owned).collect();
        let r = graph.write(move |txn| {
            let l: Vec<&str> = labels.iter().map(String::as_str).collect();
            txn.workspace(WS).create_node(&l, Properties::new())
        });
        assert!(matches!(r, Err(EngineError::Invalid { .. })));
    }
    let mut deep = Value::Null;
    for _ in 0..50 {
        deep = Value::List(vec![deep]);
    }
    let r = graph.write(move |txn| {
        txn.workspace(WS)
            .create_node(&["X"], props(&[("deep", deep)]))
    });
    assert!(matches!(r, Err(EngineError::Invalid { .. })));
    assert_eq!(
        graph.snapshot(WorkspaceId(7)).node_count().expect("count"),
        0
    );
}

#[test]
fn close_and_wait_returns_once_a_running_call_lets_go_and_the_directory_reopens() {
    let (dir, graph) = temp_graph();
    graph
        .write(|txn| {
            txn.workspace(WS).create_node(&["Customer"], props(&[]))?;
            Ok::<(), EngineError>(())
        })
        .expect("write");
    // A call still running elsewhere holds its own handle for a while.
    let held = graph.clone();
    let call = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(200));
        drop(held);
    });
    assert!(graph.close_and_wait(std::time::Duration::from_secs(30)));
    call.join().expect("call thread");
    let again = reopen(dir.path());
    assert_eq!(
        again.snapshot(WS).label_count("Customer").expect("count"),
        1
    );
}

#[test]
fn close_and_wait_gives_up_after_its_timeout() {
    let (_dir, graph) = temp_graph();
    let held = graph.clone();
    assert!(!graph.close_and_wait(std::time::Duration::from_millis(50)));
    drop(held);
}
