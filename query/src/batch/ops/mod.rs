//! The batch operators: each pulls chunks from its input and hands chunks on, mirroring one
//! row operator of `exec` (same order of rows, same errors and limits).

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;
use std::time::Instant;

use svc_engine::{ColumnView, CsrView, Direction, NodeId};

use crate::error::QueryError;
use crate::exec::{count_arg, AggState, BoxOp};
use crate::functions::AggKind;
use crate::plan::{AggSpec, ScanSource};
use crate::value::{order, write_key, Val};

use super::chunk::{Chunk, Col, NodeRef, CHUNK, NULL};
use super::expr::{cell, truth, BExpr, Bx};

mod group;
mod order;
mod topk;
mod varlen;

pub(in crate::batch) use group::*;
pub(in crate::batch) use order::*;
pub(in crate::batch) use varlen::*;

pub(super) trait BOp {
    fn next(&mut self, bx: &Bx<'_, '_>) -> Result<Option<Chunk>, QueryError>;
}

pub(super) type BBox<'p> = Box<dyn BOp + 'p>;

/// The time budget, checked once per chunk.
pub(super) fn check_deadline(bx: &Bx<'_, '_>) -> Result<(), QueryError> {
    if Instant::now() > bx.cx.deadline {
        return Err(QueryError::Timeout(bx.cx.limits.time));
    }
    Ok(())
}

/// A column from values: node references when every value is a node or null.
pub(super) fn col_from_vals(bx: &Bx<'_, '_>, vals: Vec<Val>) -> Col {
    if vals.iter().all(Val::is_null) {
        return Col::Null;
    }
    if vals.iter().all(|v| matches!(v, Val::Node(_) | Val::Null)) {
        return Col::Nodes(
            vals.iter()
                .map(|v| match v {
                    Val::Node(id) => bx.node_ref(*id),
                    _ => NULL,
                })
                .collect(),
        );
    }
    Col::Vals(vals)
}

/// Node references of a column that must hold nodes (`what` names the operation for the
/// error a row of another type gives, as the row path words it).
fn node_refs(bx: &Bx<'_, '_>, c: &Col, len: usize) -> Result<Vec<NodeRef>, QueryError> {
    match c {
        Col::Nodes(v) => Ok(v.clone()),
        Col::Null => Ok(vec![NULL; len]),
        other => (0..len)
            .map(|i| match cell(bx, other, i) {
                Val::Node(id) => Ok(bx.node_ref(id)),
                Val::Null => Ok(NULL),
                v => Err(QueryError::type_err(format!(
                    "cannot expand from a {}",
                    v.type_name()
                ))),
            })
            .collect(),
    }
}

pub(super) struct Once {
    pub(super) done: bool,
}

impl BOp for Once {
    fn next(&mut self, bx: &Bx<'_, '_>) -> Result<Option<Chunk>, QueryError> {
        if self.done {
            return Ok(None);
        }
        self.done = true;
        Ok(Some(Chunk::new(1, bx.width)))
    }
}

/// The outer chunk of an OPTIONAL MATCH, handed in by `Optional`.
pub(super) struct Argument {
    pub(super) chunk: ArgChunk,
}

impl BOp for Argument {
    fn next(&mut self, _bx: &Bx<'_, '_>) -> Result<Option<Chunk>, QueryError> {
        Ok(self.chunk.borrow_mut().take())
    }
}

/// Rows of a row-path subtree (an operator the batch executor does not have) as chunks.
pub(super) struct FromRows<'p> {
    pub(super) input: BoxOp<'p>,
    pub(super) done: bool,
}

impl BOp for FromRows<'_> {
    fn next(&mut self, bx: &Bx<'_, '_>) -> Result<Option<Chunk>, QueryError> {
        if self.done {
            return Ok(None);
        }
        let mut rows = Vec::new();
        while rows.len() < CHUNK {
            match self.input.next(bx.cx)? {
                Some(r) => rows.push(r),
                None => {
                    self.done = true;
                    break;
                }
            }
        }
        if rows.is_empty() {
            return Ok(None);
        }
        let mut ch = Chunk::new(rows.len(), bx.width);
        for (s, col) in ch.cols.iter_mut().enumerate() {
            let vals: Vec<Val> = rows
                .iter_mut()
                .map(|r| {
                    r.get_mut(s)
                        .map(|v| std::mem::replace(v, Val::Null))
                        .unwrap_or(Val::Null)
                })
                .collect();
            *col = col_from_vals(bx, vals);
        }
        Ok(Some(ch))
    }
}

/// A label scan (or of every node), cross the input rows.
pub(super) struct Scan<'p> {
    pub(super) input: BBox<'p>,
    pub(super) slot: usize,
    pub(super) source: &'p ScanSource,
    pub(super) label: Option<&'p str>,
    pub(super) check_labels: &'p [String],
    pub(super) candidates: Option<Candidates>,
    /// The input chunk being crossed, its row and the candidate reached.
    pub(super) at: Option<(Chunk, usize, usize)>,
}

/// A scan's nodes: the label's rows of the base as they are (nothing touched, no other
/// label to check), or a list.
pub(super) enum Candidates {
    LabelRows,
    List(Vec<NodeRef>),
}

impl Scan<'_> {
    /// The scanned nodes in id order: untouched base rows, and the touched nodes that carry
    /// the label at the snapshot.
    fn candidates(&self, bx: &Bx<'_, '_>) -> Result<Vec<NodeRef>, QueryError> {
        if let Some(rows) = range_by_column(bx, self.source) {
            let mut out = Vec::with_capacity(rows.len());
            for r in rows {
                if bx.has_labels(r, self.check_labels)? {
                    out.push(r);
                }
            }
            return Ok(out);
        }
        if matches!(
            self.source,
            ScanSource::Seek { .. } | ScanSource::Range { .. }
        ) {
            // An index's candidates, in its order (the source reads no slot: checked when
            // compiled), exactly as the row path finds them.
            let ids = crate::exec::candidates(self.source, &[], bx.cx)?;
            let mut out = Vec::with_capacity(ids.len());
            for id in ids {
                let r = bx.node_ref(id);
                if bx.has_labels(r, self.check_labels)? {
                    out.push(r);
                }
            }
            return Ok(out);
        }
        let g = bx.cx.g;
        let mut touched: Vec<NodeRef> = Vec::new();
        for id in bx.m.touched_ids() {
            let id = NodeId(*id);
            let there = match self.label {
                Some(l) => g.has_label(id, l)?,
                None => g.node(id)?.is_some(),
            };
            if there {
                touched.push(bx.node_ref(id));
            }
        }
        let mut out = Vec::new();
        let mut merge = |base: &mut dyn Iterator<Item = NodeRef>| {
            let mut t = touched.iter().peekable();
            for d in base {
                if bx.m.is_touched(d) {
                    continue;
                }
                let id = bx.m.id(d);
                while let Some(&&x) = t.peek() {
                    if bx.node_id(x) < id {
                        out.push(x);
                        t.next();
                    } else {
                        break;
                    }
                }
                out.push(d);
            }
            out.extend(t.copied());
        };
        match self.label {
            Some(l) => match bx.m.label(l) {
                Some(view) => merge(&mut view.rows().iter().copied()),
                None => merge(&mut std::iter::empty()),
            },
            None => merge(&mut (0..bx.m.len() as u32)),
        }
        if !self.check_labels.is_empty() {
            let mut kept = Vec::with_capacity(out.len());
            for r in out {
                if bx.has_labels(r, self.check_labels)? {
                    kept.push(r);
                }
            }
            out = kept;
        }
        Ok(out)
    }
}

/// Index entries read per label row scanned at the same cost (an index entry is a RocksDB
/// iterator step and a node lookup, about 100 ns; a column row about 2 ns).
const INDEX_ENTRY_COST: usize = 50;
/// Rows sampled to estimate a range's selectivity.
const SAMPLE: usize = 256;

/// The nodes of an index range scan read from the model's column instead, when the range
/// is not selective enough for the index to pay (estimated from an even sample of the
/// column): every untouched base node of the label whose integer (or datetime) value lies
/// in the range, in the index's order (value, then id). None: use the index.
fn range_by_column(bx: &Bx<'_, '_>, source: &ScanSource) -> Option<Vec<NodeRef>> {
    let ScanSource::Range {
        label,
        key,
        lower,
        upper,
        limit: None,
        order: svc_engine::Order::Ascending,
    } = source
    else {
        return None;
    };
    if !bx.m.untouched() {
        return None;
    }
    let view = bx.m.label(label)?;
    let Some(ColumnView::Integers {
        values,
        absent,
        datetime,
    }) = view.column(key)
    else {
        return None;
    };
    // The bounds as integers of the column's kind (another kind: the index decides).
    let as_int = |b: &std::ops::Bound<Val>| -> Option<std::ops::Bound<i64>> {
        use std::ops::Bound::*;
        let v = |x: &Val| match (x, datetime) {
            (Val::Int(i), false) | (Val::DateTime(i), true) => Some(*i),
            _ => None,
        };
        Some(match b {
            Included(x) => Included(v(x)?),
            Excluded(x) => Excluded(v(x)?),
            Unbounded => Unbounded,
        })
    };
    let range = (as_int(lower)?, as_int(upper)?);
    let rows = view.rows();
    let n = rows.len().min(values.len());
    let inside = |i: usize| {
        use std::ops::RangeBounds;
        range.contains(&values[i]) && (absent.is_empty() || !absent.contains(i as u32))
    };
    // Cost: the index reads each match; the column reads each row.
    if n > 0 {
        let step = (n / SAMPLE).max(1);
        let hits = (0..n).step_by(step).filter(|i| inside(*i)).count();
        let sampled = n.div_ceil(step);
        if hits * INDEX_ENTRY_COST < sampled {
            return None;
        }
    }
    let mut found: Vec<(i64, NodeRef)> = (0..n)
        .filter(|i| inside(*i))
        .map(|i| (values[i], rows[i]))
        .collect();
    // Node references of the base follow node ids.
    found.sort_unstable();
    Some(found.into_iter().map(|(_, r)| r).collect())
}

impl BOp for Scan<'_> {
    fn next(&mut self, bx: &Bx<'_, '_>) -> Result<Option<Chunk>, QueryError> {
        if self.candidates.is_none() {
            let plain = bx.m.untouched()
                && self.check_labels.is_empty()
                && !matches!(
                    self.source,
                    ScanSource::Seek { .. } | ScanSource::Range { .. }
                )
                && self.label.is_some();
            self.candidates = Some(if plain {
                Candidates::LabelRows
            } else {
                Candidates::List(self.candidates(bx)?)
            });
        }
        let cands: &[NodeRef] = match (&self.candidates, self.label) {
            (Some(Candidates::List(v)), _) => v,
            (Some(Candidates::LabelRows), Some(l)) => bx.m.label(l).map_or(&[], |v| v.rows()),
            _ => &[],
        };
        loop {
            check_deadline(bx)?;
            if self.at.is_none() {
                match self.input.next(bx)? {
                    Some(ch) => self.at = Some((ch, 0, 0)),
                    None => return Ok(None),
                }
            }
            let Some((input, row, pos)) = &mut self.at else {
                continue;
            };
            let mut idx = Vec::new();
            let mut nodes = Vec::new();
            while *row < input.len && idx.len() < CHUNK && !cands.is_empty() {
                let take = (CHUNK - idx.len()).min(cands.len() - *pos);
                idx.extend(std::iter::repeat_n(*row as u32, take));
                nodes.extend_from_slice(&cands[*pos..*pos + take]);
                *pos += take;
                if *pos == cands.len() {
                    *row += 1;
                    *pos = 0;
                }
            }
            let mut out = input.gather(&idx);
            if *row >= input.len || cands.is_empty() {
                self.at = None;
            }
            if out.len == 0 {
                continue;
            }
            out.cols[self.slot] = Col::Nodes(nodes);
            return Ok(Some(out));
        }
    }
}

pub(super) struct Filter<'p> {
    pub(super) input: BBox<'p>,
    pub(super) predicate: BExpr,
}

impl BOp for Filter<'_> {
    fn next(&mut self, bx: &Bx<'_, '_>) -> Result<Option<Chunk>, QueryError> {
        while let Some(ch) = self.input.next(bx)? {
            let c = self.predicate.eval(bx, &ch)?;
            let keep = truth(bx, &c, ch.len)?;
            let out = ch.select(&keep);
            if out.len > 0 {
                return Ok(Some(out));
            }
        }
        Ok(None)
    }
}

pub(super) struct Project<'p> {
    pub(super) input: BBox<'p>,
    pub(super) items: Vec<(usize, BExpr)>,
}

impl BOp for Project<'_> {
    fn next(&mut self, bx: &Bx<'_, '_>) -> Result<Option<Chunk>, QueryError> {
        let Some(mut ch) = self.input.next(bx)? else {
            return Ok(None);
        };
        let mut cols = Vec::with_capacity(self.items.len());
        for (_, e) in &mut self.items {
            cols.push(e.eval(bx, &ch)?);
        }
        for ((slot, _), c) in self.items.iter().zip(cols) {
            ch.cols[*slot] = c;
        }
        Ok(Some(ch))
    }
}

/// One hop. The relationship is bound only when something reads it (`bind`), and compared
/// with the relationships bound earlier in the MATCH (`distinct_from`) only when their types
/// could meet (MATCH's uniqueness).
pub(super) struct Expand<'p> {
    pub(super) input: BBox<'p>,
    pub(super) from: usize,
    pub(super) rel: usize,
    pub(super) to: usize,
    pub(super) types: &'p [String],
    pub(super) direction: Option<Direction>,
    pub(super) to_labels: &'p [String],
    pub(super) into: bool,
    pub(super) bind: bool,
    pub(super) distinct_from: &'p [usize],
    pub(super) at: Option<ExpandAt>,
}

/// An input chunk being expanded: its from-nodes, bound far ends, relationships it must
/// differ from (per row, per slot), and the next row.
pub(super) struct ExpandAt {
    input: Chunk,
    from: Vec<NodeRef>,
    bound: Vec<NodeRef>,
    used: Vec<Vec<Val>>,
    row: usize,
}

/// Whether relationship `edge` is one of `used` (relationships or lists of them).
pub(super) fn rel_in(used: &[Val], edge: u64) -> bool {
    used.iter().any(|v| match v {
        Val::Rel(r) => r.0 == edge,
        Val::List(l) => l.iter().any(|x| matches!(x, Val::Rel(r) if r.0 == edge)),
        _ => false,
    })
}

impl Expand<'_> {
    fn dirs(&self) -> &'static [Direction] {
        match self.direction {
            Some(Direction::Outgoing) => &[Direction::Outgoing],
            Some(Direction::Incoming) => &[Direction::Incoming],
            None => &[Direction::Outgoing, Direction::Incoming],
        }
    }

    /// The CSR lists to walk, per direction, in the order the row path meets them.
    pub(super) fn lists<'a>(&self, bx: &Bx<'a, '_>) -> Vec<(Direction, Vec<CsrView<'a>>)> {
        self.dirs()
            .iter()
            .map(|d| {
                let types: Vec<&str> = if self.types.is_empty() {
                    bx.m.rel_types(*d)
                } else {
                    let mut t: Vec<&str> = self.types.iter().map(String::as_str).collect();
                    t.sort_unstable();
                    t.dedup();
                    t
                };
                let lists = types
                    .into_iter()
                    .filter_map(|t| bx.m.adjacency(t, *d))
                    .collect();
                (*d, lists)
            })
            .collect()
    }

    /// The relationships and far ends of node `r` that `skip` lets through (and, with
    /// `check_end`, that pass the end checks), in the order the row path meets them.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn step(
        &self,
        bx: &Bx<'_, '_>,
        lists: &[(Direction, Vec<CsrView<'_>>)],
        r: NodeRef,
        bound: NodeRef,
        check_end: bool,
        skip: &dyn Fn(u64) -> bool,
        out: &mut Vec<NodeRef>,
        rels: &mut Vec<u64>,
    ) -> Result<(), QueryError> {
        let undirected = self.direction.is_none();
        let end_ok = |bx: &Bx<'_, '_>, n: NodeRef| -> Result<bool, QueryError> {
            if !check_end {
                Ok(true)
            } else if self.into {
                Ok(n == bound)
            } else {
                bx.has_labels(n, self.to_labels)
            }
        };
        let one_type = self.types.len() == 1;
        if bx.exact(r) && (one_type || bx.m.type_major()) {
            for (d, csrs) in lists {
                for csr in csrs {
                    for (&n, &e) in csr.neighbours(r).iter().zip(csr.edges(r)) {
                        if undirected && *d == Direction::Incoming && n == r {
                            continue; // an undirected self-loop was already seen as outgoing
                        }
                        if skip(e) {
                            continue;
                        }
                        if end_ok(bx, n)? {
                            out.push(n);
                            rels.push(e);
                        }
                    }
                }
            }
            return Ok(());
        }
        let id = bx.node_id(r);
        let filter = one_type.then(|| self.types[0].as_str());
        for d in self.dirs() {
            for a in bx.cx.g.adjacent(id, *d, filter)? {
                if undirected && *d == Direction::Incoming && a.neighbour == id {
                    continue;
                }
                if self.types.len() > 1 && !self.types.contains(&a.rel_type) {
                    continue;
                }
                if skip(a.edge.0) {
                    continue;
                }
                let n = bx.node_ref(a.neighbour);
                if end_ok(bx, n)? {
                    out.push(n);
                    rels.push(a.edge.0);
                }
            }
        }
        Ok(())
    }
}

impl BOp for Expand<'_> {
    fn next(&mut self, bx: &Bx<'_, '_>) -> Result<Option<Chunk>, QueryError> {
        loop {
            check_deadline(bx)?;
            if self.at.is_none() {
                let Some(ch) = self.input.next(bx)? else {
                    return Ok(None);
                };
                let from = node_refs(bx, &ch.cols[self.from], ch.len)?;
                let bound = if self.into {
                    node_refs(bx, &ch.cols[self.to], ch.len)?
                } else {
                    Vec::new()
                };
                let used = if self.distinct_from.is_empty() {
                    Vec::new()
                } else {
                    (0..ch.len)
                        .map(|i| {
                            self.distinct_from
                                .iter()
                                .map(|s| cell(bx, &ch.cols[*s], i))
                                .collect()
                        })
                        .collect()
                };
                self.at = Some(ExpandAt {
                    input: ch,
                    from,
                    bound,
                    used,
                    row: 0,
                });
            }
            let Some(mut at) = self.at.take() else {
                continue;
            };
            let mut idx = Vec::new();
            let mut nodes = Vec::new();
            let mut rels = Vec::new();
            let lists = self.lists(bx);
            while at.row < at.input.len && idx.len() < CHUNK {
                let i = at.row;
                let r = at.from[i];
                if r != NULL {
                    let before = nodes.len();
                    let b = at.bound.get(i).copied().unwrap_or(NULL);
                    let used = at.used.get(i).map_or(&[][..], Vec::as_slice);
                    let skip = |e: u64| !used.is_empty() && rel_in(used, e);
                    self.step(bx, &lists, r, b, true, &skip, &mut nodes, &mut rels)?;
                    idx.extend(std::iter::repeat_n(i as u32, nodes.len() - before));
                }
                at.row += 1;
            }
            let mut out = at.input.gather(&idx);
            if at.row < at.input.len {
                self.at = Some(at);
            }
            if out.len == 0 {
                continue;
            }
            out.cols[self.to] = Col::Nodes(nodes);
            if self.bind {
                out.cols[self.rel] = Col::Vals(
                    rels.into_iter()
                        .map(|e| Val::Rel(svc_engine::EdgeId(e)))
                        .collect(),
                );
            }
            return Ok(Some(out));
        }
    }
}

/// A hop's relationships counted per row (see `Op::ExpandCount`).
pub(super) struct ExpandCount<'p> {
    pub(super) input: BBox<'p>,
    pub(super) from: usize,
    pub(super) types: &'p [String],
    pub(super) direction: Direction,
    pub(super) to_label: Option<&'p String>,
    pub(super) slot: usize,
}

impl ExpandCount<'_> {
    fn lists<'a>(&self, bx: &Bx<'a, '_>) -> Vec<CsrView<'a>> {
        let types: Vec<&str> = if self.types.is_empty() {
            bx.m.rel_types(self.direction)
        } else {
            self.types.iter().map(String::as_str).collect()
        };
        types
            .into_iter()
            .filter_map(|t| bx.m.adjacency(t, self.direction))
            .collect()
    }

    fn count(&self, bx: &Bx<'_, '_>, lists: &[CsrView<'_>], r: NodeRef) -> Result<u64, QueryError> {
        if bx.exact(r) {
            let label = self.to_label.map(std::slice::from_ref);
            let view = self.to_label.and_then(|l| bx.label_view(l));
            let mut n = 0u64;
            for csr in lists {
                let nb = csr.neighbours(r);
                match label {
                    None => n += nb.len() as u64,
                    Some(l) => {
                        for &x in nb {
                            // Untouched base nodes: the label's bitmap; others: the snapshot.
                            let has = match view {
                                Some(v) if bx.exact(x) => v.contains(x),
                                _ => bx.has_labels(x, l)?,
                            };
                            if has {
                                n += 1;
                            }
                        }
                    }
                }
            }
            return Ok(n);
        }
        let id = bx.node_id(r);
        let g = bx.cx.g;
        let label = self.to_label.map(String::as_str);
        Ok(if self.types.is_empty() {
            g.count_adjacent(id, self.direction, None, label)?
        } else {
            let mut n = 0;
            for t in self.types {
                n += g.count_adjacent(id, self.direction, Some(t), label)?;
            }
            n
        })
    }
}

impl BOp for ExpandCount<'_> {
    fn next(&mut self, bx: &Bx<'_, '_>) -> Result<Option<Chunk>, QueryError> {
        while let Some(ch) = self.input.next(bx)? {
            check_deadline(bx)?;
            let from = node_refs(bx, &ch.cols[self.from], ch.len)?;
            let mut idx = Vec::new();
            let mut counts = Vec::new();
            let lists = self.lists(bx);
            for (i, r) in from.iter().enumerate() {
                if *r == NULL {
                    continue;
                }
                let n = self.count(bx, &lists, *r)?;
                if n > 0 {
                    idx.push(i as u32);
                    counts.push(Val::Int(i64::try_from(n).unwrap_or(i64::MAX)));
                }
            }
            if idx.is_empty() {
                continue;
            }
            let mut out = ch.gather(&idx);
            out.cols[self.slot] = Col::Vals(counts);
            return Ok(Some(out));
        }
        Ok(None)
    }
}

/// The argument chunk an OPTIONAL MATCH hands its inner pipeline.
pub(super) type ArgChunk = Rc<RefCell<Option<Chunk>>>;

/// OPTIONAL MATCH: the inner pipeline runs over a whole input chunk at once (each row tagged
/// with its position in the `origin` column); rows without a match pass through unchanged.
pub(super) struct Optional<'p> {
    pub(super) input: BBox<'p>,
    /// Builds the inner pipeline over the given argument chunk.
    pub(super) inner: Box<dyn Fn(ArgChunk) -> BBox<'p> + 'p>,
    pub(super) origin: usize,
}

impl BOp for Optional<'_> {
    fn next(&mut self, bx: &Bx<'_, '_>) -> Result<Option<Chunk>, QueryError> {
        let Some(mut ch) = self.input.next(bx)? else {
            return Ok(None);
        };
        ch.cols[self.origin] = Col::Nodes((0..ch.len as u32).collect());
        let arg = Rc::new(RefCell::new(Some(ch.clone())));
        let mut inner = (self.inner)(Rc::clone(&arg));
        let node = |r: NodeRef| bx.node_val(r);
        let mut found: Option<Chunk> = None;
        while let Some(c) = inner.next(bx)? {
            match &mut found {
                Some(f) => f.append(c, &node),
                None => found = Some(c),
            }
        }
        let Some(mut found) = found else {
            ch.cols[self.origin] = Col::Null;
            return Ok(Some(ch));
        };
        let origins: Vec<u32> = match &found.cols[self.origin] {
            Col::Nodes(o) => o.clone(),
            _ => Vec::new(),
        };
        // Outer rows without a match, then the order: per outer row its matches or itself.
        let mut matched = vec![false; ch.len];
        for o in &origins {
            matched[*o as usize] = true;
        }
        let unmatched: Vec<u32> = (0..ch.len as u32)
            .filter(|i| !matched[*i as usize])
            .collect();
        let n_found = found.len as u32;
        let mut order = Vec::with_capacity(found.len + unmatched.len());
        let (mut f, mut u) = (0usize, 0usize);
        for i in 0..ch.len as u32 {
            if matched[i as usize] {
                while f < origins.len() && origins[f] == i {
                    order.push(f as u32);
                    f += 1;
                }
            } else {
                order.push(n_found + u as u32);
                u += 1;
            }
        }
        found.append(ch.gather(&unmatched), &node);
        let mut out = found.gather(&order);
        out.cols[self.origin] = Col::Null;
        Ok(Some(out))
    }
}

pub(super) struct Unwind<'p> {
    pub(super) input: BBox<'p>,
    pub(super) expr: BExpr,
    pub(super) slot: usize,
    /// Slots nothing reads after this UNWIND (the list among them), left null in the rows it
    /// makes instead of copied into each.
    pub(super) dead: Vec<usize>,
}

impl BOp for Unwind<'_> {
    fn next(&mut self, bx: &Bx<'_, '_>) -> Result<Option<Chunk>, QueryError> {
        while let Some(mut ch) = self.input.next(bx)? {
            check_deadline(bx)?;
            let c = self.expr.eval(bx, &ch)?;
            for s in &self.dead {
                ch.cols[*s] = Col::Null;
            }
            let mut idx = Vec::new();
            let mut vals = Vec::new();
            for i in 0..ch.len {
                let items = match cell(bx, &c, i) {
                    Val::List(items) => items,
                    Val::Null => Vec::new(),
                    other => vec![other],
                };
                if items.len() > bx.cx.limits.max_buffered_rows {
                    return Err(QueryError::BufferLimit(bx.cx.limits.max_buffered_rows));
                }
                idx.extend(std::iter::repeat_n(i as u32, items.len()));
                vals.extend(items);
            }
            if idx.is_empty() {
                continue;
            }
            let mut out = ch.gather(&idx);
            out.cols[self.slot] = col_from_vals(bx, vals);
            return Ok(Some(out));
        }
        Ok(None)
    }
}
