//! Generic graph operations on a workspace transaction: `GraphRead` through the overlay and
//! `GraphWrite` (node and edge create, update, delete), with name and property checks.

use std::ops::Bound;

use crate::codec::{self, EdgeRecord, NodeRecord};
use crate::columns::Cf;
use crate::error::EngineError;
use crate::keys;
use crate::model::{AdjacentEdge, Direction, Edge, EdgeId, Node, NodeId, Properties, Value};
use crate::read::{GraphRead, GraphWrite, IndexKind, Order};
use crate::schema;
use crate::view;

use super::WorkspaceTxn;

pub(crate) fn check_name(what: &'static str, name: &str) -> Result<(), EngineError> {
    if name.is_empty() {
        return Err(EngineError::invalid(what, "must not be empty"));
    }
    if name.len() > schema::MAX_NAME_BYTES {
        return Err(EngineError::invalid(
            what,
            format!("longer than {} bytes", schema::MAX_NAME_BYTES),
        ));
    }
    Ok(())
}

pub(crate) fn check_properties(properties: &Properties) -> Result<(), EngineError> {
    for (k, v) in properties {
        check_name("property key", k)?;
        codec::check_storable(v)?;
    }
    Ok(())
}

impl GraphRead for WorkspaceTxn<'_, '_> {
    fn node(&self, id: NodeId) -> Result<Option<Node>, EngineError> {
        self.view().node(id)
    }
    fn edge(&self, id: EdgeId) -> Result<Option<Edge>, EngineError> {
        self.view().edge(id)
    }
    fn label_count(&self, label: &str) -> Result<u64, EngineError> {
        self.view().label_count(label)
    }
    fn label_scan(&self, label: &str) -> Result<Vec<NodeId>, EngineError> {
        self.view().label_scan(label)
    }
    fn all_nodes(&self) -> Result<Vec<NodeId>, EngineError> {
        self.view().all_nodes()
    }
    fn node_count(&self) -> Result<u64, EngineError> {
        self.view().node_count()
    }
    fn adjacent(
        &self,
        id: NodeId,
        direction: Direction,
        rel_type: Option<&str>,
    ) -> Result<Vec<AdjacentEdge>, EngineError> {
        self.view().adjacent(id, direction, rel_type)
    }
    fn degree(
        &self,
        id: NodeId,
        direction: Direction,
        rel_type: Option<&str>,
    ) -> Result<u64, EngineError> {
        self.view().degree(id, direction, rel_type)
    }
    fn index_kind(&self, label: &str, property: &str) -> Option<IndexKind> {
        self.view().index_kind(label, property)
    }
    fn index_seek(
        &self,
        label: &str,
        property: &str,
        value: &Value,
    ) -> Result<Option<Vec<NodeId>>, EngineError> {
        self.view().index_seek(label, property, value)
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
        self.view()
            .index_range(label, property, lower, upper, order, limit)
    }
}

impl GraphWrite for WorkspaceTxn<'_, '_> {
    fn create_node(
        &mut self,
        labels: &[&str],
        properties: Properties,
    ) -> Result<NodeId, EngineError> {
        let mut unique: Vec<String> = Vec::with_capacity(labels.len());
        for l in labels {
            check_name("label", l)?;
            if !unique.iter().any(|u| u == l) {
                unique.push((*l).to_owned());
            }
        }
        let mut properties = properties;
        properties.retain(|_, v| !v.is_null());
        check_properties(&properties)?;
        let id = NodeId(self.alloc_id()?);
        self.write_node(
            id,
            None,
            Some(&NodeRecord {
                labels: unique,
                properties,
            }),
        )?;
        Ok(id)
    }

    fn set_node_property(
        &mut self,
        id: NodeId,
        key: &str,
        value: Value,
    ) -> Result<(), EngineError> {
        check_name("property key", key)?;
        codec::check_storable(&value)?;
        let old = self.node_record(id)?;
        let mut new = old.clone();
        if value.is_null() {
            new.properties.remove(key);
        } else {
            new.properties.insert(key.to_owned(), value);
        }
        if new != old {
            self.write_node(id, Some(&old), Some(&new))?;
        }
        Ok(())
    }

    fn replace_node_properties(
        &mut self,
        id: NodeId,
        properties: Properties,
    ) -> Result<(), EngineError> {
        let mut properties = properties;
        properties.retain(|_, v| !v.is_null());
        check_properties(&properties)?;
        let old = self.node_record(id)?;
        let new = NodeRecord {
            labels: old.labels.clone(),
            properties,
        };
        self.write_node(id, Some(&old), Some(&new))
    }

    fn add_node_label(&mut self, id: NodeId, label: &str) -> Result<(), EngineError> {
        check_name("label", label)?;
        let old = self.node_record(id)?;
        if old.labels.iter().any(|l| l == label) {
            return Ok(());
        }
        let mut new = old.clone();
        new.labels.push(label.to_owned());
        self.write_node(id, Some(&old), Some(&new))
    }

    fn remove_node_label(&mut self, id: NodeId, label: &str) -> Result<(), EngineError> {
        let old = self.node_record(id)?;
        if !old.labels.iter().any(|l| l == label) {
            return Ok(());
        }
        let mut new = old.clone();
        new.labels.retain(|l| l != label);
        self.write_node(id, Some(&old), Some(&new))
    }

    fn delete_node(&mut self, id: NodeId) -> Result<(), EngineError> {
        let old = self.node_record(id)?;
        if !self.edges_of(id)?.is_empty() {
            return Err(EngineError::NodeHasEdges(id));
        }
        self.write_node(id, Some(&old), None)
    }

    fn detach_delete_node(&mut self, id: NodeId) -> Result<(), EngineError> {
        let old = self.node_record(id)?;
        for eid in self.edges_of(id)? {
            let e = self.edge_record(eid)?;
            self.remove_edge(eid, &e)?;
        }
        self.write_node(id, Some(&old), None)
    }

    fn create_edge(
        &mut self,
        start: NodeId,
        end: NodeId,
        rel_type: &str,
        properties: Properties,
    ) -> Result<EdgeId, EngineError> {
        check_name("relationship type", rel_type)?;
        let mut properties = properties;
        properties.retain(|_, v| !v.is_null());
        check_properties(&properties)?;
        let mut ends = Vec::with_capacity(2);
        for n in [start, end] {
            match view::load_node(&*self.txn, self.ws, n)? {
                Some(r) => ends.push(r.labels),
                None => return Err(EngineError::NodeNotFound(n)),
            }
        }
        let id = EdgeId(self.alloc_id()?);
        self.insert_edge(
            id,
            &EdgeRecord {
                rel_type: rel_type.to_owned(),
                start,
                end,
                properties,
            },
            (&ends[0], &ends[1]),
        );
        Ok(id)
    }

    fn set_edge_property(
        &mut self,
        id: EdgeId,
        key: &str,
        value: Value,
    ) -> Result<(), EngineError> {
        check_name("property key", key)?;
        codec::check_storable(&value)?;
        let mut e = self.edge_record(id)?;
        if value.is_null() {
            e.properties.remove(key);
        } else {
            e.properties.insert(key.to_owned(), value);
        }
        self.txn.put(
            Cf::Edges,
            keys::edge_key(self.ws, id),
            codec::encode_edge(&e),
        );
        Ok(())
    }

    fn replace_edge_properties(
        &mut self,
        id: EdgeId,
        properties: Properties,
    ) -> Result<(), EngineError> {
        let mut properties = properties;
        properties.retain(|_, v| !v.is_null());
        check_properties(&properties)?;
        let mut e = self.edge_record(id)?;
        e.properties = properties;
        self.txn.put(
            Cf::Edges,
            keys::edge_key(self.ws, id),
            codec::encode_edge(&e),
        );
        Ok(())
    }

    fn delete_edge(&mut self, id: EdgeId) -> Result<(), EngineError> {
        let e = self.edge_record(id)?;
        self.remove_edge(id, &e)
    }
}
