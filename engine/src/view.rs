//! Graph reads written once, over any key-value source and label source: a snapshot, or a
//! write transaction (which sees its own uncommitted writes).

use std::borrow::Cow;
use std::ops::Bound;

use roaring::RoaringTreemap;

use crate::catalog;
use crate::codec::{self, EdgeRecord, NodeRecord};
use crate::columns::Cf;
use crate::error::EngineError;
use crate::keys;
use crate::model::{AdjacentEdge, Direction, Edge, EdgeId, Node, NodeId, Value, WorkspaceId};
use crate::read::{GraphRead, IndexKind, Order};
use crate::schema;
use crate::store::KvRead;

/// Membership of labels, as seen by one reader.
pub(crate) trait LabelSource {
    fn label_bitmap(
        &self,
        ws: WorkspaceId,
        label: &str,
    ) -> Result<Cow<'_, RoaringTreemap>, EngineError>;
}

/// One workspace's graph over a key-value source and a label source.
pub(crate) struct View<'a> {
    pub kv: &'a dyn KvRead,
    pub labels: &'a dyn LabelSource,
    pub ws: WorkspaceId,
}

pub(crate) fn load_node(
    kv: &dyn KvRead,
    ws: WorkspaceId,
    id: NodeId,
) -> Result<Option<NodeRecord>, EngineError> {
    kv.get(Cf::Nodes, &keys::node_key(ws, id))?
        .map(|b| codec::decode_node(&b))
        .transpose()
}

pub(crate) fn load_edge(
    kv: &dyn KvRead,
    ws: WorkspaceId,
    id: EdgeId,
) -> Result<Option<EdgeRecord>, EngineError> {
    kv.get(Cf::Edges, &keys::edge_key(ws, id))?
        .map(|b| codec::decode_edge(&b))
        .transpose()
}

/// Adjacency entries of a node under a prefix (see `keys::adjacency_prefix`).
pub(crate) fn scan_adjacency(
    kv: &dyn KvRead,
    prefix: &[u8],
    mut visit: impl FnMut(keys::AdjacencyKey) -> bool,
) -> Result<(), EngineError> {
    let end = keys::prefix_end(prefix);
    let mut bad = None;
    kv.scan(Cf::Adjacency, prefix, end.as_deref(), false, &mut |k, _| {
        match keys::decode_adjacency_key(k) {
            Some(a) => visit(a),
            None => {
                bad = Some(k.to_vec());
                false
            }
        }
    })?;
    match bad {
        Some(k) => Err(EngineError::Corrupt {
            context: "adjacency key",
            detail: format!("{k:?}"),
        }),
        None => Ok(()),
    }
}

fn bitmap_ids(bits: &RoaringTreemap) -> Vec<NodeId> {
    bits.iter().map(NodeId).collect()
}

impl View<'_> {
    fn collect_index(
        &self,
        lower: &[u8],
        upper: Option<&[u8]>,
        order: Order,
        limit: Option<usize>,
    ) -> Result<Vec<NodeId>, EngineError> {
        let mut out = Vec::new();
        let mut bad = false;
        let limit = limit.unwrap_or(usize::MAX);
        if limit == 0 {
            return Ok(out);
        }
        self.kv.scan(
            Cf::PropIndex,
            lower,
            upper,
            order == Order::Descending,
            &mut |k, _| {
                match keys::prop_index_node(k) {
                    Some(id) => out.push(id),
                    None => bad = true,
                }
                !bad && out.len() < limit
            },
        )?;
        if bad {
            return Err(EngineError::Corrupt {
                context: "property index key",
                detail: "too short".into(),
            });
        }
        Ok(out)
    }
}

impl GraphRead for View<'_> {
    fn node(&self, id: NodeId) -> Result<Option<Node>, EngineError> {
        Ok(load_node(self.kv, self.ws, id)?.map(|r| Node {
            id,
            labels: r.labels,
            properties: r.properties,
        }))
    }

    fn edge(&self, id: EdgeId) -> Result<Option<Edge>, EngineError> {
        Ok(load_edge(self.kv, self.ws, id)?.map(|r| Edge {
            id,
            rel_type: r.rel_type,
            start: r.start,
            end: r.end,
            properties: r.properties,
        }))
    }

    fn label_count(&self, label: &str) -> Result<u64, EngineError> {
        if label == schema::ALL_NODES {
            return Ok(0);
        }
        Ok(self.labels.label_bitmap(self.ws, label)?.len())
    }

    fn label_scan(&self, label: &str) -> Result<Vec<NodeId>, EngineError> {
        if label == schema::ALL_NODES {
            return Ok(Vec::new());
        }
        Ok(bitmap_ids(&*self.labels.label_bitmap(self.ws, label)?))
    }

    fn has_label(&self, id: NodeId, label: &str) -> Result<bool, EngineError> {
        if label == schema::ALL_NODES {
            return Ok(false);
        }
        Ok(self.labels.label_bitmap(self.ws, label)?.contains(id.0))
    }

    fn all_nodes(&self) -> Result<Vec<NodeId>, EngineError> {
        Ok(bitmap_ids(
            &*self.labels.label_bitmap(self.ws, schema::ALL_NODES)?,
        ))
    }

    fn node_count(&self) -> Result<u64, EngineError> {
        Ok(self.labels.label_bitmap(self.ws, schema::ALL_NODES)?.len())
    }

    fn adjacent(
        &self,
        id: NodeId,
        direction: Direction,
        rel_type: Option<&str>,
    ) -> Result<Vec<AdjacentEdge>, EngineError> {
        let prefix = keys::adjacency_prefix(self.ws, id, Some(direction), rel_type);
        let mut out = Vec::new();
        scan_adjacency(self.kv, &prefix, |a| {
            out.push(AdjacentEdge {
                edge: a.edge,
                rel_type: a.rel_type,
                neighbour: a.neighbour,
                direction: a.direction,
            });
            true
        })?;
        Ok(out)
    }

    fn degree(
        &self,
        id: NodeId,
        direction: Direction,
        rel_type: Option<&str>,
    ) -> Result<u64, EngineError> {
        let prefix = keys::adjacency_prefix(self.ws, id, Some(direction), rel_type);
        let end = keys::prefix_end(&prefix);
        let mut n = 0u64;
        self.kv.scan(
            Cf::Adjacency,
            &prefix,
            end.as_deref(),
            false,
            &mut |_, _| {
                n += 1;
                true
            },
        )?;
        Ok(n)
    }

    fn index_kind(&self, label: &str, property: &str) -> Option<IndexKind> {
        catalog::usable_kind(self.kv, self.ws, label, property)
    }

    fn index_seek(
        &self,
        label: &str,
        property: &str,
        value: &Value,
    ) -> Result<Option<Vec<NodeId>>, EngineError> {
        if self.index_kind(label, property).is_none() {
            return Ok(None);
        }
        // Null, lists and maps are never equal to a stored value under Cypher's rules here.
        let Some(vkey) = keys::index_value(value) else {
            return Ok(Some(Vec::new()));
        };
        let mut prefix = keys::prop_index_prefix(self.ws, label, property);
        prefix.extend_from_slice(&vkey);
        let end = keys::prefix_end(&prefix);
        self.collect_index(&prefix, end.as_deref(), Order::Ascending, None)
            .map(Some)
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
        let base = keys::prop_index_prefix(self.ws, label, property);
        let encode = |b: Bound<&Value>| -> Result<Bound<Vec<u8>>, ()> {
            match b {
                Bound::Unbounded => Ok(Bound::Unbounded),
                Bound::Included(v) => keys::index_value(v).map(Bound::Included).ok_or(()),
                Bound::Excluded(v) => keys::index_value(v).map(Bound::Excluded).ok_or(()),
            }
        };
        // A bound that no stored value can be compared with (null, list, NaN) matches nothing.
        let (Ok(lo), Ok(hi)) = (encode(lower), encode(upper)) else {
            return Ok(Some(Vec::new()));
        };
        let tag_of = |b: &Bound<Vec<u8>>| match b {
            Bound::Included(k) | Bound::Excluded(k) => Some(k[0]),
            Bound::Unbounded => None,
        };
        let tag = match (tag_of(&lo), tag_of(&hi)) {
            (Some(a), Some(b)) if a != b => return Ok(Some(Vec::new())),
            (a, b) => a.or(b),
        };
        let with = |suffix: &[u8]| {
            let mut k = base.clone();
            k.extend_from_slice(suffix);
            k
        };
        let type_prefix = match tag {
            Some(t) => with(&[t]),
            None => base.clone(),
        };
        let start = match &lo {
            Bound::Included(k) => with(k),
            Bound::Excluded(k) => keys::prefix_end(&with(k)).unwrap_or_else(|| with(k)),
            Bound::Unbounded => type_prefix.clone(),
        };
        let end = match &hi {
            Bound::Included(k) => keys::prefix_end(&with(k)),
            Bound::Excluded(k) => Some(with(k)),
            Bound::Unbounded => keys::prefix_end(&type_prefix),
        };
        if let Some(e) = &end {
            if *e <= start {
                return Ok(Some(Vec::new()));
            }
        }
        self.collect_index(&start, end.as_deref(), order, limit)
            .map(Some)
    }
}
