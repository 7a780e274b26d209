//! A naive in-memory graph implementing `GraphRead + GraphWrite`: the reference the executor
//! is checked against, and a handy store for tests, fuzzing and embedding.
//!
//! With indexes disabled (`ModelGraph::new()`), `index_kind` answers `None` and the planner
//! falls back to label scans, so the same query runs on the plainest possible plan. With
//! `with_indexes`, the declared indexes are answered by brute force with the engine's contract,
//! which exercises the planner's index paths without RocksDB.

use std::collections::BTreeMap;
use std::ops::Bound;

use svc_engine::{
    AdjacentEdge, Direction, Edge, EdgeId, EngineError, GraphRead, GraphWrite, IndexKind,
    IndexStats, Node, NodeId, Order, Properties, Value,
};

/// The property indexes the service declares (label, property, kind); the same list as
/// `svc_engine::schema::INDEXES` (a test keeps them equal).
pub const DOMAIN_INDEXES: &[(&str, &str, IndexKind)] = &[
    ("Customer", "email", IndexKind::Equality),
    ("Customer", "phone", IndexKind::Equality),
    ("Customer", "externalId", IndexKind::Equality),
    ("Customer", "name", IndexKind::Equality),
    ("Customer", "cio_id", IndexKind::Equality),
    ("Campaign", "campaignId", IndexKind::Equality),
    ("Campaign", "name", IndexKind::Equality),
    ("Stage", "name", IndexKind::Equality),
    ("Opportunity", "name", IndexKind::Equality),
    ("Opportunity", "opportunityId", IndexKind::Equality),
    ("Customer", "score", IndexKind::Ordered),
    ("Customer", "lastSeen", IndexKind::Ordered),
    ("Touchpoint", "ts", IndexKind::Ordered),
    ("Opportunity", "score", IndexKind::Ordered),
    ("Opportunity", "amount", IndexKind::Ordered),
    ("Opportunity", "progress", IndexKind::Ordered),
    ("Stage", "progress", IndexKind::Ordered),
];

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModelGraph {
    nodes: BTreeMap<NodeId, Node>,
    edges: BTreeMap<EdgeId, Edge>,
    next_id: u64,
    indexes: Vec<(String, String, IndexKind)>,
}

impl ModelGraph {
    /// An empty graph with no indexes (every plan uses label scans).
    pub fn new() -> Self {
        ModelGraph {
            next_id: 1,
            ..Default::default()
        }
    }

    /// An empty graph declaring `indexes`.
    pub fn with_indexes(indexes: &[(&str, &str, IndexKind)]) -> Self {
        let mut g = ModelGraph::new();
        g.indexes = indexes
            .iter()
            .map(|(l, p, k)| (l.to_string(), p.to_string(), *k))
            .collect();
        g
    }

    /// The same data with the given indexes (to run one graph both ways).
    pub fn reindexed(&self, indexes: &[(&str, &str, IndexKind)]) -> Self {
        let mut g = self.clone();
        g.indexes = indexes
            .iter()
            .map(|(l, p, k)| (l.to_string(), p.to_string(), *k))
            .collect();
        g
    }

    fn alloc(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id - 1
    }

    fn node_mut(&mut self, id: NodeId) -> Result<&mut Node, EngineError> {
        self.nodes.get_mut(&id).ok_or(EngineError::NodeNotFound(id))
    }

    fn edge_mut(&mut self, id: EdgeId) -> Result<&mut Edge, EngineError> {
        self.edges.get_mut(&id).ok_or(EngineError::EdgeNotFound(id))
    }

    fn indexed_nodes(&self, label: &str, property: &str) -> impl Iterator<Item = (&Node, &Value)> {
        let label = label.to_owned();
        let property = property.to_owned();
        self.nodes
            .values()
            .filter(move |n| n.has_label(&label))
            .filter_map(move |n| n.get(&property).map(|v| (n, v)))
    }
}

/// Numbers compare numerically, datetimes with datetimes; nothing else is ordered.
fn ordered_cmp(a: &Value, b: &Value) -> Option<std::cmp::Ordering> {
    match (a, b) {
        (Value::DateTime(x), Value::DateTime(y)) => Some(x.cmp(y)),
        _ if a.as_f64().is_some() => a.as_f64()?.partial_cmp(&b.as_f64()?),
        // Temporals: the engine's order (within a type; durations unordered).
        _ => svc_engine::compare_values(a, b),
    }
}

/// Whether an unbounded side of a range admits `v` (every orderable indexed value).
fn rangeable(v: &Value) -> bool {
    matches!(
        v,
        Value::Int(_)
            | Value::Float(_)
            | Value::DateTime(_)
            | Value::ZonedDateTime(_)
            | Value::Date(_)
            | Value::LocalTime(_)
            | Value::Time(..)
            | Value::LocalDateTime(..)
    )
}

fn within(v: &Value, lower: Bound<&Value>, upper: Bound<&Value>) -> bool {
    use std::cmp::Ordering::*;
    let lo = match lower {
        Bound::Unbounded => rangeable(v),
        Bound::Included(b) => matches!(ordered_cmp(v, b), Some(Greater | Equal)),
        Bound::Excluded(b) => matches!(ordered_cmp(v, b), Some(Greater)),
    };
    let hi = match upper {
        Bound::Unbounded => rangeable(v),
        Bound::Included(b) => matches!(ordered_cmp(v, b), Some(Less | Equal)),
        Bound::Excluded(b) => matches!(ordered_cmp(v, b), Some(Less)),
    };
    lo && hi
}

impl GraphRead for ModelGraph {
    fn node(&self, id: NodeId) -> Result<Option<Node>, EngineError> {
        Ok(self.nodes.get(&id).cloned())
    }

    fn edge(&self, id: EdgeId) -> Result<Option<Edge>, EngineError> {
        Ok(self.edges.get(&id).cloned())
    }

    fn label_count(&self, label: &str) -> Result<u64, EngineError> {
        Ok(self.nodes.values().filter(|n| n.has_label(label)).count() as u64)
    }

    fn label_scan(&self, label: &str) -> Result<Vec<NodeId>, EngineError> {
        Ok(self
            .nodes
            .values()
            .filter(|n| n.has_label(label))
            .map(|n| n.id)
            .collect())
    }

    fn all_nodes(&self) -> Result<Vec<NodeId>, EngineError> {
        Ok(self.nodes.keys().copied().collect())
    }

    fn node_count(&self) -> Result<u64, EngineError> {
        Ok(self.nodes.len() as u64)
    }

    fn adjacent(
        &self,
        id: NodeId,
        direction: Direction,
        rel_type: Option<&str>,
    ) -> Result<Vec<AdjacentEdge>, EngineError> {
        Ok(self
            .edges
            .values()
            .filter(|e| rel_type.is_none_or(|t| e.rel_type == t))
            .filter_map(|e| {
                let neighbour = match direction {
                    Direction::Outgoing if e.start == id => e.end,
                    Direction::Incoming if e.end == id => e.start,
                    _ => return None,
                };
                Some(AdjacentEdge {
                    edge: e.id,
                    rel_type: e.rel_type.clone(),
                    neighbour,
                    direction,
                })
            })
            .collect())
    }

    fn degree(
        &self,
        id: NodeId,
        direction: Direction,
        rel_type: Option<&str>,
    ) -> Result<u64, EngineError> {
        Ok(self.adjacent(id, direction, rel_type)?.len() as u64)
    }

    fn index_stats(&self, label: &str, property: &str) -> Result<Option<IndexStats>, EngineError> {
        if self.index_kind(label, property).is_none() {
            return Ok(None);
        }
        let mut stats = IndexStats::default();
        for (_, v) in self.indexed_nodes(label, property) {
            match v {
                Value::Bool(_) => stats.booleans += 1,
                Value::Int(_) => stats.numbers += 1,
                Value::Float(f) if !f.is_nan() => stats.numbers += 1,
                Value::DateTime(_) | Value::ZonedDateTime(_) => stats.datetimes += 1,
                Value::Date(_)
                | Value::LocalTime(_)
                | Value::Time(..)
                | Value::LocalDateTime(..)
                | Value::Duration(_) => stats.other_temporals += 1,
                Value::String(_) => stats.strings += 1,
                _ => {}
            }
        }
        Ok(Some(stats))
    }

    fn index_kind(&self, label: &str, property: &str) -> Option<IndexKind> {
        self.indexes
            .iter()
            .find(|(l, p, _)| l == label && p == property)
            .map(|(_, _, k)| *k)
    }

    fn index_seek(
        &self,
        label: &str,
        property: &str,
        value: &Value,
    ) -> Result<Option<Vec<NodeId>>, EngineError> {
        let Some(kind) = self.index_kind(label, property) else {
            return Ok(None);
        };
        Ok(Some(
            self.indexed_nodes(label, property)
                .filter(|(_, v)| match kind {
                    IndexKind::Ordered => ordered_cmp(v, value) == Some(std::cmp::Ordering::Equal),
                    IndexKind::Equality => *v == value,
                })
                .map(|(n, _)| n.id)
                .collect(),
        ))
    }

    fn index_range(
        &self,
        label: &str,
        property: &str,
        lower: Bound<&Value>,
        upper: Bound<&Value>,
        order: Order,
        limit: Option<usize>,
    ) -> Result<Option<Vec<NodeId>>, EngineError> {
        if self.index_kind(label, property) != Some(IndexKind::Ordered) {
            return Ok(None);
        }
        let mut hits: Vec<(&Value, NodeId)> = self
            .indexed_nodes(label, property)
            .filter(|(_, v)| within(v, lower, upper))
            .map(|(n, v)| (v, n.id))
            .collect();
        hits.sort_by(|a, b| {
            ordered_cmp(a.0, b.0)
                .unwrap_or(std::cmp::Ordering::Equal)
                .then(a.1.cmp(&b.1))
        });
        if order == Order::Descending {
            hits.reverse();
        }
        let ids = hits.into_iter().map(|(_, id)| id);
        Ok(Some(match limit {
            Some(l) => ids.take(l).collect(),
            None => ids.collect(),
        }))
    }
}

impl GraphWrite for ModelGraph {
    fn create_node(
        &mut self,
        labels: &[&str],
        properties: Properties,
    ) -> Result<NodeId, EngineError> {
        let id = NodeId(self.alloc());
        let mut ls: Vec<String> = Vec::new();
        for l in labels {
            if !ls.iter().any(|x| x == l) {
                ls.push(l.to_string());
            }
        }
        let properties = properties
            .into_iter()
            .filter(|(_, v)| !v.is_null())
            .collect();
        self.nodes.insert(
            id,
            Node {
                id,
                labels: ls,
                properties,
            },
        );
        Ok(id)
    }

    fn set_node_property(
        &mut self,
        id: NodeId,
        key: &str,
        value: Value,
    ) -> Result<(), EngineError> {
        let n = self.node_mut(id)?;
        if value.is_null() {
            n.properties.remove(key);
        } else {
            n.properties.insert(key.to_owned(), value);
        }
        Ok(())
    }

    fn replace_node_properties(
        &mut self,
        id: NodeId,
        properties: Properties,
    ) -> Result<(), EngineError> {
        self.node_mut(id)?.properties = properties
            .into_iter()
            .filter(|(_, v)| !v.is_null())
            .collect();
        Ok(())
    }

    fn add_node_label(&mut self, id: NodeId, label: &str) -> Result<(), EngineError> {
        let n = self.node_mut(id)?;
        if !n.has_label(label) {
            n.labels.push(label.to_owned());
        }
        Ok(())
    }

    fn remove_node_label(&mut self, id: NodeId, label: &str) -> Result<(), EngineError> {
        self.node_mut(id)?.labels.retain(|l| l != label);
        Ok(())
    }

    fn delete_node(&mut self, id: NodeId) -> Result<(), EngineError> {
        if !self.nodes.contains_key(&id) {
            return Err(EngineError::NodeNotFound(id));
        }
        if self.edges.values().any(|e| e.start == id || e.end == id) {
            return Err(EngineError::NodeHasEdges(id));
        }
        self.nodes.remove(&id);
        Ok(())
    }

    fn detach_delete_node(&mut self, id: NodeId) -> Result<(), EngineError> {
        if self.nodes.remove(&id).is_none() {
            return Err(EngineError::NodeNotFound(id));
        }
        self.edges.retain(|_, e| e.start != id && e.end != id);
        Ok(())
    }

    fn create_edge(
        &mut self,
        start: NodeId,
        end: NodeId,
        rel_type: &str,
        properties: Properties,
    ) -> Result<EdgeId, EngineError> {
        for n in [start, end] {
            if !self.nodes.contains_key(&n) {
                return Err(EngineError::NodeNotFound(n));
            }
        }
        let id = EdgeId(self.alloc());
        let properties = properties
            .into_iter()
            .filter(|(_, v)| !v.is_null())
            .collect();
        self.edges.insert(
            id,
            Edge {
                id,
                rel_type: rel_type.to_owned(),
                start,
                end,
                properties,
            },
        );
        Ok(id)
    }

    fn set_edge_property(
        &mut self,
        id: EdgeId,
        key: &str,
        value: Value,
    ) -> Result<(), EngineError> {
        let e = self.edge_mut(id)?;
        if value.is_null() {
            e.properties.remove(key);
        } else {
            e.properties.insert(key.to_owned(), value);
        }
        Ok(())
    }

    fn replace_edge_properties(
        &mut self,
        id: EdgeId,
        properties: Properties,
    ) -> Result<(), EngineError> {
        self.edge_mut(id)?.properties = properties
            .into_iter()
            .filter(|(_, v)| !v.is_null())
            .collect();
        Ok(())
    }

    fn delete_edge(&mut self, id: EdgeId) -> Result<(), EngineError> {
        self.edges
            .remove(&id)
            .map(|_| ())
            .ok_or(EngineError::EdgeNotFound(id))
    }
}
