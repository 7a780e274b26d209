//! The writer's counters (per-node, per-type degrees and per-index value-type counts) and the
//! snapshot reads built on them (`degree`, `count_adjacent`, `index_stats`,
//! `scan_label_values`), checked against brute force over the same snapshot after random
//! sequences of every kind of write, and by `validate()`.

mod common;

use common::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use svc_engine::{
    Direction, EngineError, GraphRead, GraphWrite, IndexStats, NodeId, Properties, Snapshot, Value,
    WorkspaceId,
};

const LABELS: [&str; 4] = ["Customer", "Touchpoint", "Campaign", "Lead"];
const TYPES: [&str; 3] = ["HAS_TOUCHPOINT", "INFLUENCED_BY", "REFERRED"];

fn random_value(rng: &mut StdRng) -> Value {
    match rng.gen_range(0..8) {
        0 => Value::Null,
        1 => Value::Bool(rng.gen()),
        2 => Value::Int(rng.gen_range(-5..5)),
        3 => Value::Float(rng.gen_range(-2.0..2.0)),
        4 => Value::Float(f64::NAN),
        5 => Value::DateTime(rng.gen_range(0..1_000)),
        6 => Value::String(format!("s{}", rng.gen_range(0..4))),
        _ => Value::List(vec![Value::Int(1)]),
    }
}

fn random_props(rng: &mut StdRng) -> Properties {
    let mut p = Properties::new();
    for key in ["score", "lastSeen", "ts", "action", "name"] {
        if rng.gen_bool(0.6) {
            p.insert(key.to_owned(), random_value(rng));
        }
    }
    p
}

/// One random write; failures (missing nodes, connected deletes) are part of the test.
fn random_write(graph: &svc_engine::Graph, ws: WorkspaceId, rng: &mut StdRng, nodes: &[NodeId]) {
    let pick = |rng: &mut StdRng| nodes[rng.gen_range(0..nodes.len())];
    let op = rng.gen_range(0..10);
    let (a, b) = (pick(rng), pick(rng));
    let labels: Vec<&str> = LABELS
        .iter()
        .copied()
        .filter(|_| rng.gen_bool(0.4))
        .collect();
    let rel = TYPES[rng.gen_range(0..TYPES.len())];
    let props = random_props(rng);
    let (key, value) = (
        ["score", "ts", "name"][rng.gen_range(0..3)],
        random_value(rng),
    );
    let label = LABELS[rng.gen_range(0..LABELS.len())];
    let fail = rng.gen_bool(0.1);
    let _ = graph.write(move |txn| -> Result<(), EngineError> {
        let mut w = txn.workspace(ws);
        match op {
            0 => {
                w.create_node(&labels, props)?;
            }
            1..=3 => {
                w.create_edge(a, b, rel, Properties::new())?;
            }
            4 => w.set_node_property(a, key, value)?,
            5 => w.add_node_label(a, label)?,
            6 => w.remove_node_label(a, label)?,
            7 => {
                if let Some(e) = w.adjacent(a, Direction::Outgoing, None)?.first() {
                    w.delete_edge(e.edge)?;
                }
            }
            8 => w.detach_delete_node(a)?,
            _ => {
                w.merge_nodes(a, b)?;
            }
        }
        if fail {
            // Rolled back: the counters must not keep any of it.
            return Err(EngineError::NoIdentity);
        }
        Ok(())
    });
}

fn brute_stats(snap: &Snapshot<'_>, label: &str, property: &str) -> IndexStats {
    let mut s = IndexStats::default();
    for id in snap.label_scan(label).expect("scan") {
        match snap
            .node(id)
            .expect("read")
            .and_then(|n| n.get(property).cloned())
        {
            Some(Value::Bool(_)) => s.booleans += 1,
            Some(Value::Int(_)) => s.numbers += 1,
            Some(Value::Float(f)) if !f.is_nan() => s.numbers += 1,
            Some(Value::DateTime(_)) => s.datetimes += 1,
            Some(Value::String(_)) => s.strings += 1,
            _ => {}
        }
    }
    s
}

fn check_reads(snap: &Snapshot<'_>) {
    for id in snap.all_nodes().expect("all nodes") {
        for d in [Direction::Outgoing, Direction::Incoming] {
            let all = snap.adjacent(id, d, None).expect("adjacent");
            assert_eq!(snap.degree(id, d, None).expect("degree"), all.len() as u64);
            for t in TYPES {
                let typed: Vec<_> = all.iter().filter(|a| a.rel_type == t).collect();
                assert_eq!(
                    snap.degree(id, d, Some(t)).expect("degree"),
                    typed.len() as u64
                );
                for l in LABELS {
                    let want = typed
                        .iter()
                        .filter(|a| snap.has_label(a.neighbour, l).expect("label"))
                        .count() as u64;
                    assert_eq!(
                        snap.count_adjacent(id, d, Some(t), Some(l)).expect("count"),
                        want,
                        "{id} {d:?} {t} {l}"
                    );
                }
            }
        }
    }
    for (label, property) in [
        ("Customer", "score"),
        ("Customer", "lastSeen"),
        ("Touchpoint", "ts"),
        ("Customer", "name"),
    ] {
        assert_eq!(
            snap.index_stats(label, property).expect("stats"),
            Some(brute_stats(snap, label, property)),
            "{label}.{property}"
        );
    }
    assert_eq!(snap.index_stats("Lead", "score").expect("stats"), None);
    for label in LABELS {
        let keys = ["ts", "name", "score", "ts"];
        let mut seen = Vec::new();
        snap.scan_label_values(label, &keys, &mut |id, values| {
            let node = snap.node(id).expect("read").expect("exists");
            let want: Vec<Option<Value>> = keys.iter().map(|k| node.get(k).cloned()).collect();
            assert_eq!(format!("{values:?}"), format!("{want:?}"));
            seen.push(id);
            true
        })
        .expect("scan");
        assert_eq!(seen, snap.label_scan(label).expect("scan"));
    }
}

#[test]
fn counters_stay_exact_under_random_writes() {
    let (_dir, graph) = temp_graph();
    let mut rng = StdRng::seed_from_u64(18);
    let nodes: Vec<NodeId> = graph
        .write(|txn| {
            let mut w = txn.workspace(WS);
            (0..120)
                .map(|i| w.create_node(&[LABELS[i % LABELS.len()]], Properties::new()))
                .collect::<Result<Vec<_>, _>>()
        })
        .expect("seed nodes");
    for round in 0..30 {
        for _ in 0..20 {
            random_write(&graph, WS, &mut rng, &nodes);
        }
        // Events create touchpoints, edges and campaigns in one write.
        let ev = svc_engine::EventInput {
            campaign_id: Some(format!("cmp-{}", round % 3)),
            ..email_event(&format!("p{}@x.test", round % 5), round)
        };
        graph.record_event(WS, ev).expect("event");
        assert_valid(&graph);
        check_reads(&graph.snapshot(WS));
    }
    // Another workspace's counters are its own.
    let snap = graph.snapshot(OTHER_WS);
    assert_eq!(
        snap.degree(nodes[0], Direction::Outgoing, None)
            .expect("degree"),
        0
    );
}

#[test]
fn counters_survive_reopen() {
    let (dir, graph) = temp_graph();
    let mut rng = StdRng::seed_from_u64(7);
    let nodes: Vec<NodeId> = graph
        .write(|txn| {
            let mut w = txn.workspace(WS);
            (0..10)
                .map(|i| w.create_node(&[LABELS[i % 2]], Properties::new()))
                .collect::<Result<Vec<_>, _>>()
        })
        .expect("seed nodes");
    for _ in 0..100 {
        random_write(&graph, WS, &mut rng, &nodes);
    }
    drop(graph);
    let graph = reopen(dir.path());
    assert_valid(&graph);
    check_reads(&graph.snapshot(WS));
}
