//! The base of a read model: one workspace's nodes as of one snapshot, laid out for scans.
//!
//! - Every node gets a dense index (ascending id order); `IdMap` maps ids to it.
//! - Per label: the rows (dense indexes of its nodes, ascending), a membership bitset over
//!   dense indexes, and one column per property seen on the label's nodes.
//! - Per (relationship type, direction): CSR adjacency (offsets per dense node, neighbours as
//!   dense indexes).
//!
//! Built by one sequential walk of the node family and one of the adjacency family of the
//! workspace; never changed afterwards (the delta handles later commits, see `mod.rs`).

use std::collections::{BTreeMap, HashMap};
#[cfg(feature = "storage")]
use std::sync::atomic::{AtomicBool, Ordering};

#[cfg(feature = "storage")]
use crate::codec;
#[cfg(feature = "storage")]
use crate::columns::Cf;
use crate::error::EngineError;
#[cfg(feature = "storage")]
use crate::keys;
#[cfg(feature = "storage")]
use crate::model::WorkspaceId;
use crate::model::{Direction, NodeId, Properties, Value};
use crate::read::GraphRead;
#[cfg(feature = "storage")]
use crate::store::{Step, StoreSnapshot};

use super::column::Column;

/// No dense index.
pub(crate) const NONE: u32 = u32::MAX;

/// Node id -> dense index.
#[derive(Debug)]
enum IdMap {
    /// A table indexed by id (ids are allocated densely, shared with edges).
    Table(Vec<u32>),
    /// Binary search in the sorted ids (when ids are too sparse for a table).
    Search,
}

#[derive(Debug)]
pub(crate) struct LabelRows {
    /// Dense indexes of the label's nodes, ascending (so ids ascending too).
    pub rows: Vec<u32>,
    /// By property key. A B-tree: a label has few keys and every query looks some up, where a
    /// few comparisons of short names beat hashing one with SipHash (and, unlike a fast
    /// unkeyed hash, user-chosen keys cannot make them collide).
    pub columns: BTreeMap<String, Column>,
    /// Membership bitset over dense indexes.
    pub members: Vec<u64>,
    /// Per 64-bit word of the label's membership bitset, the members before it: a dense
    /// index's row in `rows` is one popcount away (`row_of`).
    pub rank: Vec<u32>,
    /// Per string column, its equality index once a seek built it (`seek`).
    pub seeks: super::seek::StrIndexes,
}

#[derive(Debug)]
pub(crate) struct Csr {
    /// `offsets[d]..offsets[d + 1]` are node d's entries in `targets` (and `edges`).
    pub offsets: Vec<u32>,
    pub targets: Vec<u32>,
    /// The relationship id of each entry (so a traversal can bind and tell apart
    /// relationships, as MATCH's uniqueness needs).
    pub edges: Vec<u64>,
}

impl Csr {
    #[inline]
    pub fn neighbours(&self, dense: u32) -> &[u32] {
        let d = dense as usize;
        match (self.offsets.get(d), self.offsets.get(d + 1)) {
            (Some(a), Some(b)) => &self.targets[*a as usize..*b as usize],
            _ => &[],
        }
    }

    /// The relationship ids of node `dense`'s entries, aligned with `neighbours`.
    #[inline]
    pub fn edges(&self, dense: u32) -> &[u64] {
        let d = dense as usize;
        match (self.offsets.get(d), self.offsets.get(d + 1)) {
            (Some(a), Some(b)) => &self.edges[*a as usize..*b as usize],
            _ => &[],
        }
    }
}

#[derive(Debug)]
pub(crate) struct Base {
    /// Node ids by dense index, ascending.
    pub ids: Vec<u64>,
    map: IdMap,
    /// By label name (a B-tree for the reason `LabelRows::columns` is one).
    pub labels: BTreeMap<String, LabelRows>,
    pub adjacency: HashMap<(String, Direction), Csr>,
    /// Unique to this base in the process (never reused, unlike its address), so state derived
    /// from its columns (a string column's codes) can be kept while the same base answers.
    pub generation: u64,
}

/// Why a build did not produce a base.
#[cfg(feature = "storage")]
#[derive(Debug)]
pub(crate) enum BuildStop {
    OverBudget,
    Stopped,
    Failed(EngineError),
}

#[cfg(feature = "storage")]
impl From<EngineError> for BuildStop {
    fn from(e: EngineError) -> Self {
        BuildStop::Failed(e)
    }
}

impl Base {
    /// Dense index of a node id (NONE when the base has no such node).
    #[inline]
    pub fn dense(&self, id: u64) -> u32 {
        match &self.map {
            IdMap::Table(t) => t.get(id as usize).copied().unwrap_or(NONE),
            IdMap::Search => self.ids.binary_search(&id).map_or(NONE, |d| d as u32),
        }
    }

    #[cfg(feature = "storage")]
    #[inline]
    pub fn is_member(&self, bits: &[u64], dense: u32) -> bool {
        bits.get(dense as usize / 64)
            .is_some_and(|w| w & (1 << (dense % 64)) != 0)
    }

    /// Heap bytes held (vectors by capacity, dictionary strings, a rough hash-map overhead).
    pub fn bytes(&self) -> usize {
        let map = match &self.map {
            IdMap::Table(t) => t.capacity() * 4,
            IdMap::Search => 0,
        };
        let labels: usize = self
            .labels
            .iter()
            .map(|(l, r)| {
                l.capacity()
                    + (r.rows.capacity() + r.rank.capacity()) * 4
                    + r.members.capacity() * 8
                    + 64
                    + r.columns
                        .iter()
                        .map(|(k, c)| k.capacity() + 64 + c.bytes())
                        .sum::<usize>()
                    + r.seeks
                        .values()
                        .filter_map(|s| s.get())
                        .map(|s| s.bytes())
                        .sum::<usize>()
            })
            .sum();
        let adjacency: usize = self
            .adjacency
            .iter()
            .map(|((t, _), c)| {
                t.capacity()
                    + 64
                    + (c.offsets.capacity() + c.targets.capacity()) * 4
                    + c.edges.capacity() * 8
            })
            .sum();
        self.ids.capacity() * 8 + map + labels + adjacency
    }

    /// Builds the base of workspace `ws` from a store snapshot. Stops early when `stop` is set
    /// or when the structures outgrow `budget` bytes.
    #[cfg(feature = "storage")]
    pub fn build(
        snap: &StoreSnapshot<'_>,
        ws: WorkspaceId,
        budget: usize,
        stop: &AtomicBool,
    ) -> Result<Base, BuildStop> {
        let prefix = keys::workspace_prefix(ws);
        let upper = keys::prefix_end(&prefix);
        let mut nodes = NodesBuilder::default();
        let mut failure: Option<BuildStop> = None;
        snap.walk(Cf::Nodes, &prefix, upper.as_deref(), &mut |k, v| {
            let Some((_, id)) = keys::decode_id_key(k) else {
                failure = Some(BuildStop::Failed(EngineError::Corrupt {
                    context: "node key",
                    detail: format!("{k:?}"),
                }));
                return Step::Stop;
            };
            let node = match codec::decode_node(v) {
                Ok(n) => n,
                Err(e) => {
                    failure = Some(BuildStop::Failed(e));
                    return Step::Stop;
                }
            };
            nodes.add(id, node.labels, &node.properties);
            if nodes.ids.len() % 4096 == 0 {
                if stop.load(Ordering::Relaxed) {
                    failure = Some(BuildStop::Stopped);
                    return Step::Stop;
                }
                if nodes.approx > budget {
                    failure = Some(BuildStop::OverBudget);
                    return Step::Stop;
                }
            }
            Step::Next
        })?;
        if let Some(f) = failure {
            return Err(f);
        }
        let mut base = nodes.finish();
        base.adjacency = build_adjacency(snap, &base, &prefix, upper.as_deref(), stop)?;
        let bytes = base.bytes();
        if bytes > budget {
            return Err(BuildStop::OverBudget);
        }
        Ok(base)
    }

    /// The base of any graph source, read node by node through `GraphRead` (the query crate's
    /// in-memory model graph and the fuzz targets use it; a store builds from its snapshot).
    pub fn from_graph(g: &dyn GraphRead) -> Result<Base, EngineError> {
        let mut nodes = NodesBuilder::default();
        for id in g.all_nodes()? {
            if let Some(node) = g.node(id)? {
                nodes.add(id.0, node.labels, &node.properties);
            }
        }
        let mut base = nodes.finish();
        let n = base.ids.len();
        let mut lists: HashMap<(String, Direction), Lists> = HashMap::new();
        for d in 0..n {
            let id = NodeId(base.ids[d]);
            for dir in [Direction::Outgoing, Direction::Incoming] {
                for a in g.adjacent(id, dir, None)? {
                    let to = base.dense(a.neighbour.0);
                    if to == NONE {
                        continue;
                    }
                    let (counts, targets, edges) = lists
                        .entry((a.rel_type, dir))
                        .or_insert_with(|| (vec![0; n], Vec::new(), Vec::new()));
                    counts[d] += 1;
                    targets.push(to);
                    edges.push(a.edge.0);
                }
            }
        }
        base.adjacency = csr_from(lists, n);
        Ok(base)
    }
}

/// A label's rows and, per key, its present values (row, value), before columns are built.
type PendingLabel = (Vec<u32>, BTreeMap<String, Vec<(u32, Value)>>);

/// Nodes gathered in ascending id order, before the columns are built.
#[derive(Default)]
struct NodesBuilder {
    ids: Vec<u64>,
    pending: HashMap<String, PendingLabel>,
    /// Rough bytes so far (for the budget).
    approx: usize,
}

impl NodesBuilder {
    fn add(&mut self, id: u64, labels: Vec<String>, properties: &Properties) {
        let dense = self.ids.len() as u32;
        self.ids.push(id);
        for label in labels {
            let (rows, cols) = self.pending.entry(label).or_default();
            let row = rows.len() as u32;
            rows.push(dense);
            for (key, value) in properties {
                self.approx += 16;
                cols.entry(key.clone())
                    .or_default()
                    .push((row, value.clone()));
            }
            self.approx += 12;
        }
    }

    fn finish(self) -> Base {
        let ids = self.ids;
        let max_id = ids.last().copied().unwrap_or(0);
        let map = if (max_id as usize) <= ids.len().saturating_mul(8) + 1024 {
            let mut table = vec![NONE; max_id as usize + 1];
            for (d, id) in ids.iter().enumerate() {
                table[*id as usize] = d as u32;
            }
            IdMap::Table(table)
        } else {
            IdMap::Search
        };
        let n = ids.len();
        let mut labels = BTreeMap::new();
        for (label, (rows, cols)) in self.pending {
            let mut bits = vec![0u64; n.div_ceil(64)];
            for d in &rows {
                bits[*d as usize / 64] |= 1 << (d % 64);
            }
            let mut rank = Vec::with_capacity(bits.len());
            let mut before = 0u32;
            for w in &bits {
                rank.push(before);
                before += w.count_ones();
            }
            let columns = cols
                .into_iter()
                .map(|(k, present)| (k, Column::build(rows.len(), present)))
                .collect();
            let seeks = super::seek::cells(&columns);
            labels.insert(
                label,
                LabelRows {
                    rows,
                    columns,
                    members: bits,
                    rank,
                    seeks,
                },
            );
        }
        static GENERATIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        Base {
            ids,
            map,
            labels,
            adjacency: HashMap::new(),
            generation: GENERATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        }
    }
}

/// One (type, direction)'s entries per dense source, targets and relationship ids.
type Lists = (Vec<u32>, Vec<u32>, Vec<u64>);

/// CSR lists from per-source entry counts (sources in ascending dense order) and targets.
fn csr_from(
    lists: HashMap<(String, Direction), Lists>,
    n: usize,
) -> HashMap<(String, Direction), Csr> {
    lists
        .into_iter()
        .map(|(key, (counts, targets, edges))| {
            let mut offsets = Vec::with_capacity(n + 1);
            let mut at = 0u32;
            offsets.push(0);
            for c in counts {
                at += c;
                offsets.push(at);
            }
            (
                key,
                Csr {
                    offsets,
                    targets,
                    edges,
                },
            )
        })
        .collect()
}

#[cfg(feature = "storage")]
/// CSR per (type, direction) from one walk of the workspace's adjacency keys, which come
/// ordered by node, so each list's sources arrive in ascending dense order.
fn build_adjacency(
    snap: &StoreSnapshot<'_>,
    base: &Base,
    prefix: &[u8],
    upper: Option<&[u8]>,
    stop: &AtomicBool,
) -> Result<HashMap<(String, Direction), Csr>, BuildStop> {
    let n = base.ids.len();
    let mut lists: HashMap<(String, Direction), Lists> = HashMap::new();
    let mut failure = None;
    let mut seen = 0usize;
    snap.walk(Cf::Adjacency, prefix, upper, &mut |k, _| {
        let Some(a) = keys::decode_adjacency_key(k) else {
            failure = Some(BuildStop::Failed(EngineError::Corrupt {
                context: "adjacency key",
                detail: format!("{k:?}"),
            }));
            return Step::Stop;
        };
        let (from, to) = (base.dense(a.node.0), base.dense(a.neighbour.0));
        if from != NONE && to != NONE {
            let (counts, targets, edges) = lists
                .entry((a.rel_type, a.direction))
                .or_insert_with(|| (vec![0; n], Vec::new(), Vec::new()));
            counts[from as usize] += 1;
            targets.push(to);
            edges.push(a.edge.0);
        }
        seen += 1;
        if seen % 4096 == 0 && stop.load(Ordering::Relaxed) {
            failure = Some(BuildStop::Stopped);
            return Step::Stop;
        }
        Step::Next
    })?;
    if let Some(f) = failure {
        return Err(f);
    }
    Ok(csr_from(lists, n))
}
