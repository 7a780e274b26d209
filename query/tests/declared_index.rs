//! A declared index over the real store: the planner ignores it while it is populating and
//! uses it (EXPLAIN shows the seek / range scan) once it is ONLINE, with the same answers.

use svc_engine::catalog::{IndexSpec, IndexState};
use svc_engine::{EngineError, Graph, GraphOptions, WorkspaceId};
use svc_query::{explain, parse, parse_schema, run_read, run_write, Limits, Params, SchemaCommand};

const WS: WorkspaceId = WorkspaceId(3);

fn spec_of(text: &str) -> IndexSpec {
    match parse_schema(text).expect("parses").expect("schema command") {
        SchemaCommand::CreateIndex {
            name,
            label,
            property,
            kind,
            if_not_exists,
        } => IndexSpec {
            name,
            label,
            property,
            kind,
            if_not_exists,
        },
        other => panic!("{other:?}"),
    }
}

fn operators(graph: &Graph, text: &str) -> Vec<String> {
    let snap = graph.snapshot(WS);
    let plan = explain(
        &snap,
        &parse(text).expect("parses"),
        &Params::new(),
        &Limits::default(),
    )
    .expect("plans");
    plan.operators().into_iter().map(str::to_owned).collect()
}

fn rows(graph: &Graph, text: &str) -> String {
    let snap = graph.snapshot(WS);
    let r = run_read(
        &snap,
        &parse(text).expect("parses"),
        &Params::new(),
        &Limits::default(),
    )
    .expect("runs");
    serde_json::to_string(&r.rows).expect("json")
}

#[test]
fn the_planner_uses_a_declared_index_once_it_is_online() {
    let dir = tempfile::tempdir().expect("tempdir");
    let graph = Graph::open(dir.path(), GraphOptions::default()).expect("open");
    let create =
        parse("UNWIND $xs AS i CREATE (:Touchpoint {action: 'a' + toString(i % 4), w: i})")
            .expect("parses");
    let params = Params::from([(
        "xs".to_owned(),
        svc_engine::Value::List((0..60).map(svc_engine::Value::Int).collect()),
    )]);
    graph
        .write(move |tx| {
            let mut w = tx.workspace(WS);
            run_write(&mut w, &create, &params, &Limits::default())
                .map_err(|e| EngineError::Invalid {
                    what: "query",
                    detail: e.to_string(),
                })
                .map(|_| ())
        })
        .expect("seed");
    let eq = "MATCH (t:Touchpoint {action: 'a1'}) RETURN count(t) AS n";
    let top = "MATCH (t:Touchpoint) WHERE t.w >= 10 RETURN t.w AS w ORDER BY w DESC LIMIT 2";
    let (eq_before, top_before) = (rows(&graph, eq), rows(&graph, top));
    assert_eq!(eq_before, "[[15]]");
    assert_eq!(top_before, "[[59],[58]]");
    assert!(!operators(&graph, eq).contains(&"NodeIndexSeek".to_owned()));

    for text in [
        "CREATE INDEX tp_action FOR (t:Touchpoint) ON (t.action)",
        "CREATE RANGE INDEX FOR (t:Touchpoint) ON (t.w)",
    ] {
        graph.declare_index(WS, spec_of(text)).expect("declare");
    }
    // Populating: still label scans.
    assert!(!operators(&graph, eq).contains(&"NodeIndexSeek".to_owned()));
    assert!(!operators(&graph, top).contains(&"NodeIndexRangeScan".to_owned()));
    while graph.build_indexes_step(16).expect("build") {}
    assert!(graph
        .indexes(WS)
        .expect("indexes")
        .iter()
        .filter(|i| !i.built_in)
        .all(|i| i.state == IndexState::Online));

    let eq_ops = operators(&graph, eq);
    assert!(eq_ops.contains(&"NodeIndexSeek".to_owned()), "{eq_ops:?}");
    let top_ops = operators(&graph, top);
    assert!(
        top_ops.contains(&"NodeIndexRangeScan".to_owned()),
        "{top_ops:?}"
    );
    assert_eq!(rows(&graph, eq), eq_before);
    assert_eq!(rows(&graph, top), top_before);

    graph
        .drop_index(WS, "tp_action".into(), false)
        .expect("drop");
    assert!(!operators(&graph, eq).contains(&"NodeIndexSeek".to_owned()));
    while graph.build_indexes_step(16).expect("build") {}
    assert_eq!(rows(&graph, eq), eq_before);
}
