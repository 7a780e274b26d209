//! Shared harness: the fixture graph on the model (with and without indexes) and on the engine.
#![allow(dead_code)]

use std::collections::BTreeMap;

use svc_engine::{Graph, GraphOptions, WorkspaceId};
use svc_query::model::ModelGraph;
use svc_query::{parse, run_read, run_write, Limits, Params, QueryError, QueryResult, Statement};
use tempfile::TempDir;

pub const FIXTURE: &str = include_str!("../fixture.cypher");
pub const WS: WorkspaceId = WorkspaceId(7);

/// The fixture on a model graph without indexes (every plan uses label scans).
pub fn plain_model() -> ModelGraph {
    let mut g = ModelGraph::new();
    let stmt = parse(FIXTURE).expect("fixture parses");
    run_write(&mut g, &stmt, &Params::new(), &Limits::default()).expect("fixture loads");
    g
}

/// The same data declaring the engine's indexes.
pub fn indexed_model() -> ModelGraph {
    plain_model().reindexed_like_engine()
}

pub trait Reindex {
    fn reindexed_like_engine(&self) -> ModelGraph;
}

impl Reindex for ModelGraph {
    fn reindexed_like_engine(&self) -> ModelGraph {
        let decls: Vec<(&str, &str, svc_engine::IndexKind)> = svc_engine::schema::INDEXES
            .iter()
            .map(|d| (d.label, d.property, d.kind))
            .collect();
        self.reindexed(&decls)
    }
}

/// A fresh engine in a temporary directory.
pub fn engine() -> (TempDir, Graph) {
    let dir = tempfile::tempdir().expect("tempdir");
    let graph = Graph::open(dir.path(), GraphOptions::default()).expect("open graph");
    (dir, graph)
}

/// Runs any statement through the engine's write path in one transaction of `ws`.
pub fn engine_write(
    graph: &Graph,
    ws: WorkspaceId,
    stmt: &Statement,
    params: &Params,
) -> Result<QueryResult, QueryError> {
    let stmt = stmt.clone();
    let params = params.clone();
    graph.write(move |txn| {
        let mut w = txn.workspace(ws);
        run_write(&mut w, &stmt, &params, &Limits::default())
    })
}

pub fn engine_read(
    graph: &Graph,
    ws: WorkspaceId,
    stmt: &Statement,
    params: &Params,
) -> Result<QueryResult, QueryError> {
    let snap = graph.snapshot(ws);
    run_read(&snap, stmt, params, &Limits::default())
}

/// Loads the fixture into workspace `ws` of the engine.
pub fn load_engine_fixture(graph: &Graph, ws: WorkspaceId) {
    let stmt = parse(FIXTURE).expect("fixture parses");
    engine_write(graph, ws, &stmt, &Params::new()).expect("fixture loads into the engine");
}

/// JSON parameters to engine values.
pub fn json_to_value(v: &serde_json::Value) -> svc_engine::Value {
    use svc_engine::Value;
    match v {
        serde_json::Value::Null => Value::Null,
        serde_json::Value::Bool(b) => Value::Bool(*b),
        serde_json::Value::Number(n) => match n.as_i64() {
            Some(i) => Value::Int(i),
            None => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        serde_json::Value::String(s) => Value::String(s.clone()),
        serde_json::Value::Array(a) => Value::List(a.iter().map(json_to_value).collect()),
        serde_json::Value::Object(o) => Value::Map(
            o.iter()
                .map(|(k, v)| (k.clone(), json_to_value(v)))
                .collect::<BTreeMap<_, _>>(),
        ),
    }
}

pub fn params_from_json(text: &str) -> Params {
    let v: serde_json::Value = serde_json::from_str(text).expect("params are JSON");
    match json_to_value(&v) {
        svc_engine::Value::Map(m) => m,
        _ => panic!("params must be a JSON object"),
    }
}

/// Result rows as JSON with store-assigned ids removed (they differ between backends).
pub fn normalized_rows(r: &QueryResult) -> Vec<serde_json::Value> {
    let mut rows: Vec<serde_json::Value> = r
        .rows
        .iter()
        .map(|row| serde_json::to_value(row).expect("serializes"))
        .collect();
    rows.iter_mut().for_each(strip_ids);
    rows
}

fn strip_ids(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(o) => {
            if o.contains_key("labels") || o.contains_key("type") && o.contains_key("start") {
                o.remove("id");
                o.remove("start");
                o.remove("end");
            }
            o.values_mut().for_each(strip_ids);
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(strip_ids),
        _ => {}
    }
}

/// Sorted copy, for comparing results whose order is unspecified.
pub fn as_multiset(rows: &[serde_json::Value]) -> Vec<String> {
    let mut v: Vec<String> = rows.iter().map(|r| r.to_string()).collect();
    v.sort();
    v
}
