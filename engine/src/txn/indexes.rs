//! Derived state kept in step with node and edge writes: label membership, property
//! indexes, adjacency entries and the degree, type and endpoint-label counters.

use std::collections::{BTreeMap, BTreeSet};

use crate::codec::{self, EdgeRecord, NodeRecord};
use crate::columns::Cf;
use crate::error::EngineError;
use crate::keys::{self, IdentityKind};
use crate::model::{Direction, EdgeId, NodeId, Value, WorkspaceId};
use crate::schema;
use crate::view;

use super::{label_member_key, Space, WorkspaceTxn};

/// A node's property-index entries: (index key, its value-count key).
fn index_entries(
    ws: WorkspaceId,
    id: NodeId,
    rec: Option<&NodeRecord>,
) -> BTreeSet<(Vec<u8>, Vec<u8>)> {
    let Some(rec) = rec else {
        return BTreeSet::new();
    };
    schema::indexes_for_labels(&rec.labels)
        .filter_map(|d| {
            let v = keys::index_value(rec.properties.get(d.property)?)?;
            Some((
                keys::prop_index_key(ws, d.label, d.property, &v, id),
                keys::index_count_key(ws, d.label, d.property, v[0]),
            ))
        })
        .collect()
}

fn label_set(rec: Option<&NodeRecord>) -> BTreeSet<&str> {
    let mut set: BTreeSet<&str> = BTreeSet::new();
    if let Some(r) = rec {
        set.insert(schema::ALL_NODES);
        set.extend(r.labels.iter().map(String::as_str));
    }
    set
}

impl WorkspaceTxn<'_, '_> {
    /// Writes a node's new state (None: deleted) and keeps every index in step with it.
    pub(crate) fn write_node(
        &mut self,
        id: NodeId,
        old: Option<&NodeRecord>,
        new: Option<&NodeRecord>,
    ) -> Result<(), EngineError> {
        let key = keys::node_key(self.ws, id);
        match new {
            Some(n) => self.txn.put(Cf::Nodes, key, codec::encode_node(n)),
            None => self.txn.delete(Cf::Nodes, key),
        }
        self.sync_declared_indexes(id, old, new)?;
        if let (Some(o), Some(n)) = (old, new) {
            if o.labels == n.labels {
                return self.update_indexes(id, o, n);
            }
        }
        if let (Some(o), Some(n)) = (old, new) {
            let added: Vec<&str> = n
                .labels
                .iter()
                .filter(|l| !o.labels.contains(l))
                .map(String::as_str)
                .collect();
            let removed: Vec<&str> = o
                .labels
                .iter()
                .filter(|l| !n.labels.contains(l))
                .map(String::as_str)
                .collect();
            self.relabel_edges(id, &added, &removed)?;
        }
        let (old_labels, new_labels) = (label_set(old), label_set(new));
        for l in old_labels.difference(&new_labels) {
            self.txn
                .set(Space::LabelMember, label_member_key(self.ws, l, id), None);
        }
        for l in new_labels.difference(&old_labels) {
            self.txn.set(
                Space::LabelMember,
                label_member_key(self.ws, l, id),
                Some(Vec::new()),
            );
        }
        let (old_idx, new_idx) = (
            index_entries(self.ws, id, old),
            index_entries(self.ws, id, new),
        );
        for (k, count) in old_idx.difference(&new_idx) {
            self.txn.delete(Cf::PropIndex, k.clone());
            self.txn.count_add(count.clone(), -1);
        }
        for (k, count) in new_idx.difference(&old_idx) {
            self.txn.put(Cf::PropIndex, k.clone(), Vec::new());
            self.txn.count_add(count.clone(), 1);
        }
        self.sync_identity(id, old, new)
    }

    /// `write_node` for a node whose labels stay: only the index entries of properties that
    /// changed are touched (the common case: a customer's `lastSeen` moving on each event).
    fn update_indexes(
        &mut self,
        id: NodeId,
        old: &NodeRecord,
        new: &NodeRecord,
    ) -> Result<(), EngineError> {
        for d in schema::indexes_for_labels(&new.labels) {
            let (before, after) = (
                old.properties.get(d.property),
                new.properties.get(d.property),
            );
            if before == after {
                continue;
            }
            let entry = |v: Option<&Value>| {
                keys::index_value(v?).map(|v| {
                    (
                        keys::prop_index_key(self.ws, d.label, d.property, &v, id),
                        v[0],
                    )
                })
            };
            let (before, after) = (entry(before), entry(after));
            if before == after {
                continue;
            }
            let tags = (before.as_ref().map(|b| b.1), after.as_ref().map(|a| a.1));
            if let Some((k, _)) = before {
                self.txn.delete(Cf::PropIndex, k);
            }
            if let Some((k, _)) = after {
                self.txn.put(Cf::PropIndex, k, Vec::new());
            }
            if tags.0 != tags.1 {
                let count = |tag| keys::index_count_key(self.ws, d.label, d.property, tag);
                if let Some(t) = tags.0 {
                    self.txn.count_add(count(t), -1);
                }
                if let Some(t) = tags.1 {
                    self.txn.count_add(count(t), 1);
                }
            }
        }
        let identity_changed = IdentityKind::ALL
            .into_iter()
            .any(|k| old.properties.get(k.property()) != new.properties.get(k.property()));
        if identity_changed {
            self.sync_identity(id, Some(old), Some(new))?;
        }
        Ok(())
    }

    fn put_adjacency(&mut self, id: EdgeId, e: &EdgeRecord, present: bool) {
        let out = keys::AdjacencyKey {
            ws: self.ws,
            node: e.start,
            direction: Direction::Outgoing,
            rel_type: e.rel_type.clone(),
            neighbour: e.end,
            edge: id,
        };
        let inc = keys::AdjacencyKey {
            ws: self.ws,
            node: e.end,
            direction: Direction::Incoming,
            rel_type: e.rel_type.clone(),
            neighbour: e.start,
            edge: id,
        };
        for k in [out, inc] {
            let key = keys::adjacency_key(&k);
            if present {
                self.txn.put(Cf::Adjacency, key, Vec::new());
            } else {
                self.txn.delete(Cf::Adjacency, key);
            }
            self.txn.count_add(
                keys::degree_key_of_adjacency(&k),
                if present { 1 } else { -1 },
            );
        }
    }

    /// `ends`: the labels of the start and the end node as stored now.
    pub(crate) fn insert_edge(&mut self, id: EdgeId, e: &EdgeRecord, ends: (&[String], &[String])) {
        self.txn.put(
            Cf::Edges,
            keys::edge_key(self.ws, id),
            codec::encode_edge(e),
        );
        self.put_adjacency(id, e, true);
        self.count_edge(e, ends, 1);
    }

    pub(crate) fn remove_edge(&mut self, id: EdgeId, e: &EdgeRecord) -> Result<(), EngineError> {
        self.txn.delete(Cf::Edges, keys::edge_key(self.ws, id));
        self.put_adjacency(id, e, false);
        let (start, end) = (self.labels_of(e.start)?, self.labels_of(e.end)?);
        self.count_edge(e, (&start, &end), -1);
        Ok(())
    }

    /// The labels of a node as stored now (none when it does not exist).
    pub(crate) fn labels_of(&self, id: NodeId) -> Result<Vec<String>, EngineError> {
        Ok(view::load_node(&*self.txn, self.ws, id)?
            .map(|r| r.labels)
            .unwrap_or_default())
    }

    /// The per-type and per-endpoint-label counters of one relationship, +1 or -1.
    fn count_edge(&mut self, e: &EdgeRecord, (start, end): (&[String], &[String]), delta: i64) {
        let ws = self.ws;
        self.txn
            .count_add(keys::type_count_key(ws, &e.rel_type), delta);
        for (labels, side) in [(start, Direction::Outgoing), (end, Direction::Incoming)] {
            for l in labels {
                self.txn
                    .count_add(keys::endpoint_label_key(ws, &e.rel_type, side, l), delta);
            }
        }
    }

    /// A node's labels changed: the endpoint-label counters of every relationship it has
    /// follow (one counter update per type, direction and label).
    fn relabel_edges(
        &mut self,
        id: NodeId,
        added: &[&str],
        removed: &[&str],
    ) -> Result<(), EngineError> {
        if added.is_empty() && removed.is_empty() {
            return Ok(());
        }
        // (outgoing?, type) -> number of adjacency entries
        let mut per_type: BTreeMap<(bool, String), i64> = BTreeMap::new();
        view::scan_adjacency(
            &*self.txn,
            &keys::adjacency_prefix(self.ws, id, None, None),
            |a| {
                *per_type
                    .entry((a.direction == Direction::Outgoing, a.rel_type))
                    .or_default() += 1;
                true
            },
        )?;
        for ((outgoing, rel_type), n) in per_type {
            let side = if outgoing {
                Direction::Outgoing
            } else {
                Direction::Incoming
            };
            for (labels, sign) in [(added, 1), (removed, -1)] {
                for l in labels {
                    self.txn.count_add(
                        keys::endpoint_label_key(self.ws, &rel_type, side, l),
                        sign * n,
                    );
                }
            }
        }
        Ok(())
    }

    /// Every edge touching `id`, each once (a self-loop appears in both directions).
    pub(crate) fn edges_of(&self, id: NodeId) -> Result<Vec<EdgeId>, EngineError> {
        let mut ids = BTreeSet::new();
        view::scan_adjacency(
            &*self.txn,
            &keys::adjacency_prefix(self.ws, id, None, None),
            |a| {
                ids.insert(a.edge);
                true
            },
        )?;
        Ok(ids.into_iter().collect())
    }
}
