//! Shown ids under a keyed [`IdCodec`]: `id()`, result nodes and relationships, paths and
//! errors agree with each other on the row and the batch path, `id(n) = $x` finds what a
//! result showed, and no forged id can do more than match nothing.

use svc_engine::Value;
use svc_query::fuzzing::check_batch_vs_rows;
use svc_query::model::ModelGraph;
use svc_query::{
    parse, run_read, run_write, IdCodec, Limits, ModelSwitch, Params, QueryResult, ResultValue,
};

fn keyed() -> Limits {
    Limits {
        ids: IdCodec::keyed(*b"query-crate-test"),
        ..Limits::default()
    }
}

fn graph() -> ModelGraph {
    let mut g = ModelGraph::new();
    let stmt = parse(
        "CREATE (a:P {k: 1}), (b:P {k: 2}), (c:P {k: 3}), (d:Q {k: 4}),
                (a)-[:R {w: 1}]->(b), (b)-[:R {w: 2}]->(c), (c)-[:S]->(d)",
    )
    .expect("parse");
    run_write(&mut g, &stmt, &Params::new(), &Limits::default()).expect("create");
    g
}

fn read<G: svc_query::GraphRead>(g: &G, q: &str, params: &Params, limits: &Limits) -> QueryResult {
    run_read(g, &parse(q).expect("parse"), params, limits).expect(q)
}

fn int(v: &ResultValue) -> i64 {
    match v {
        ResultValue::Int(i) => *i,
        other => panic!("not an integer: {other:?}"),
    }
}

fn params(x: Value) -> Params {
    Params::from([("x".to_owned(), x)])
}

/// Both paths: the row path and the batch path over a model built from the graph.
fn sides(g: &ModelGraph) -> [ModelSwitch<'_>; 2] {
    [ModelSwitch::rows(g), ModelSwitch::batch(g).expect("model")]
}

#[test]
fn ids_agree_everywhere_and_find_their_entities() {
    let g = graph();
    let limits = keyed();
    let plain = read(
        &g,
        "MATCH (n:P) RETURN id(n) ORDER BY n.k",
        &Params::new(),
        &Limits::default(),
    );
    for side in sides(&g) {
        let r = read(
            &side,
            "MATCH (n:P) RETURN id(n), n ORDER BY n.k",
            &Params::new(),
            &limits,
        );
        assert_eq!(r.rows.len(), 3);
        for (row, engine) in r.rows.iter().zip(&plain.rows) {
            let shown = int(&row[0]);
            let ResultValue::Node(n) = &row[1] else {
                panic!("node: {row:?}")
            };
            assert_eq!(n.id, shown as u64, "id() is the node's id");
            assert_ne!(shown, int(&engine[0]), "not the engine's id");
            assert!((0..1 << 53).contains(&shown));
            assert_eq!(limits.ids.node_id(shown).0, int(&engine[0]) as u64);
            // The shown id finds the node again, on both paths.
            let found = read(
                &side,
                "MATCH (m) WHERE id(m) = $x RETURN m.k",
                &params(Value::Int(shown)),
                &limits,
            );
            assert_eq!(found.rows.len(), 1, "{shown}");
            assert_eq!(found.rows[0][0], n.properties["k"]);
        }

        // Relationships: start and end are the shown ids of their nodes, in paths too.
        let r = read(
            &side,
            "MATCH p = (a:P)-[r:R]->(b) RETURN id(a), id(r), id(b), r, p ORDER BY a.k",
            &Params::new(),
            &limits,
        );
        assert_eq!(r.rows.len(), 2);
        for row in &r.rows {
            let (a, rel, b) = (int(&row[0]), int(&row[1]), int(&row[2]));
            let ResultValue::Relationship(shown) = &row[3] else {
                panic!("relationship: {row:?}")
            };
            assert_eq!(
                (shown.id, shown.start, shown.end),
                (rel as u64, a as u64, b as u64)
            );
            let ResultValue::Path(p) = &row[4] else {
                panic!("path: {row:?}")
            };
            assert_eq!(p.nodes[0].id, a as u64);
            assert_eq!(p.nodes[1].id, b as u64);
            assert_eq!(&p.relationships[0], shown);
            let found = read(
                &side,
                "MATCH ()-[x]->() WHERE id(x) = $x RETURN x.w",
                &params(Value::Int(rel)),
                &limits,
            );
            assert_eq!(found.rows.len(), 1);
            // startNode() gives the node whose id the relationship showed as its start.
            let start = read(
                &side,
                "MATCH ()-[x]->() WHERE id(x) = $x RETURN id(startNode(x))",
                &params(Value::Int(rel)),
                &limits,
            );
            assert_eq!(int(&start.rows[0][0]), a);
        }
    }
}

#[test]
fn forged_ids_match_nothing_and_break_nothing() {
    let g = graph();
    let limits = keyed();
    for side in sides(&g) {
        for x in [
            Value::Int(0),
            Value::Int(1),
            Value::Int(-1),
            Value::Int(i64::MIN),
            Value::Int(i64::MAX),
            Value::Int(1 << 53),
            Value::Float(1.5),
            Value::Float(f64::NAN),
            Value::String("1".into()),
            Value::Null,
            Value::List(vec![Value::Int(1)]),
        ] {
            let r = read(
                &side,
                "MATCH (n) WHERE id(n) = $x OR id(n) IN [$x] RETURN n",
                &params(x.clone()),
                &limits,
            );
            // The engine ids of this graph are small: none of these names one of its nodes.
            assert!(r.rows.is_empty(), "{x:?}: {r:?}");
        }
        // Arithmetic on shown ids neither overflows nor panics: a query error at worst.
        let q = parse("MATCH (n) RETURN id(n) * 9223372036854775807 AS big").expect("parse");
        let out = run_read(&side, &q, &Params::new(), &limits);
        assert!(
            matches!(&out, Err(e) if e.code() == "arithmetic_error"),
            "{out:?}"
        );
    }
}

#[test]
fn the_batch_path_shows_the_row_paths_ids() {
    let g = graph();
    let limits = keyed();
    for q in [
        "MATCH (n) RETURN id(n), n ORDER BY id(n)",
        "MATCH (n:P)-[r]->(m) RETURN id(n) + 1, id(r), collect(id(m)) ORDER BY id(r)",
        "MATCH (n) WITH id(n) AS i WHERE i % 2 = 0 RETURN count(*)",
        "MATCH p = (n:P)-[*1..3]->(m) RETURN p, [x IN nodes(p) | id(x)] ORDER BY length(p), id(m)",
    ] {
        let stmt = parse(q).expect("parse");
        check_batch_vs_rows(q, &stmt, &Params::new(), &g, &limits);
    }
}

#[test]
fn writes_show_the_ids_reads_show() {
    let mut g = graph();
    let limits = keyed();
    let stmt = parse("CREATE (n:New)-[r:T]->(m:New) RETURN id(n), n, id(r), r").expect("parse");
    let created = run_write(&mut g, &stmt, &Params::new(), &limits).expect("create");
    let row = &created.rows[0];
    let (n, r) = (int(&row[0]), int(&row[2]));
    let (ResultValue::Node(node), ResultValue::Relationship(rel)) = (&row[1], &row[3]) else {
        panic!("{row:?}")
    };
    assert_eq!((node.id, rel.id, rel.start), (n as u64, r as u64, n as u64));
    let read_back = read(
        &g,
        "MATCH (a:New)-[r:T]->() RETURN id(a), id(r)",
        &Params::new(),
        &limits,
    );
    assert_eq!(int(&read_back.rows[0][0]), n);
    assert_eq!(int(&read_back.rows[0][1]), r);
    // A write names its node by a shown id too.
    let set = parse("MATCH (a) WHERE id(a) = $x SET a.seen = true RETURN a.seen").expect("parse");
    let done = run_write(&mut g, &set, &params(Value::Int(n)), &limits).expect("set");
    assert_eq!(done.rows, vec![vec![ResultValue::Bool(true)]]);
}

#[test]
fn errors_name_shown_ids() {
    let mut g = graph();
    let limits = keyed();
    let shown = int(&read(
        &g,
        "MATCH (n:P {k: 1}) RETURN id(n)",
        &Params::new(),
        &limits,
    )
    .rows[0][0]);
    let engine = int(&read(
        &g,
        "MATCH (n:P {k: 1}) RETURN id(n)",
        &Params::new(),
        &Limits::default(),
    )
    .rows[0][0]);
    let stmt = parse("MATCH (n:P {k: 1}) DELETE n").expect("parse");
    let e = run_write(&mut g, &stmt, &Params::new(), &limits).expect_err("has relationships");
    assert_eq!(e.code(), "node_has_relationships");
    let text = e.to_string();
    assert!(text.contains(&shown.to_string()), "{text}");
    assert!(!text.contains(&format!("node {engine} ")), "{text}");
}

#[test]
fn id_equality_seeks_the_one_node_and_answers_as_the_filter_does() {
    let g = graph();
    for limits in [Limits::default(), keyed()] {
        let all = read(&g, "MATCH (n) RETURN id(n) AS i", &Params::new(), &limits);
        let shown: Vec<i64> = all.rows.iter().map(|r| int(&r[0])).collect();
        for side in sides(&g) {
            for (q, reference) in [
                (
                    "MATCH (m) WHERE id(m) = $x RETURN m.k",
                    "MATCH (m) WHERE id(m) + 0 = $x RETURN m.k",
                ),
                (
                    "MATCH (m:Q) WHERE $x = id(m) RETURN m.k",
                    "MATCH (m:Q) WHERE $x = id(m) + 0 RETURN m.k",
                ),
                (
                    "MATCH (a)-[r]-(n) WHERE id(a) = $x RETURN n.k ORDER BY n.k",
                    "MATCH (a)-[r]-(n) WHERE id(a) + 0 = $x RETURN n.k ORDER BY n.k",
                ),
            ] {
                let stmt = parse(q).expect("parse");
                let p = params(Value::Int(shown[0]));
                let plan = svc_query::explain(&side, &stmt, &p, &limits).expect("explain");
                assert!(
                    plan.operators().contains(&"NodeByIdSeek"),
                    "{q}: {}",
                    plan.render()
                );
                let mut values: Vec<Value> = shown.iter().map(|i| Value::Int(*i)).collect();
                // A float equal to an id, an id no node has, and values no id equals.
                values.push(Value::Float(shown[1] as f64));
                values.extend([
                    Value::Int(i64::MAX),
                    Value::Int(-1),
                    Value::Float(0.5),
                    Value::String("1".into()),
                    Value::Null,
                ]);
                for x in values {
                    let p = params(x.clone());
                    assert_eq!(
                        read(&side, q, &p, &limits).rows,
                        read(&side, reference, &p, &limits).rows,
                        "{q} with {x:?}"
                    );
                }
            }
        }
    }
}
