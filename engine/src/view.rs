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
use crate::read::{Comparison, GraphRead, IndexKind, Order, PropertyTest};
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
        let hits = self.collect_index_marked(lower, upper, order, limit, &|_| false)?;
        Ok(hits.into_iter().map(|(id, _)| id).collect())
    }

    /// Index entries in key order, each marked when `marked(key)` holds. Marked entries are
    /// those the caller re-checks (and may drop), so they do not count towards `limit`: the
    /// scan goes on until `limit` unmarked ones are in.
    fn collect_index_marked(
        &self,
        lower: &[u8],
        upper: Option<&[u8]>,
        order: Order,
        limit: Option<usize>,
        marked: &dyn Fn(&[u8]) -> bool,
    ) -> Result<Vec<(NodeId, bool)>, EngineError> {
        let mut out = Vec::new();
        let mut bad = false;
        let limit = limit.unwrap_or(usize::MAX);
        if limit == 0 {
            return Ok(out);
        }
        let mut unmarked = 0usize;
        self.kv.scan(
            Cf::PropIndex,
            lower,
            upper,
            order == Order::Descending,
            &mut |k, _| {
                match keys::prop_index_node(k) {
                    Some(id) => {
                        let m = marked(k);
                        unmarked += usize::from(!m);
                        out.push((id, m));
                    }
                    None => bad = true,
                }
                !bad && unmarked < limit
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

    /// Keeps the entries that are unmarked or whose node's `property` passes every test
    /// (the re-check of entries whose index key is coarser than their value).
    fn recheck(
        &self,
        hits: Vec<(NodeId, bool)>,
        property: &str,
        tests: &[PropertyTest],
        limit: Option<usize>,
    ) -> Result<Vec<NodeId>, EngineError> {
        let mut out = Vec::with_capacity(hits.len());
        for (id, marked) in hits {
            if limit.is_some_and(|l| out.len() >= l) {
                break;
            }
            if marked {
                let Some(node) = load_node(self.kv, self.ws, id)? else {
                    continue;
                };
                let v = node.properties.get(property);
                if !tests.iter().all(|t| t.passes(v)) {
                    continue;
                }
            }
            out.push(id);
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
        if keys::index_key_is_coarse(vkey[0]) {
            let hits = self.collect_index_marked(
                &prefix,
                end.as_deref(),
                Order::Ascending,
                None,
                &|_| true,
            )?;
            let test = PropertyTest {
                key: property.to_owned(),
                op: Comparison::Eq,
                value: value.clone(),
            };
            return self.recheck(hits, property, &[test], None).map(Some);
        }
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
        // Durations have no order: no range holds any.
        if tag.is_some_and(keys::index_tag_is_unordered) {
            return Ok(Some(Vec::new()));
        }
        if tag.is_some_and(keys::index_key_is_coarse) {
            return self.coarse_range(&base, property, (lower, upper), (lo, hi), order, limit);
        }
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

impl View<'_> {
    /// A range over keys coarser than their values: entries whose key is a bound's key are
    /// read (both sides inclusive) and re-checked against the bounds themselves.
    fn coarse_range(
        &self,
        base: &[u8],
        property: &str,
        (lower, upper): (Bound<&Value>, Bound<&Value>),
        (lo, hi): (Bound<Vec<u8>>, Bound<Vec<u8>>),
        order: Order,
        limit: Option<usize>,
    ) -> Result<Option<Vec<NodeId>>, EngineError> {
        let with = |suffix: &[u8]| {
            let mut k = base.to_vec();
            k.extend_from_slice(suffix);
            k
        };
        let key_of = |b: &Bound<Vec<u8>>| match b {
            Bound::Included(k) | Bound::Excluded(k) => Some(k.clone()),
            Bound::Unbounded => None,
        };
        let (lo_key, hi_key) = (key_of(&lo), key_of(&hi));
        let tag = lo_key.as_ref().or(hi_key.as_ref()).map(|k| k[0]);
        let type_prefix = with(&tag.into_iter().collect::<Vec<u8>>());
        let start = lo_key.as_deref().map_or_else(|| type_prefix.clone(), with);
        let end = match &hi_key {
            Some(k) => keys::prefix_end(&with(k)),
            None => keys::prefix_end(&type_prefix),
        };
        if end.as_ref().is_some_and(|e| *e <= start) {
            return Ok(Some(Vec::new()));
        }
        let at_bound = |k: &[u8]| {
            let value = k.get(base.len()..k.len().saturating_sub(8)).unwrap_or(&[]);
            lo_key.as_deref() == Some(value) || hi_key.as_deref() == Some(value)
        };
        let hits = self.collect_index_marked(&start, end.as_deref(), order, limit, &at_bound)?;
        let test = |b: Bound<&Value>, inc: Comparison, exc: Comparison| match b {
            Bound::Included(v) => Some((inc, v.clone())),
            Bound::Excluded(v) => Some((exc, v.clone())),
            Bound::Unbounded => None,
        };
        let tests: Vec<PropertyTest> = [
            test(lower, Comparison::Ge, Comparison::Gt),
            test(upper, Comparison::Le, Comparison::Lt),
        ]
        .into_iter()
        .flatten()
        .map(|(op, value)| PropertyTest {
            key: property.to_owned(),
            op,
            value,
        })
        .collect();
        self.recheck(hits, property, &tests, limit).map(Some)
    }
}
