//! The read path refuses every write, whatever the text looks like, and leaves the store
//! unchanged: at least 200 variants (letter case, comments, whitespace, Unicode look-alikes,
//! nesting after reading clauses, EXPLAIN/PROFILE prefixes).

mod common;

use common::*;
use svc_engine::{Direction, GraphRead};
use svc_query::{parse, run_read, Limits, Params};

const WRITES: &[&str] = &[
    "CREATE (n:Customer {name: 'x'})",
    "CREATE (a)-[:R]->(b)",
    "MATCH (n) SET n.x = 1",
    "MATCH (n) SET n += {x: 1}",
    "MATCH (n) SET n = {}",
    "MATCH (n) SET n:Hacked",
    "MATCH (n) REMOVE n.name",
    "MATCH (n) REMOVE n:Customer",
    "MATCH (n) DELETE n",
    "MATCH (n) DETACH DELETE n",
    "MATCH ()-[r]->() DELETE r",
    "MERGE (n:Customer {name: 'x'})",
    "MATCH (n) MERGE (n)-[:R]->(m:X)",
    "MATCH (n:Customer) WITH n LIMIT 1 CREATE (m:Copy) RETURN m",
    "UNWIND [1, 2] AS i CREATE (:X {i: i}) RETURN i",
    "MATCH (n) WHERE n.name = 'MATCH' SET n.name = 'x' RETURN n",
    "OPTIONAL MATCH (n) DETACH DELETE n RETURN count(*)",
    "MATCH (c:Customer) MERGE (c)-[:X]->(:Y) ON CREATE SET c.y = 1 RETURN c",
];

/// Ways of writing the same statement differently.
fn variants(base: &str) -> Vec<String> {
    let lower = base.to_lowercase();
    let mixed: String = base
        .chars()
        .enumerate()
        .map(|(i, c)| {
            if i % 2 == 0 {
                c.to_ascii_lowercase()
            } else {
                c.to_ascii_uppercase()
            }
        })
        .collect();
    vec![
        base.to_string(),
        lower,
        mixed,
        format!("/* harmless */ {base}"),
        format!("{base} // RETURN 1"),
        base.replace(' ', "\n\t  "),
        base.replace(' ', " /* x */ "),
        format!("EXPLAIN {base}"),
        format!("PROFILE {base}"),
        format!("MATCH (zz) WITH zz {base}"),
        format!("{base};"),
        format!("\u{feff}{base}"),
    ]
}

/// Look-alike spellings: they must not parse as writes (they are syntax errors), and they must
/// not get through either.
const LOOKALIKES: &[&str] = &[
    "ＣＲＥＡＴＥ (n)",
    "СREATE (n)",
    "MATCH (n) ЅET n.x = 1",
    "MATCH (n) DELETE\u{200b} n",
    "MATCH (n) DETACH\u{00a0}DELETE n",
    "CRE/**/ATE (n)",
    "C\u{301}REATE (n)",
    "MATCH (n) S\u{0415}T n.x = 1",
];

fn dump(g: &dyn GraphRead) -> String {
    let mut out = String::new();
    for id in g.all_nodes().expect("nodes") {
        out.push_str(&format!("{:?}\n", g.node(id).expect("node")));
        for a in g
            .adjacent(id, Direction::Outgoing, None)
            .expect("adjacency")
        {
            out.push_str(&format!("  {:?} {:?}\n", a, g.edge(a.edge).expect("edge")));
        }
    }
    out
}

#[test]
fn the_read_path_refuses_every_write_variant() {
    let model = plain_model();
    let before = model.clone();
    let (_dir, graph) = engine();
    load_engine_fixture(&graph, WS);
    let engine_before = dump(&graph.snapshot(WS));
    let limits = Limits::default();
    let mut count = 0;
    for base in WRITES {
        for text in variants(base) {
            count += 1;
            // The text may not even parse (e.g. the BOM); what matters is that nothing runs.
            let Ok(stmt) = parse(&text) else { continue };
            assert!(!stmt.is_read_only(), "{text} parsed as read-only");
            let e = run_read(&model, &stmt, &Params::new(), &limits).expect_err(&text);
            assert_eq!(e.code(), "write_not_allowed", "{text}: {e}");
            let e = engine_read(&graph, WS, &stmt, &Params::new()).expect_err(&text);
            assert_eq!(e.code(), "write_not_allowed", "{text}: {e}");
        }
    }
    for text in LOOKALIKES {
        count += 1;
        match parse(text) {
            Err(e) => assert_eq!(e.code(), "syntax_error", "{text}: {e}"),
            Ok(stmt) => {
                let refused = run_read(&model, &stmt, &Params::new(), &limits).is_err();
                assert!(refused, "{text} ran on the read path");
            }
        }
    }
    assert!(count >= 200, "only {count} variants");
    assert_eq!(model, before, "the model changed");
    assert_eq!(
        dump(&graph.snapshot(WS)),
        engine_before,
        "the engine changed"
    );
}

#[test]
fn most_write_variants_parse_as_writes() {
    // Guard against the test above passing vacuously because nothing parsed.
    let parsed = WRITES
        .iter()
        .flat_map(|b| variants(b))
        .filter(|t| parse(t).is_ok())
        .count();
    assert!(parsed >= 180, "only {parsed} variants parsed");
}
