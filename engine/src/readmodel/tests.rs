//! The read model against the ordinary reads of the same snapshot: snapshot isolation across
//! later writes, and randomized graphs and edits.

use std::collections::BTreeSet;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::graph::{Graph, GraphOptions};
use crate::model::{Direction, NodeId, Properties, Value, WorkspaceId};
use crate::read::{Comparison, GraphRead, GraphWrite, Hop, PropertyTest};

const WS: WorkspaceId = WorkspaceId(7);

fn open(dir: &tempfile::TempDir) -> Graph {
    Graph::open(dir.path(), GraphOptions::default()).expect("open")
}

fn props(pairs: &[(&str, Value)]) -> Properties {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

/// The answer of `count_label_where` computed node by node.
fn naive_count(g: &dyn GraphRead, label: &str, tests: &[PropertyTest]) -> u64 {
    let mut n = 0;
    for id in g.label_scan(label).expect("scan") {
        let node = g.node(id).expect("node").expect("exists");
        if tests.iter().all(|t| t.passes(node.properties.get(&t.key))) {
            n += 1;
        }
    }
    n
}

/// The answer of `reach_count` computed with adjacency reads.
fn naive_reach(g: &dyn GraphRead, starts: &[NodeId], hops: &[Hop]) -> u64 {
    let mut frontier: BTreeSet<NodeId> = starts.iter().copied().collect();
    for hop in hops {
        let mut next = BTreeSet::new();
        for id in &frontier {
            for a in g
                .adjacent(*id, hop.direction, Some(&hop.rel_type))
                .expect("adjacent")
            {
                let ok = match &hop.label {
                    Some(l) => g.has_label(a.neighbour, l).expect("label"),
                    None => true,
                };
                if ok {
                    next.insert(a.neighbour);
                }
            }
        }
        frontier = next;
    }
    frontier.len() as u64
}

fn purchases() -> Vec<PropertyTest> {
    vec![PropertyTest {
        key: "action".into(),
        op: Comparison::Eq,
        value: Value::String("purchase".into()),
    }]
}

#[test]
fn a_snapshot_keeps_its_moment_and_a_later_one_sees_the_write() {
    let dir = tempfile::tempdir().expect("tempdir");
    let g = open(&dir);
    let (campaign, first) = g
        .write(|t| -> Result<_, crate::EngineError> {
            let mut w = t.workspace(WS);
            let k = w.create_node(&["Campaign"], props(&[]))?;
            let c = w.create_node(&["Customer"], props(&[]))?;
            let tp = w.create_node(
                &["Touchpoint"],
                props(&[("action", Value::String("purchase".into()))]),
            )?;
            w.create_edge(tp, k, "INFLUENCED_BY", Properties::new())?;
            w.create_edge(c, tp, "HAS_TOUCHPOINT", Properties::new())?;
            Ok((k, tp))
        })
        .expect("seed");
    assert!(g.prepare_read_model(WS).expect("build").is_some());
    let reach = [
        Hop {
            direction: Direction::Incoming,
            rel_type: "INFLUENCED_BY".into(),
            label: Some("Touchpoint".into()),
        },
        Hop {
            direction: Direction::Incoming,
            rel_type: "HAS_TOUCHPOINT".into(),
            label: Some("Customer".into()),
        },
    ];
    let old = g.snapshot(WS);
    assert!(old.has_read_model());
    assert_eq!(
        old.count_label_where("Touchpoint", &purchases())
            .expect("test step"),
        Some(1)
    );
    assert_eq!(
        old.reach_count(&[campaign], &reach).expect("test step"),
        Some(1)
    );

    // Later writes: a new purchase by a new customer, the old purchase becomes a view.
    g.write(move |t| -> Result<_, crate::EngineError> {
        let mut w = t.workspace(WS);
        let c = w.create_node(&["Customer"], props(&[]))?;
        let tp = w.create_node(
            &["Touchpoint"],
            props(&[("action", Value::String("purchase".into()))]),
        )?;
        w.create_edge(tp, campaign, "INFLUENCED_BY", Properties::new())?;
        w.create_edge(c, tp, "HAS_TOUCHPOINT", Properties::new())?;
        w.set_node_property(first, "action", Value::String("view".into()))?;
        Ok(())
    })
    .expect("write");

    // The old snapshot still answers as of its moment, from the model.
    assert_eq!(
        old.count_label_where("Touchpoint", &purchases())
            .expect("test step"),
        Some(1)
    );
    assert_eq!(naive_count(&old, "Touchpoint", &purchases()), 1);
    assert_eq!(
        old.reach_count(&[campaign], &reach).expect("test step"),
        Some(1)
    );
    // A new one sees the write.
    let new = g.snapshot(WS);
    assert!(new.has_read_model());
    assert_eq!(
        new.count_label_where("Touchpoint", &purchases())
            .expect("test step"),
        Some(1)
    );
    assert_eq!(naive_count(&new, "Touchpoint", &purchases()), 1);
    assert_eq!(
        new.reach_count(&[campaign], &reach).expect("test step"),
        Some(2)
    );

    // Deleting the old touchpoint (and its edges) is seen by the next snapshot only.
    g.write(move |t| t.workspace(WS).detach_delete_node(first))
        .expect("delete");
    assert_eq!(
        new.reach_count(&[campaign], &reach).expect("test step"),
        Some(2)
    );
    let after = g.snapshot(WS);
    assert_eq!(
        after.reach_count(&[campaign], &reach).expect("test step"),
        Some(1)
    );
    assert_eq!(naive_reach(&after, &[campaign], &reach), 1);
}

#[test]
fn without_a_model_the_answer_is_none_and_a_build_is_requested() {
    let dir = tempfile::tempdir().expect("tempdir");
    let g = open(&dir);
    g.write(|t| {
        t.workspace(WS)
            .create_node(&["Touchpoint"], props(&[("action", "purchase".into())]))
    })
    .expect("seed");
    let s = g.snapshot(WS);
    assert_eq!(
        s.count_label_where("Touchpoint", &purchases())
            .expect("test step"),
        None
    );
    drop(s);
    // The background builder installs one shortly.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let s = g.snapshot(WS);
        if s.has_read_model() {
            assert_eq!(
                s.count_label_where("Touchpoint", &purchases())
                    .expect("test step"),
                Some(1)
            );
            break;
        }
        assert!(std::time::Instant::now() < deadline, "no model after 10 s");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

#[test]
fn a_model_over_budget_is_not_used() {
    let dir = tempfile::tempdir().expect("tempdir");
    let g = Graph::open(
        dir.path(),
        GraphOptions {
            read_model_bytes: 16,
            ..GraphOptions::default()
        },
    )
    .expect("open");
    g.write(|t| t.workspace(WS).create_node(&["Touchpoint"], props(&[])))
        .expect("seed");
    assert_eq!(g.prepare_read_model(WS).expect("build"), None);
    assert!(!g.snapshot(WS).has_read_model());
    // What logs and metrics report: why this workspace reads RocksDB node by node.
    assert_eq!(
        g.read_model_state(WS),
        super::ReadModelState::OverBudget { budget: 16 }
    );
    assert!(g.snapshot(WS).model_view().is_none());
}

#[test]
fn the_model_state_says_whether_and_why() {
    let dir = tempfile::tempdir().expect("tempdir");
    let g = open(&dir);
    assert_eq!(g.read_model_state(WS), super::ReadModelState::NotBuilt);
    g.write(|t| t.workspace(WS).create_node(&["Touchpoint"], props(&[])))
        .expect("seed");
    let bytes = g.prepare_read_model(WS).expect("build").expect("fits");
    assert_eq!(
        g.read_model_state(WS),
        super::ReadModelState::Ready { bytes, touched: 0 }
    );
    let view = g.snapshot(WS).model_view().expect("a view");
    assert_eq!(view.len(), 1);
    g.write(|t| t.workspace(WS).create_node(&["Touchpoint"], props(&[])))
        .expect("write");
    assert_eq!(
        g.read_model_state(WS),
        super::ReadModelState::Ready { bytes, touched: 1 }
    );
    // A snapshot taken now marks the new node touched (read through the snapshot).
    assert_eq!(
        g.snapshot(WS)
            .model_view()
            .expect("a view")
            .touched_ids()
            .len(),
        1
    );
    let dir2 = tempfile::tempdir().expect("tempdir");
    let off = Graph::open(
        dir2.path(),
        GraphOptions {
            read_model_bytes: 0,
            ..GraphOptions::default()
        },
    )
    .expect("open");
    assert_eq!(off.read_model_state(WS), super::ReadModelState::Off);
}

fn random_value(rng: &mut StdRng) -> Option<Value> {
    Some(match rng.gen_range(0..9) {
        0 => return None,
        1 => Value::Int(rng.gen_range(-3..4)),
        2 => Value::Float(rng.gen_range(-3..4) as f64 / 2.0),
        3 => Value::DateTime(rng.gen_range(0..5)),
        4 => Value::Bool(rng.gen()),
        5 => Value::List(vec![Value::Int(1)]),
        _ => Value::String(["a", "b", "purchase", "z"][rng.gen_range(0..4)].into()),
    })
}

const OPS: [Comparison; 5] = [
    Comparison::Eq,
    Comparison::Lt,
    Comparison::Le,
    Comparison::Gt,
    Comparison::Ge,
];

fn random_test(rng: &mut StdRng, key: &str) -> PropertyTest {
    let op = OPS[rng.gen_range(0..5)];
    let value = loop {
        if let Some(v) = random_value(rng).filter(|v| !matches!(v, Value::List(_))) {
            break v;
        }
    };
    PropertyTest {
        key: key.into(),
        op,
        value,
    }
}

#[test]
fn randomized_graphs_and_edits_agree_with_the_ordinary_reads() {
    const LABELS: [&str; 3] = ["A", "B", "C"];
    const TYPES: [&str; 2] = ["R", "S"];
    for seed in 0..6u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let dir = tempfile::tempdir().expect("tempdir");
        let g = open(&dir);
        let mut ids: Vec<NodeId> = Vec::new();
        // Each round writes a batch; the model is built after round 1 (and then covers the
        // rest through its delta).
        for round in 0..4 {
            let ops: Vec<(u8, u64, u64, Option<Value>, usize)> = (0..40)
                .map(|_| {
                    (
                        rng.gen_range(0..6u8),
                        rng.gen(),
                        rng.gen(),
                        random_value(&mut rng),
                        rng.gen_range(0..3),
                    )
                })
                .collect();
            let known = ids.clone();
            let created = g
                .write(move |t| -> Result<Vec<NodeId>, crate::EngineError> {
                    let mut w = t.workspace(WS);
                    let mut new = Vec::new();
                    let mut all = known.clone();
                    for (kind, a, b, v, l) in ops {
                        let pick = |x: u64| (!all.is_empty()).then(|| all[x as usize % all.len()]);
                        match (kind, pick(a), pick(b)) {
                            (0 | 1, _, _) | (_, None, _) | (_, _, None) => {
                                let mut p = Properties::new();
                                if let Some(v) = v {
                                    p.insert("p".into(), v);
                                }
                                let id = w.create_node(&[LABELS[l]], p)?;
                                new.push(id);
                                all.push(id);
                            }
                            (2, Some(x), Some(y)) => {
                                if w.node(x)?.is_some() && w.node(y)?.is_some() {
                                    w.create_edge(x, y, TYPES[l % 2], Properties::new())?;
                                }
                            }
                            (3, Some(x), _) => {
                                if w.node(x)?.is_some() {
                                    w.set_node_property(x, "p", v.unwrap_or(Value::Null))?;
                                }
                            }
                            (4, Some(x), _) => {
                                if w.node(x)?.is_some() {
                                    w.add_node_label(x, LABELS[l])?;
                                }
                            }
                            (_, Some(x), _) => {
                                if round > 0 && w.node(x)?.is_some() {
                                    w.detach_delete_node(x)?;
                                }
                            }
                        }
                    }
                    Ok(new)
                })
                .expect("write");
            ids.extend(created);
            if round == 1 {
                assert!(g.prepare_read_model(WS).expect("build").is_some());
            }
            let s = g.snapshot(WS);
            for _ in 0..20 {
                let label = LABELS[rng.gen_range(0..3)];
                let tests: Vec<PropertyTest> = (0..rng.gen_range(1..3))
                    .map(|_| random_test(&mut rng, "p"))
                    .collect();
                let want = naive_count(&s, label, &tests);
                match s.count_label_where(label, &tests).expect("count") {
                    Some(got) => {
                        assert_eq!(got, want, "seed {seed} round {round} {label} {tests:?}")
                    }
                    None => assert!(round < 1, "no model after it was built"),
                }
                let mut starts: Vec<NodeId> = Vec::new();
                for _ in 0..rng.gen_range(1..3) {
                    if !ids.is_empty() {
                        starts.push(ids[rng.gen_range(0..ids.len())]);
                    }
                }
                let hops: Vec<Hop> = (0..rng.gen_range(1..3))
                    .map(|_| Hop {
                        direction: if rng.gen() {
                            Direction::Outgoing
                        } else {
                            Direction::Incoming
                        },
                        rel_type: TYPES[rng.gen_range(0..2)].into(),
                        label: rng
                            .gen::<bool>()
                            .then(|| LABELS[rng.gen_range(0..3)].into()),
                    })
                    .collect();
                let want = naive_reach(&s, &starts, &hops);
                if let Some(got) = s.reach_count(&starts, &hops).expect("reach") {
                    assert_eq!(got, want, "seed {seed} round {round} {starts:?} {hops:?}");
                }
            }
        }
    }
}

#[test]
fn writes_during_a_build_are_in_the_new_model() {
    let dir = tempfile::tempdir().expect("tempdir");
    let g = open(&dir);
    let purchase = || props(&[("action", Value::String("purchase".into()))]);
    g.write(move |t| -> Result<(), crate::EngineError> {
        for _ in 0..20_000 {
            t.workspace(WS).create_node(&["Touchpoint"], purchase())?;
        }
        Ok(())
    })
    .expect("seed");
    let writer = {
        let g = g.clone();
        std::thread::spawn(move || {
            for _ in 0..200 {
                g.write(move |t| t.workspace(WS).create_node(&["Touchpoint"], purchase()))
                    .expect("write");
            }
        })
    };
    // Builds racing the writes (each registers its delta at its own snapshot).
    for _ in 0..3 {
        assert!(g.prepare_read_model(WS).expect("build").is_some());
        let s = g.snapshot(WS);
        let got = s
            .count_label_where("Touchpoint", &purchases())
            .expect("count");
        assert_eq!(got, Some(s.label_count("Touchpoint").expect("count")));
    }
    writer.join().expect("writer");
    let s = g.snapshot(WS);
    assert_eq!(
        s.count_label_where("Touchpoint", &purchases())
            .expect("count"),
        Some(20_200)
    );
}

#[test]
fn the_budget_is_shared_by_the_workspaces() {
    const OTHER: WorkspaceId = WorkspaceId(8);
    let seed = |g: &Graph, ws: WorkspaceId| {
        g.write(move |t| -> Result<(), crate::EngineError> {
            for i in 0..500 {
                t.workspace(ws)
                    .create_node(&["Touchpoint"], props(&[("n", Value::Int(i))]))?;
            }
            Ok(())
        })
        .expect("seed");
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let one = {
        let g = open(&dir);
        seed(&g, WS);
        g.prepare_read_model(WS).expect("build").expect("fits")
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let g = Graph::open(
        dir.path(),
        GraphOptions {
            read_model_bytes: one + one / 2,
            ..GraphOptions::default()
        },
    )
    .expect("open");
    seed(&g, WS);
    seed(&g, OTHER);
    assert_eq!(g.prepare_read_model(WS).expect("build"), Some(one));
    // The second workspace's model does not fit in what the first leaves.
    assert_eq!(g.prepare_read_model(OTHER).expect("build"), None);
    assert!(g.snapshot(WS).has_read_model());
    assert!(!g.snapshot(OTHER).has_read_model());
    // Rebuilding the first one does not count its old version against it.
    assert_eq!(g.prepare_read_model(WS).expect("build"), Some(one));
}

#[test]
fn commits_never_rebuild_a_model_and_a_query_on_a_stale_one_asks_for_a_new_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let g = open(&dir);
    g.prepare_read_model(WS).expect("build").expect("a model");
    let empty = g.snapshot(WS).read_model_bytes().expect("a model");
    let n = (super::models::REBUILD_MIN + 1) as usize;
    g.write(move |t| -> Result<(), crate::EngineError> {
        let mut w = t.workspace(WS);
        for i in 0..n {
            let action = if i % 3 == 0 { "purchase" } else { "view" };
            w.create_node(&["Touchpoint"], props(&[("action", action.into())]))?;
        }
        Ok(())
    })
    .expect("writes");
    // The delta now outgrows the base, but writing alone starts no rebuild.
    std::thread::sleep(std::time::Duration::from_millis(200));
    let s = g.snapshot(WS);
    assert_eq!(
        s.read_model_bytes(),
        Some(empty),
        "a commit rebuilt the model"
    );
    let purchases_now = naive_count(&s, "Touchpoint", &purchases());
    // The query is exact from the stale model (touched nodes come from the snapshot) and asks
    // for a rebuild, which the background builder installs.
    assert_eq!(
        s.count_label_where("Touchpoint", &purchases())
            .expect("count"),
        Some(purchases_now)
    );
    drop(s);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let s = g.snapshot(WS);
        if s.read_model_bytes().is_some_and(|b| b > empty) {
            let count = s.count_label_where("Touchpoint", &purchases());
            assert_eq!(count.expect("count"), Some(purchases_now));
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no rebuild after 10 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Range counts over typed columns (answered from the sorted rows) stay exact after writes to
/// the model: changed, removed and new values, deleted nodes, tests on two keys.
#[test]
fn range_counts_over_typed_columns_agree_after_writes() {
    for seed in 0..4u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let dir = tempfile::tempdir().expect("tempdir");
        let g = open(&dir);
        let value = |rng: &mut StdRng, key: &str| -> Option<Value> {
            (rng.gen_range(0..6) != 0).then(|| match key {
                "i" => Value::Int(rng.gen_range(-20..20)),
                "f" => Value::Float(rng.gen_range(-20..20) as f64 / 4.0),
                _ => Value::DateTime(rng.gen_range(0..40) * 1000),
            })
        };
        let initial: Vec<Properties> = (0..300)
            .map(|_| {
                ["i", "f", "d"]
                    .iter()
                    .filter_map(|k| value(&mut rng, k).map(|v| (k.to_string(), v)))
                    .collect()
            })
            .collect();
        let ids = g
            .write(move |t| -> Result<Vec<NodeId>, crate::EngineError> {
                let mut w = t.workspace(WS);
                initial
                    .into_iter()
                    .map(|p| w.create_node(&["N"], p))
                    .collect()
            })
            .expect("write");
        assert!(g.prepare_read_model(WS).expect("build").is_some());
        for round in 0..3 {
            if round > 0 {
                let edits: Vec<(usize, &str, Option<Value>, u8)> = (0..25)
                    .map(|_| {
                        let key = ["i", "f", "d"][rng.gen_range(0..3)];
                        let v = value(&mut rng, key);
                        (rng.gen_range(0..ids.len()), key, v, rng.gen_range(0..8))
                    })
                    .collect();
                let ids = ids.clone();
                g.write(move |t| -> Result<(), crate::EngineError> {
                    let mut w = t.workspace(WS);
                    for (at, key, v, kind) in edits {
                        let id = ids[at];
                        match kind {
                            0 => {
                                if w.node(id)?.is_some() {
                                    w.detach_delete_node(id)?;
                                }
                            }
                            1 => {
                                let p = v.map(|v| (key.to_string(), v)).into_iter().collect();
                                w.create_node(&["N"], p)?;
                            }
                            _ => {
                                if w.node(id)?.is_some() {
                                    w.set_node_property(id, key, v.unwrap_or(Value::Null))?;
                                }
                            }
                        }
                    }
                    Ok(())
                })
                .expect("edit");
            }
            let s = g.snapshot(WS);
            for _ in 0..60 {
                let mut tests = Vec::new();
                for _ in 0..rng.gen_range(1..4) {
                    let key = ["i", "f", "d"][rng.gen_range(0..3)];
                    let op = OPS[rng.gen_range(0..5)];
                    let value = match rng.gen_range(0..4) {
                        0 => Value::Int(rng.gen_range(-22..22)),
                        1 => Value::Float(rng.gen_range(-22..22) as f64 / 4.0),
                        _ => match value(&mut rng, key) {
                            Some(v) => v,
                            None => Value::DateTime(rng.gen_range(0..40) * 1000),
                        },
                    };
                    tests.push(PropertyTest {
                        key: key.into(),
                        op,
                        value,
                    });
                }
                let want = naive_count(&s, "N", &tests);
                let got = s.count_label_where("N", &tests).expect("count");
                assert_eq!(got, Some(want), "seed {seed} round {round} {tests:?}");
            }
        }
    }
}
