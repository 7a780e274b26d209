//! Answers over one model version at one snapshot: the base for nodes no commit touched since
//! the base was taken, the snapshot itself (RocksDB and its label bitmaps) for the touched ones.
//!
//! Why that is exact: a commit that changes a node's record, labels or adjacency lists the node
//! as touched (`touched_ids`); a node outside the delta therefore has, at the snapshot, the
//! labels, properties and relationships the base holds for it.

use std::collections::HashSet;

use roaring::RoaringTreemap;

use crate::error::EngineError;
use crate::model::NodeId;
use crate::read::{GraphRead, Hop, PropertyTest};

use super::base::{Base, NONE};

/// `count_label_where` over base + delta.
pub(crate) fn count_where(
    base: &Base,
    delta: &RoaringTreemap,
    snap: &dyn GraphRead,
    label: &str,
    tests: &[PropertyTest],
) -> Result<u64, EngineError> {
    let mut n = 0u64;
    if let Some(rows) = base.labels.get(label) {
        let prepared: Option<Vec<_>> = tests
            .iter()
            .map(|t| rows.columns.get(&t.key).map(|c| c.prepare(t)))
            .collect();
        // A test on a key no node of the label has: nothing in the base passes.
        if let Some(prepared) = prepared.filter(|p| !p.iter().any(|t| t.is_never())) {
            // Rows of touched nodes are answered from the snapshot below.
            let skip = touched_rows(base, &rows.rows, delta);
            if let (None, [one]) = (&skip, prepared.as_slice()) {
                n += one.count_all(rows.rows.len());
            } else {
                for row in 0..rows.rows.len() {
                    if skip
                        .as_ref()
                        .is_some_and(|s| s[row / 64] & (1 << (row % 64)) != 0)
                    {
                        continue;
                    }
                    if prepared.iter().all(|t| t.passes(row)) {
                        n += 1;
                    }
                }
            }
        }
    }
    for id in delta.iter().map(NodeId) {
        if !snap.has_label(id, label)? {
            continue;
        }
        let Some(node) = snap.node(id)? else { continue };
        if tests.iter().all(|t| t.passes(node.properties.get(&t.key))) {
            n += 1;
        }
    }
    Ok(n)
}

/// A bitset over a label's rows marking those of touched nodes; None when no row is touched.
fn touched_rows(base: &Base, rows: &[u32], delta: &RoaringTreemap) -> Option<Vec<u64>> {
    let mut skip: Option<Vec<u64>> = None;
    for id in delta.iter() {
        let d = base.dense(id);
        if d == NONE {
            continue;
        }
        if let Ok(row) = rows.binary_search(&d) {
            let s = skip.get_or_insert_with(|| vec![0; rows.len().div_ceil(64)]);
            s[row / 64] |= 1 << (row % 64);
        }
    }
    skip
}

/// The set of nodes one hop reaches: base nodes as dense bits, others (created after the base)
/// by id.
struct Frontier {
    dense: Vec<u32>,
    seen: Vec<u64>,
    extra: HashSet<u64>,
}

impl Frontier {
    fn new(n: usize) -> Frontier {
        Frontier {
            dense: Vec::new(),
            seen: vec![0; n.div_ceil(64)],
            extra: HashSet::new(),
        }
    }

    fn add(&mut self, base: &Base, id: u64) {
        let d = base.dense(id);
        if d == NONE {
            self.extra.insert(id);
        } else {
            self.add_dense(d);
        }
    }

    #[inline]
    fn add_dense(&mut self, d: u32) {
        let (w, b) = (d as usize / 64, 1u64 << (d % 64));
        if self.seen[w] & b == 0 {
            self.seen[w] |= b;
            self.dense.push(d);
        }
    }

    fn len(&self) -> usize {
        self.dense.len() + self.extra.len()
    }
}

/// `reach_count` over base + delta.
pub(crate) fn reach(
    base: &Base,
    delta: &RoaringTreemap,
    snap: &dyn GraphRead,
    starts: &[NodeId],
    hops: &[Hop],
) -> Result<u64, EngineError> {
    let n = base.ids.len();
    let mut frontier = Frontier::new(n);
    for s in starts {
        frontier.add(base, s.0);
    }
    for hop in hops {
        let mut next = Frontier::new(n);
        let csr = base.adjacency.get(&(hop.rel_type.clone(), hop.direction));
        let members = hop.label.as_ref().map(|l| base.members.get(l));
        let no_delta = delta.is_empty();
        // Whether a node reached on this hop carries the hop's label.
        let labelled = |id: u64, d: u32| -> Result<bool, EngineError> {
            let Some(label) = &hop.label else {
                return Ok(true);
            };
            if d != NONE && (no_delta || !delta.contains(id)) {
                return Ok(members
                    .flatten()
                    .is_some_and(|bits| base.is_member(bits, d)));
            }
            snap.has_label(NodeId(id), label)
        };
        let from_snapshot = |id: u64, next: &mut Frontier| -> Result<(), EngineError> {
            for a in snap.adjacent(NodeId(id), hop.direction, Some(&hop.rel_type))? {
                let nb = a.neighbour.0;
                if labelled(nb, base.dense(nb))? {
                    next.add(base, nb);
                }
            }
            Ok(())
        };
        for &d in &frontier.dense {
            let id = base.ids[d as usize];
            if !no_delta && delta.contains(id) {
                from_snapshot(id, &mut next)?;
                continue;
            }
            let Some(csr) = csr else { continue };
            for &t in csr.neighbours(d) {
                if no_delta {
                    if members.is_none_or(|m| m.is_some_and(|bits| base.is_member(bits, t))) {
                        next.add_dense(t);
                    }
                } else {
                    let tid = base.ids[t as usize];
                    if labelled(tid, t)? {
                        next.add_dense(t);
                    }
                }
            }
        }
        for &id in &frontier.extra {
            from_snapshot(id, &mut next)?;
        }
        frontier = next;
    }
    Ok(frontier.len() as u64)
}
