//! Declared indexes: declare, backfill in batches, writes during the backfill, a restart in the
//! middle of it, the moment the planner may use it, and dropping it.

mod common;

use std::ops::Bound;

use common::*;
use svc_engine::catalog::{Declared, IndexSpec, IndexState};
use svc_engine::{EngineError, GraphRead, GraphWrite, IndexKind, NodeId, Order, Value};

fn spec(name: Option<&str>, label: &str, property: &str, kind: IndexKind) -> IndexSpec {
    IndexSpec {
        name: name.map(str::to_owned),
        label: label.into(),
        property: property.into(),
        kind,
        if_not_exists: false,
    }
}

/// `n` Touchpoints with `action` = "a{i % 3}" and `weight` = i.
fn seed(graph: &svc_engine::Graph, n: i64) -> Vec<NodeId> {
    graph
        .write(move |tx| {
            let mut w = tx.workspace(WS);
            (0..n)
                .map(|i| {
                    w.create_node(
                        &["Touchpoint"],
                        [
                            ("action".to_owned(), Value::from(format!("a{}", i % 3))),
                            ("weight".to_owned(), Value::Int(i)),
                        ]
                        .into(),
                    )
                })
                .collect::<Result<Vec<_>, EngineError>>()
        })
        .expect("seed")
}

fn state_of(graph: &svc_engine::Graph, name: &str) -> Option<IndexState> {
    graph
        .indexes(WS)
        .expect("indexes")
        .into_iter()
        .find(|i| i.name == name)
        .map(|i| i.state)
}

fn seek(graph: &svc_engine::Graph, value: &str) -> Option<usize> {
    graph
        .snapshot(WS)
        .index_seek("Touchpoint", "action", &Value::from(value))
        .expect("seek")
        .map(|ids| ids.len())
}

#[test]
fn declared_index_backfills_in_batches_and_is_used_only_once_online() {
    let (_dir, graph) = temp_graph();
    let ids = seed(&graph, 25);
    assert_eq!(graph.snapshot(WS).index_kind("Touchpoint", "action"), None);
    let created = graph
        .declare_index(
            WS,
            spec(
                Some("tp_action"),
                "Touchpoint",
                "action",
                IndexKind::Equality,
            ),
        )
        .expect("declare");
    assert_eq!(created, Declared::Created("tp_action".into()));
    assert_eq!(
        state_of(&graph, "tp_action"),
        Some(IndexState::Populating { next: 0 })
    );
    // Not usable while populating, even though new writes are already maintained.
    let before = graph.snapshot(WS);
    assert_eq!(before.index_kind("Touchpoint", "action"), None);
    assert_eq!(seek(&graph, "a0"), None);

    // One batch, then a write during the backfill: a new node, a changed value on a node the
    // backfill has not reached, and a deleted node it has not reached.
    assert!(graph.build_indexes_step(10).expect("step"));
    assert!(matches!(
        state_of(&graph, "tp_action"),
        Some(IndexState::Populating { next }) if next > 0
    ));
    let (late, changed, deleted) = (ids[20], ids[21], ids[22]);
    graph
        .write(move |tx| {
            let mut w = tx.workspace(WS);
            w.create_node(
                &["Touchpoint"],
                [("action".to_owned(), Value::from("a0"))].into(),
            )?;
            w.set_node_property(changed, "action", Value::from("zz"))?;
            w.delete_node(deleted)?;
            w.set_node_property(late, "weight", Value::Int(-1))
        })
        .expect("write during backfill");
    assert_valid(&graph);
    while graph.build_indexes_step(10).expect("step") {}
    assert_eq!(state_of(&graph, "tp_action"), Some(IndexState::Online));
    // The snapshot taken before it came online still does not use it.
    assert_eq!(before.index_kind("Touchpoint", "action"), None);
    assert_eq!(
        graph.snapshot(WS).index_kind("Touchpoint", "action"),
        Some(IndexKind::Equality)
    );
    // 25 seeded, i % 3 == 0 for 9 of them (ids 0..25 step 3), minus the deleted one (22 %
    // 3 == 1: not a0), plus the new node; the changed one (21: a0) moved to zz.
    assert_eq!(seek(&graph, "a0"), Some(9 - 1 + 1));
    assert_eq!(seek(&graph, "zz"), Some(1));
    let stats = graph
        .snapshot(WS)
        .index_stats("Touchpoint", "action")
        .expect("stats")
        .expect("indexed");
    assert_eq!(stats.strings, 25);
    assert_valid(&graph);
}

#[test]
fn a_restart_in_the_middle_of_a_backfill_resumes_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let graph = reopen(dir.path());
        seed(&graph, 30);
        graph
            .declare_index(WS, spec(None, "Touchpoint", "weight", IndexKind::Ordered))
            .expect("declare");
        assert!(graph.build_indexes_step(7).expect("step"));
    }
    let graph = reopen(dir.path());
    assert!(matches!(
        state_of(&graph, "index_Touchpoint_weight"),
        Some(IndexState::Populating { next }) if next > 0
    ));
    graph
        .spawn_index_builder()
        .join()
        .expect("builder thread")
        .expect("build");
    assert_eq!(
        state_of(&graph, "index_Touchpoint_weight"),
        Some(IndexState::Online)
    );
    let top = graph
        .snapshot(WS)
        .index_range(
            "Touchpoint",
            "weight",
            Bound::Included(&Value::Int(10)),
            Bound::Unbounded,
            Order::Descending,
            Some(3),
        )
        .expect("range")
        .expect("ordered index");
    let weights: Vec<Value> = top
        .iter()
        .map(|id| node(&graph, WS, *id).properties["weight"].clone())
        .collect();
    assert_eq!(
        weights,
        vec![Value::Int(29), Value::Int(28), Value::Int(27)]
    );
    assert_valid(&graph);
}

#[test]
fn declaring_checks_names_and_dropping_removes_every_entry() {
    let (_dir, graph) = temp_graph();
    seed(&graph, 12);
    let built_in = spec(None, "Customer", "email", IndexKind::Equality);
    assert!(graph.declare_index(WS, built_in.clone()).is_err());
    let again = IndexSpec {
        if_not_exists: true,
        ..built_in
    };
    assert_eq!(
        graph.declare_index(WS, again).expect("if not exists"),
        Declared::Exists("builtin_Customer_email".into())
    );
    graph
        .declare_index(
            WS,
            spec(Some("w"), "Touchpoint", "weight", IndexKind::Ordered),
        )
        .expect("declare");
    assert!(graph
        .declare_index(
            WS,
            spec(Some("w"), "Touchpoint", "action", IndexKind::Equality)
        )
        .is_err());
    while graph.build_indexes_step(5).expect("step") {}
    // Other workspaces do not see it.
    assert!(graph
        .indexes(OTHER_WS)
        .expect("indexes")
        .iter()
        .all(|i| i.built_in));
    assert!(graph
        .drop_index(WS, "builtin_Customer_email".into(), false)
        .is_err());
    assert!(graph.drop_index(WS, "nope".into(), false).is_err());
    assert!(!graph
        .drop_index(WS, "nope".into(), true)
        .expect("if exists"));
    assert!(graph.drop_index(WS, "w".into(), false).expect("drop"));
    assert_eq!(state_of(&graph, "w"), Some(IndexState::Dropping));
    assert_eq!(graph.snapshot(WS).index_kind("Touchpoint", "weight"), None);
    // Writes while dropping no longer maintain it.
    graph
        .write(|tx| {
            tx.workspace(WS).create_node(
                &["Touchpoint"],
                [("weight".to_owned(), Value::Int(99))].into(),
            )
        })
        .expect("write");
    assert_valid(&graph);
    while graph.build_indexes_step(5).expect("step") {}
    assert_eq!(state_of(&graph, "w"), None);
    assert_valid(&graph);
    // The same target can be declared again, and comes back complete.
    graph
        .declare_index(
            WS,
            spec(Some("w2"), "Touchpoint", "weight", IndexKind::Ordered),
        )
        .expect("declare again");
    while graph.build_indexes_step(5).expect("step") {}
    let all = graph
        .snapshot(WS)
        .index_range(
            "Touchpoint",
            "weight",
            Bound::Unbounded,
            Bound::Unbounded,
            Order::Ascending,
            None,
        )
        .expect("range")
        .expect("ordered");
    assert_eq!(all.len(), 13);
    assert_valid(&graph);
}
