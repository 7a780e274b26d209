//! Shared harness of the engine's behaviour tests.
#![allow(dead_code)]

use std::path::Path;

use svc_engine::{
    EventInput, Graph, GraphOptions, GraphRead, IdentityKeys, Node, NodeId, WorkspaceId,
};
use tempfile::TempDir;

pub const WS: WorkspaceId = WorkspaceId(7);
pub const OTHER_WS: WorkspaceId = WorkspaceId(8);

/// A graph in a fresh temporary directory (removed when the TempDir drops).
pub fn temp_graph() -> (TempDir, Graph) {
    let dir = tempfile::tempdir().expect("tempdir");
    let graph = Graph::open(dir.path(), GraphOptions::default()).expect("open graph");
    (dir, graph)
}

pub fn reopen(path: &Path) -> Graph {
    Graph::open(path, GraphOptions::default()).expect("reopen graph")
}

/// Microseconds for a millisecond timestamp.
pub fn ms(ms: i64) -> i64 {
    ms * 1000
}

pub fn keys(email: Option<&str>, phone: Option<&str>, external_id: Option<&str>) -> IdentityKeys {
    IdentityKeys {
        customer_id: None,
        email: email.map(str::to_owned),
        phone: phone.map(str::to_owned),
        external_id: external_id.map(str::to_owned),
    }
}

pub fn event(keys: IdentityKeys, action: &str, ts_ms: i64) -> EventInput {
    EventInput {
        keys,
        action: action.into(),
        ts: ms(ts_ms),
        ..Default::default()
    }
}

pub fn email_event(email: &str, ts_ms: i64) -> EventInput {
    event(keys(Some(email), None, None), "page_viewed", ts_ms)
}

pub fn node(graph: &Graph, ws: WorkspaceId, id: NodeId) -> Node {
    graph
        .snapshot(ws)
        .node(id)
        .expect("read")
        .expect("node exists")
}

pub fn assert_valid(graph: &Graph) {
    let report = graph.validate().expect("validate runs");
    assert!(
        report.is_ok(),
        "validation problems: {:#?}",
        report.problems
    );
}
