//! `GET /v1/graph`: every entity and relationship of a workspace (`full`), or all but the
//! Touchpoints (`summary`), and the fixed demo graph unauthenticated callers get.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::{Map, Value as Json};
use svc_engine::schema::TOUCHPOINT;
use svc_engine::{Direction, GraphRead, NodeId};

use super::values::value_to_json;
use svc_core::error::{Error, Result};
use svc_core::plumbing::ids::{self, PublicIds};

/// Which entities an export holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExportMode {
    /// Every node and relationship.
    Full,
    /// Everything except Touchpoint nodes and their relationships.
    Summary,
}

impl ExportMode {
    /// `full` (also the default when absent) or `summary`.
    pub fn parse(s: Option<&str>) -> Result<ExportMode> {
        match s {
            None | Some("full") => Ok(ExportMode::Full),
            Some("summary") => Ok(ExportMode::Summary),
            Some(other) => Err(Error::invalid_field(
                "mode",
                other,
                "must be full or summary",
            )),
        }
    }
}

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct GraphNode {
    /// `cus_...`, `tp_...` or `node_...`
    pub id: String,
    pub labels: Vec<String>,
    #[schema(value_type = Object)]
    pub properties: Map<String, Json>,
}

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct GraphRelationship {
    /// `rel_...`
    pub id: String,
    #[serde(rename = "type")]
    pub rel_type: String,
    /// Id of the start node.
    pub source: String,
    /// Id of the end node.
    pub target: String,
    #[schema(value_type = Object)]
    pub properties: Map<String, Json>,
}

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct GraphExport {
    pub mode: ExportMode,
    /// True for the demo graph of unauthenticated requests.
    pub demo: bool,
    pub nodes: Vec<GraphNode>,
    pub relationships: Vec<GraphRelationship>,
}

pub(crate) fn properties_json(p: &svc_engine::Properties) -> Map<String, Json> {
    p.iter()
        .map(|(k, v)| (k.clone(), value_to_json(v)))
        .collect()
}

/// The export of `r` (one consistent snapshot), nodes and relationships in id order.
pub fn export<R: GraphRead + ?Sized>(
    ids: &PublicIds,
    r: &R,
    mode: ExportMode,
    demo: bool,
) -> Result<GraphExport> {
    let mut wire: HashMap<NodeId, String> = HashMap::new();
    let mut nodes = Vec::new();
    for id in r.all_nodes()? {
        let Some(n) = r.node(id)? else { continue };
        if mode == ExportMode::Summary && n.has_label(TOUCHPOINT) {
            continue;
        }
        let wid = ids.node(&n.labels, n.id);
        wire.insert(id, wid.clone());
        nodes.push(GraphNode {
            id: wid,
            labels: n.labels,
            properties: properties_json(&n.properties),
        });
    }
    let mut relationships = Vec::new();
    for id in r.all_nodes()? {
        let Some(source) = wire.get(&id) else {
            continue;
        };
        for adj in r.adjacent(id, Direction::Outgoing, None)? {
            let Some(target) = wire.get(&adj.neighbour) else {
                continue;
            };
            let Some(e) = r.edge(adj.edge)? else { continue };
            relationships.push((
                e.id,
                GraphRelationship {
                    id: ids.edge(e.id),
                    rel_type: e.rel_type,
                    source: source.clone(),
                    target: target.clone(),
                    properties: properties_json(&e.properties),
                },
            ));
        }
    }
    relationships.sort_by_key(|(id, _)| *id);
    Ok(GraphExport {
        mode,
        demo,
        nodes,
        relationships: relationships.into_iter().map(|(_, r)| r).collect(),
    })
}

/// Writes the export of `r` as JSON to `sink` in chunks of about `chunk` bytes, node by node,
/// without holding the whole graph: only the ids of the exported nodes are kept (to render
/// relationship ends and to leave out Touchpoint relationships in summary mode). Nodes come in
/// id order; relationships grouped by start node. `sink` returns false when the receiver has
/// gone, which stops the export.
pub fn export_chunks<R: GraphRead + ?Sized>(
    ids: &PublicIds,
    r: &R,
    mode: ExportMode,
    chunk: usize,
    sink: &mut dyn FnMut(Vec<u8>) -> bool,
) -> Result<()> {
    let mut buf: Vec<u8> = Vec::with_capacity(chunk + 1024);
    let mode_json = serde_json::to_string(&mode).map_err(Error::internal)?;
    buf.extend_from_slice(format!("{{\"mode\":{mode_json},\"demo\":false,\"nodes\":[").as_bytes());
    let mut wire: HashMap<NodeId, String> = HashMap::new();
    let mut first = true;
    let flush = |buf: &mut Vec<u8>, sink: &mut dyn FnMut(Vec<u8>) -> bool| {
        buf.len() < chunk || sink(std::mem::take(buf))
    };
    for id in r.all_nodes()? {
        let Some(n) = r.node(id)? else { continue };
        if mode == ExportMode::Summary && n.has_label(TOUCHPOINT) {
            continue;
        }
        let wid = ids.node(&n.labels, n.id);
        wire.insert(id, wid.clone());
        if !first {
            buf.push(b',');
        }
        first = false;
        let node = GraphNode {
            id: wid,
            labels: n.labels,
            properties: properties_json(&n.properties),
        };
        serde_json::to_writer(&mut buf, &node).map_err(Error::internal)?;
        if !flush(&mut buf, sink) {
            return Ok(());
        }
    }
    buf.extend_from_slice(b"],\"relationships\":[");
    let mut first = true;
    for id in r.all_nodes()? {
        let Some(source) = wire.get(&id) else {
            continue;
        };
        for adj in r.adjacent(id, Direction::Outgoing, None)? {
            let Some(target) = wire.get(&adj.neighbour) else {
                continue;
            };
            let Some(e) = r.edge(adj.edge)? else { continue };
            if !first {
                buf.push(b',');
            }
            first = false;
            let rel = GraphRelationship {
                id: ids.edge(e.id),
                rel_type: e.rel_type,
                source: source.clone(),
                target: target.clone(),
                properties: properties_json(&e.properties),
            };
            serde_json::to_writer(&mut buf, &rel).map_err(Error::internal)?;
            if !flush(&mut buf, sink) {
                return Ok(());
            }
        }
    }
    buf.extend_from_slice(b"]}");
    sink(buf);
    Ok(())
}

/// The demo graph: built in memory on each call, never read from or written to the store.
const DEMO: &str = "\
CREATE (ada:Customer {name: 'Ada Demo', email: 'ada@demo.example', score: 0.82, lastSeen: datetime('2026-01-05T10:00:00Z')}),
       (bob:Customer {name: 'Bob Demo', email: 'bob@demo.example', score: 0.41, lastSeen: datetime('2026-01-04T09:00:00Z')}),
       (cy:Customer {name: 'Cy Demo', email: 'cy@demo.example', score: 0.67, lastSeen: datetime('2026-01-03T08:00:00Z')}),
       (spring:Campaign {campaignId: 'spring-launch', name: 'Spring launch'}),
       (nurture:Campaign {campaignId: 'nurture', name: 'Nurture sequence'}),
       (t1:Touchpoint {action: 'email_opened', channel: 'email', campaignId: 'spring-launch', ts: datetime('2026-01-05T10:00:00Z')}),
       (t2:Touchpoint {action: 'page_viewed', channel: 'web', campaignId: 'spring-launch', ts: datetime('2026-01-04T09:00:00Z')}),
       (t3:Touchpoint {action: 'demo_booked', channel: 'web', campaignId: 'nurture', ts: datetime('2026-01-03T08:00:00Z')}),
       (lead:Stage {name: 'Lead', progress: 0.1}),
       (trial:Stage {name: 'Trial', progress: 0.5}),
       (won:Stage {name: 'Won', progress: 1.0}),
       (o1:Opportunity {name: 'Ada expansion', score: 88, amount: 24000}),
       (o2:Opportunity {name: 'Cy pilot', score: 64, amount: 9000}),
       (ada)-[:HAS_TOUCHPOINT]->(t1), (bob)-[:HAS_TOUCHPOINT]->(t2), (cy)-[:HAS_TOUCHPOINT]->(t3),
       (t1)-[:INFLUENCED_BY]->(spring), (t2)-[:INFLUENCED_BY]->(spring), (t3)-[:INFLUENCED_BY]->(nurture),
       (ada)-[:AT_STAGE]->(trial), (bob)-[:AT_STAGE]->(lead), (cy)-[:AT_STAGE]->(trial),
       (o1)-[:AT_STAGE]->(trial), (o2)-[:AT_STAGE]->(lead)";

pub fn demo(mode: ExportMode) -> Result<GraphExport> {
    let mut g = svc_query::model::ModelGraph::new();
    let stmt = svc_query::parse(DEMO).map_err(|e| Error::internal(format!("demo graph: {e}")))?;
    svc_query::run_write(
        &mut g,
        &stmt,
        &svc_query::Params::new(),
        &svc_query::Limits::default(),
    )
    .map_err(|e| Error::internal(format!("demo graph: {e}")))?;
    // The demo's ids name nothing in any store: a fixed key keeps them the same every call.
    export(&PublicIds::new(&[0; ids::KEY_BYTES], 0), &g, mode, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demo_graph_full_and_summary() {
        let full = demo(ExportMode::Full).expect("demo");
        assert!(full.demo);
        assert_eq!(full.nodes.len(), 13);
        assert_eq!(full.relationships.len(), 11);
        let summary = demo(ExportMode::Summary).expect("demo");
        assert_eq!(summary.nodes.len(), 10);
        assert!(summary
            .nodes
            .iter()
            .all(|n| !n.labels.contains(&TOUCHPOINT.to_owned())));
        // Only relationships between kept nodes remain.
        assert_eq!(summary.relationships.len(), 5);
        let ids: Vec<&str> = summary.nodes.iter().map(|n| n.id.as_str()).collect();
        assert!(summary
            .relationships
            .iter()
            .all(|r| ids.contains(&r.source.as_str()) && ids.contains(&r.target.as_str())));
        assert!(full.nodes.iter().any(|n| n.id.starts_with("cus_")));
        assert!(full.nodes.iter().any(|n| n.id.starts_with("tp_")));
    }

    #[test]
    fn chunked_export_equals_the_in_memory_one() {
        let mut g = svc_query::model::ModelGraph::new();
        let stmt = svc_query::parse(DEMO).expect("parse");
        svc_query::run_write(&mut g, &stmt, &Default::default(), &Default::default())
            .expect("demo");
        let ids = PublicIds::random(0);
        for mode in [ExportMode::Full, ExportMode::Summary] {
            let mut out = Vec::new();
            let mut chunks = 0;
            export_chunks(&ids, &g, mode, 64, &mut |c| {
                chunks += 1;
                out.extend_from_slice(&c);
                true
            })
            .expect("export");
            assert!(chunks > 3);
            let streamed: Json = serde_json::from_slice(&out).expect("valid json");
            let mut whole =
                serde_json::to_value(export(&ids, &g, mode, false).expect("export")).expect("json");
            let mut streamed = streamed;
            for v in [&mut whole, &mut streamed] {
                if let Some(rels) = v["relationships"].as_array_mut() {
                    rels.sort_by_key(|r| r["id"].as_str().map(str::to_owned));
                }
            }
            assert_eq!(streamed, whole);
        }
        // A receiver that goes away stops the export.
        let mut calls = 0;
        export_chunks(&ids, &g, ExportMode::Full, 1, &mut |_| {
            calls += 1;
            false
        })
        .expect("stopped");
        assert_eq!(calls, 1);
    }

    #[test]
    fn modes_parse() {
        assert_eq!(ExportMode::parse(None).ok(), Some(ExportMode::Full));
        assert_eq!(
            ExportMode::parse(Some("summary")).ok(),
            Some(ExportMode::Summary)
        );
        assert!(ExportMode::parse(Some("all")).is_err());
    }
}
