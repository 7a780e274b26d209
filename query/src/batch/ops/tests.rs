//! The lookups of `ScanEq` and the backward counts of `ExpandCount` really run, over a graph
//! whose rows fill more than a chunk, and answer as the row path does (the same rows in the
//! same order).

use svc_engine::ModelView;

use super::expand::SUFFIXES;
use super::scan::EQ_CHUNKS;
use crate::model::ModelGraph;
use crate::{parse, run_read, run_write, Limits, ModelSwitch, Params};

/// 600 `P` nodes (four `A` relationships each, sometimes two to the same `Q`), 50 `Q` nodes
/// (two `B` relationships each) and 10 `R` nodes: chains with repeated paths whose first hop
/// meets more far nodes than a chunk holds. (The model graph walks every relationship per
/// adjacency read, so the row path is kept small.)
fn chains() -> ModelGraph {
    let mut g = ModelGraph::new();
    for q in [
        "UNWIND range(0, 9) AS k CREATE (:R {k: k, name: 'r' + toString(k)})",
        "UNWIND range(0, 49) AS j MATCH (r1:R {k: j % 10}), (r2:R {k: (j + 3) % 10}) \
         CREATE (q:Q {j: j}), (q)-[:B]->(r1), (q)-[:B]->(r2)",
        "UNWIND range(0, 599) AS i \
         MATCH (q1:Q {j: i % 50}), (q2:Q {j: (i * 7) % 50}), (q3:Q {j: (i * 11 + 3) % 50}), \
         (q4:Q {j: (i * 13 + 5) % 50}) \
         CREATE (p:P {i: i, g: i % 4, s: 'v' + toString(i % 5)}), \
         (p)-[:A]->(q1), (p)-[:A]->(q2), (p)-[:A]->(q3), (p)-[:A]->(q4)",
    ] {
        let stmt = parse(q).expect("setup parses");
        run_write(&mut g, &stmt, &Params::new(), &Limits::default()).expect("setup runs");
    }
    g
}

/// Runs `q` on the batch path (model `m`) and the row path: the same rows, in order.
fn same(g: &ModelGraph, m: &ModelView, q: &str) -> String {
    let stmt = parse(q).expect("parses");
    // The row path over the model graph is slow in an unoptimised build.
    let limits = Limits {
        time: std::time::Duration::from_secs(60),
        ..Limits::default()
    };
    let batch = ModelSwitch::with_model(g, m.clone());
    let b = run_read(&batch, &stmt, &Params::new(), &limits).expect("batch runs");
    let r = run_read(&ModelSwitch::rows(g), &stmt, &Params::new(), &limits).expect("rows run");
    assert_eq!(format!("{:?}", b.rows), format!("{:?}", r.rows), "{q}");
    format!("{:?}", b.rows)
}

#[test]
fn values_are_looked_up_and_chains_counted_backwards() {
    let g = chains();
    let m = ModelView::from_graph(&g).expect("model");

    let before = EQ_CHUNKS.with(|c| c.get());
    // Strings (a repeated value, null), over more rows than a chunk, in the scan's order.
    let out = same(
        &g,
        &m,
        "UNWIND range(1, 3) AS x UNWIND ['v0', 'v1', null, 'v2', 'v3', 'v4', 'v0', 'v1'] AS s \
         MATCH (p:P {s: s}) RETURN x, s, p.i",
    );
    assert!(
        out.starts_with("[[Int(1), String(\"v0\"), Int(0)], [Int(1), String(\"v0\"), Int(5)]"),
        "{}",
        &out[..out.len().min(200)]
    );
    // Integers, and a node's property as the value.
    same(
        &g,
        &m,
        "UNWIND range(-5, 60) AS j MATCH (q:Q) WHERE q.j = j RETURN j, count(*)",
    );
    same(
        &g,
        &m,
        "MATCH (q:Q) MATCH (p:P {g: q.j}) RETURN q.j, count(p), min(p.i)",
    );
    let after = EQ_CHUNKS.with(|c| c.get());
    assert!(after.0 > before.0, "no chunk was looked up");
    assert_eq!(
        after.1, before.1,
        "a chunk went through the scan and filter"
    );
    // A float looked up among integers: the scan and filter decide that chunk.
    same(
        &g,
        &m,
        "UNWIND [3.0, 4.5, 7] AS j MATCH (q:Q {j: j}) RETURN j, q.j",
    );
    assert!(EQ_CHUNKS.with(|c| c.get()).1 > after.1);

    let before = SUFFIXES.with(|c| c.get());
    for q in [
        "MATCH (p:P) MATCH (p)-[:A]->(:Q)-[:B]->(r:R) WHERE r.k = 1 RETURN count(DISTINCT p)",
        "MATCH (p:P)-[:A]->(:Q)-[:B]->(r:R) WHERE r.k < 3 RETURN p.g AS g, count(r) AS n ORDER BY g",
        "MATCH (p:P) WHERE p.i < 550 MATCH (p)-[:A]->(q:Q)-[:B]->(r:R {name: 'r4'}) \
         RETURN count(DISTINCT p), min(p.i), max(p.i)",
    ] {
        same(&g, &m, q);
    }
    assert!(
        SUFFIXES.with(|c| c.get()) > before,
        "no hop was counted backwards"
    );
}
