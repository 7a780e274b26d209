//! Answers over one model version at one snapshot: the base for nodes no commit touched since
//! the base was taken, the snapshot itself (RocksDB and its label bitmaps) for the touched ones.
//!
//! Why that is exact: a commit that changes a node's record, labels or adjacency lists the node
//! as touched (`touched_ids`); a node outside the delta therefore has, at the snapshot, the
//! labels, properties and relationships the base holds for it.

use std::collections::HashSet;
use std::ops::Range;

use roaring::RoaringTreemap;

use crate::error::EngineError;
use crate::model::NodeId;
use crate::read::{GraphRead, Hop, PropertyTest};

use super::base::{Base, LabelRows, NONE};
use super::column::{Column, Prepared};

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
            n += count_base(rows, tests, &prepared, skip.as_deref());
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

/// The label's base rows that pass every test, `skip` rows (touched ones) left out.
///
/// When the tests on one number or datetime key bound a range of its values, the column's
/// rows sorted by value give the rows inside by two binary searches: a count of that range
/// alone is its length (less the touched rows inside); with tests on other keys too, only
/// the rows inside are visited when the range is narrow. Otherwise every row is tested.
fn count_base(
    rows: &LabelRows,
    tests: &[PropertyTest],
    prepared: &[Prepared<'_>],
    skip: Option<&[u64]>,
) -> u64 {
    let len = rows.rows.len();
    let skipped = |row: usize| skip.is_some_and(|s| s[row / 64] & (1 << (row % 64)) != 0);
    // The narrowest range that one key's tests allow, over that key's sorted rows.
    let mut best: Option<(&str, Range<usize>, &[u32])> = None;
    for t in tests {
        if best.as_ref().is_some_and(|(k, _, _)| *k == t.key) {
            continue;
        }
        let Some(sorted) = rows.columns.get(&t.key).and_then(Column::sorted) else {
            continue;
        };
        let mut range = 0..sorted.len();
        let mut ranged = true;
        for (u, p) in tests.iter().zip(prepared) {
            if u.key != t.key {
                continue;
            }
            match p.sorted_range(sorted) {
                Some(r) => range = range.start.max(r.start)..range.end.min(r.end),
                None => ranged = false,
            }
        }
        if !ranged {
            continue;
        }
        if range.start >= range.end {
            return 0;
        }
        if best.as_ref().is_none_or(|(_, b, _)| range.len() < b.len()) {
            best = Some((t.key.as_str(), range, sorted));
        }
    }
    if let Some((key, range, sorted)) = best {
        let others: Vec<&Prepared<'_>> = tests
            .iter()
            .zip(prepared)
            .filter(|(t, _)| t.key != key)
            .map(|(_, p)| p)
            .collect();
        if others.is_empty() {
            // Every test is the range: its length, less the touched rows inside it.
            let mut n = range.len() as u64;
            for (w, word) in skip.unwrap_or(&[]).iter().enumerate() {
                let mut bits = *word;
                while bits != 0 {
                    let row = w * 64 + bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    if row < len && prepared.iter().all(|p| p.passes(row)) {
                        n -= 1;
                    }
                }
            }
            return n;
        }
        // Random reads of the other columns pay only for a narrow range.
        if range.len() * 4 < len {
            return sorted[range]
                .iter()
                .filter(|r| {
                    let row = **r as usize;
                    !skipped(row) && others.iter().all(|p| p.passes(row))
                })
                .count() as u64;
        }
    }
    if let (None, [one]) = (skip, prepared) {
        return one.count_all(len);
    }
    (0..len)
        .filter(|row| !skipped(*row) && prepared.iter().all(|t| t.passes(*row)))
        .count() as u64
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
        let members = hop
            .label
            .as_ref()
            .map(|l| base.labels.get(l).map(|r| r.members.as_slice()));
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
