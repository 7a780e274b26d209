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
fn rel_in(used: &[Val], edge: u64) -> bool {
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
    fn lists<'a>(&self, bx: &Bx<'a, '_>) -> Vec<(Direction, Vec<CsrView<'a>>)> {
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

    /// The relationships and far ends of node `r` that pass the type, uniqueness and end
    /// checks, in the order the row path meets them.
    #[allow(clippy::too_many_arguments)]
    fn step(
        &self,
        bx: &Bx<'_, '_>,
        lists: &[(Direction, Vec<CsrView<'_>>)],
        r: NodeRef,
        bound: NodeRef,
        used: &[Val],
        out: &mut Vec<NodeRef>,
        rels: &mut Vec<u64>,
    ) -> Result<(), QueryError> {
        let undirected = self.direction.is_none();
        let end_ok = |bx: &Bx<'_, '_>, n: NodeRef| -> Result<bool, QueryError> {
            if self.into {
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
                        if !used.is_empty() && rel_in(used, e) {
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
                if !used.is_empty() && rel_in(used, a.edge.0) {
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
                    self.step(bx, &lists, r, b, used, &mut nodes, &mut rels)?;
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
            let mut n = 0u64;
            for csr in lists {
                let nb = csr.neighbours(r);
                match label {
                    None => n += nb.len() as u64,
                    Some(l) => {
                        for &x in nb {
                            if bx.has_labels(x, l)? {
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

/// Up to four key columns' codes (dictionary codes or node references): a row's group or
/// DISTINCT key without building its values, valid while the dictionaries stay the same.
type FastKey = [u32; 4];

/// Per row, the fast key of `cols`, when every column has codes (None otherwise).
fn fast_keys(cols: &[&Col], len: usize) -> Option<(Vec<FastKey>, Vec<usize>)> {
    if cols.len() > 4 {
        return None;
    }
    let mut dicts = Vec::new();
    for c in cols {
        match c {
            Col::Dict { dict, .. } => dicts.push(Rc::as_ptr(dict) as usize),
            Col::Nodes(_) | Col::Null => dicts.push(0),
            Col::Vals(_) => return None,
        }
    }
    let mut keys = vec![[0u32; 4]; len];
    for (k, c) in cols.iter().enumerate() {
        match c {
            Col::Dict { codes, .. } => keys.iter_mut().zip(codes).for_each(|(x, c)| x[k] = *c),
            Col::Nodes(v) => keys.iter_mut().zip(v).for_each(|(x, r)| x[k] = *r),
            _ => {}
        }
    }
    Some((keys, dicts))
}

/// A cache from fast keys to an index (a group, a seen flag), dropped when the key columns'
/// dictionaries change. One key: a table indexed by its code (codes and node references are
/// small dense integers); several: a hash map with a cheap hash.
#[derive(Default)]
pub(super) struct FastIndex {
    dicts: Vec<usize>,
    one: Vec<u32>,
    map: HashMap<FastKey, usize, Fx>,
}

/// Hash maps keyed by the executor's own keys use `FxHasher`.
pub(super) type Fx = std::hash::BuildHasherDefault<FxHasher>;

/// Most entries of the one-key table (beyond, the hash map serves).
const TABLE_MAX: u32 = 1 << 24;

impl FastIndex {
    fn reset_if_changed(&mut self, dicts: &[usize]) {
        if self.dicts != dicts {
            self.dicts = dicts.to_vec();
            self.one.clear();
            self.map.clear();
        }
    }

    #[inline]
    fn get(&self, k: &FastKey) -> Option<usize> {
        if self.dicts.len() == 1 && k[0] < TABLE_MAX {
            return match self.one.get(k[0] as usize) {
                Some(0) | None => None,
                Some(g) => Some(*g as usize - 1),
            };
        }
        self.map.get(k).copied()
    }

    #[inline]
    fn insert(&mut self, k: FastKey, v: usize) {
        if self.dicts.len() == 1 && k[0] < TABLE_MAX {
            let i = k[0] as usize;
            if self.one.len() <= i {
                self.one.resize((i + 1).max(self.one.len() * 2), 0);
            }
            self.one[i] = v as u32 + 1;
            return;
        }
        self.map.insert(k, v);
    }
}

/// A multiply-rotate hasher (as rustc's FxHash) for the fast keys: a few `u32`s, no
/// untrusted input, so no need for SipHash's flooding resistance.
#[derive(Default)]
pub(super) struct FxHasher(u64);

impl std::hash::Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.write_u64(u64::from_le_bytes(w));
        }
        for b in chunks.remainder() {
            self.write_u64(u64::from(*b));
        }
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.write_u64(u64::from(i));
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// `n.key` of a slot, when the expression is exactly that.
fn plain_prop(e: &Option<crate::eval::CExpr>) -> Option<(usize, &str)> {
    match e {
        Some(crate::eval::CExpr::Prop(base, key)) => match base.as_ref() {
            crate::eval::CExpr::Slot(s) => Some((*s, key.as_str())),
            _ => None,
        },
        _ => None,
    }
}

/// A number (or datetime) column's values for a chunk's nodes, read in place.
enum InPlace<'a> {
    Ints {
        values: &'a [i64],
        col: ColumnView<'a>,
        /// No row of the column lacks a value.
        full: bool,
        row0: usize,
        datetime: bool,
    },
    Floats(&'a [f64]),
}

/// The values of a number (or datetime) column for `refs`, when they are consecutive rows of
/// one label's base (a label scan's chunk, nothing touched). None otherwise (the caller
/// evaluates row by row).
fn numbers_in_place<'a>(bx: &Bx<'a, '_>, refs: &[NodeRef], key: &str) -> Option<InPlace<'a>> {
    if !bx.m.untouched() {
        return None;
    }
    let first = *refs.first()?;
    let (li, col, row0) = match super::expr::PropReader::new(key).locate(bx, first) {
        super::expr::Found::Column(li, col, row) => (li, col, row),
        _ => return None,
    };
    let end = row0 + refs.len();
    if bx.label_rows(li).get(row0..end)? != refs {
        return None;
    }
    match col {
        ColumnView::Integers {
            values,
            absent,
            datetime,
        } => Some(InPlace::Ints {
            values: values.get(row0..end)?,
            col,
            full: absent.is_empty(),
            row0,
            datetime,
        }),
        ColumnView::Floats(values) => Some(InPlace::Floats(values.get(row0..end)?)),
        _ => None,
    }
}

/// `state.add(kind, v)` for a number, with the common cases (count, and min / max against a
/// number of the same kind) done without the general comparison; the same result.
#[inline]
fn add_number(state: &mut AggState, kind: AggKind, v: Val) -> Result<(), QueryError> {
    match (&mut *state, &v) {
        (AggState::Count(n), _) => *n += 1,
        (AggState::Extreme(Some(Val::Int(b))), Val::Int(x))
        | (AggState::Extreme(Some(Val::DateTime(b))), Val::DateTime(x)) => {
            if (kind == AggKind::Max && x > b) || (kind == AggKind::Min && x < b) {
                *b = *x;
            }
        }
        (AggState::Extreme(Some(Val::Float(b))), Val::Float(x)) if !b.is_nan() && !x.is_nan() => {
            if (kind == AggKind::Max && x > b) || (kind == AggKind::Min && x < b) {
                *b = *x;
            }
        }
        _ => state.add(kind, v)?,
    }
    Ok(())
}

struct Group {
    keys: Vec<Val>,
    states: Vec<AggState>,
    seen: Vec<HashSet<Vec<u8>, Fx>>,
}

pub(super) struct Aggregate<'p> {
    pub(super) input: BBox<'p>,
    pub(super) keys: Vec<(usize, BExpr)>,
    pub(super) aggs: Vec<(&'p AggSpec, Option<BExpr>)>,
    pub(super) output: Option<std::vec::IntoIter<Chunk>>,
}

impl Aggregate<'_> {
    fn run(&mut self, bx: &Bx<'_, '_>) -> Result<Vec<Chunk>, QueryError> {
        let max = bx.cx.limits.max_buffered_rows;
        let mut index: HashMap<Vec<u8>, usize, Fx> = HashMap::default();
        let mut fast = FastIndex::default();
        let mut groups: Vec<Group> = Vec::new();
        let new_group = |keys: Vec<Val>, aggs: &[(&AggSpec, Option<BExpr>)]| Group {
            keys,
            states: aggs.iter().map(|(a, _)| AggState::new(a.kind)).collect(),
            seen: aggs.iter().map(|_| HashSet::default()).collect(),
        };
        let mut group_of = Vec::new();
        while let Some(ch) = self.input.next(bx)? {
            check_deadline(bx)?;
            let mut key_cols = Vec::with_capacity(self.keys.len());
            for (_, e) in &mut self.keys {
                key_cols.push(e.eval(bx, &ch)?);
            }
            let refs: Vec<&Col> = key_cols.iter().collect();
            let fk = fast_keys(&refs, ch.len);
            if let Some((_, dicts)) = &fk {
                fast.reset_if_changed(dicts);
            }
            group_of.clear();
            for i in 0..ch.len {
                if let Some((keys, _)) = &fk {
                    if let Some(g) = fast.get(&keys[i]) {
                        group_of.push(g);
                        continue;
                    }
                }
                let vals: Vec<Val> = key_cols.iter().map(|c| cell(bx, c, i)).collect();
                let mut k = Vec::new();
                vals.iter().for_each(|v| write_key(v, &mut k));
                let g = match index.get(&k) {
                    Some(g) => *g,
                    None => {
                        if groups.len() >= max {
                            return Err(QueryError::BufferLimit(max));
                        }
                        groups.push(new_group(vals, &self.aggs));
                        index.insert(k, groups.len() - 1);
                        groups.len() - 1
                    }
                };
                if let Some((keys, _)) = &fk {
                    fast.insert(keys[i], g);
                }
                group_of.push(g);
            }
            for (a, (spec, arg)) in self.aggs.iter_mut().enumerate() {
                let Some(arg) = arg else {
                    // count(*): every row counts.
                    for g in &group_of {
                        if let AggState::Count(n) = &mut groups[*g].states[a] {
                            *n += 1;
                        }
                    }
                    continue;
                };
                // A number column read in place: no values built, no evaluator.
                if !spec.distinct {
                    if let Some((s, key)) = plain_prop(&spec.arg) {
                        if let Some(Col::Nodes(refs)) = ch.cols.get(s) {
                            match numbers_in_place(bx, refs, key) {
                                Some(InPlace::Ints {
                                    values,
                                    col,
                                    full,
                                    row0,
                                    datetime,
                                }) => {
                                    for (i, (g, v)) in group_of.iter().zip(values).enumerate() {
                                        if !full && col.is_absent(row0 + i) {
                                            continue;
                                        }
                                        let v = if datetime {
                                            Val::DateTime(*v)
                                        } else {
                                            Val::Int(*v)
                                        };
                                        add_number(&mut groups[*g].states[a], spec.kind, v)?;
                                    }
                                    continue;
                                }
                                Some(InPlace::Floats(values)) => {
                                    for (g, v) in group_of.iter().zip(values) {
                                        if !v.is_nan() {
                                            let state = &mut groups[*g].states[a];
                                            add_number(state, spec.kind, Val::Float(*v))?;
                                        }
                                    }
                                    continue;
                                }
                                None => {}
                            }
                        }
                    }
                }
                let c = arg.eval(bx, &ch)?;
                for (i, g) in group_of.iter().enumerate() {
                    let v = cell(bx, &c, i);
                    if v.is_null() {
                        continue;
                    }
                    let group = &mut groups[*g];
                    if spec.distinct {
                        let mut key = Vec::new();
                        write_key(&v, &mut key);
                        if !group.seen[a].insert(key) {
                            continue;
                        }
                    }
                    group.states[a].add(spec.kind, v)?;
                }
            }
        }
        if groups.is_empty() && self.keys.is_empty() {
            groups.push(new_group(Vec::new(), &self.aggs));
        }
        let mut out = Vec::new();
        let mut rest = groups.into_iter().peekable();
        while rest.peek().is_some() {
            let part: Vec<Group> = rest.by_ref().take(CHUNK).collect();
            let mut ch = Chunk::new(part.len(), bx.width);
            let mut key_vals: Vec<Vec<Val>> = vec![Vec::with_capacity(part.len()); self.keys.len()];
            let mut agg_vals: Vec<Vec<Val>> = vec![Vec::with_capacity(part.len()); self.aggs.len()];
            for g in part {
                for (k, v) in g.keys.into_iter().enumerate() {
                    key_vals[k].push(v);
                }
                for (a, s) in g.states.into_iter().enumerate() {
                    agg_vals[a].push(s.finish());
                }
            }
            for ((slot, _), vals) in self.keys.iter().zip(key_vals) {
                ch.cols[*slot] = col_from_vals(bx, vals);
            }
            for ((spec, _), vals) in self.aggs.iter().zip(agg_vals) {
                ch.cols[spec.slot] = col_from_vals(bx, vals);
            }
            out.push(ch);
        }
        Ok(out)
    }
}

impl BOp for Aggregate<'_> {
    fn next(&mut self, bx: &Bx<'_, '_>) -> Result<Option<Chunk>, QueryError> {
        if self.output.is_none() {
            self.output = Some(self.run(bx)?.into_iter());
        }
        Ok(self.output.as_mut().and_then(Iterator::next))
    }
}

pub(super) struct Distinct<'p> {
    pub(super) input: BBox<'p>,
    pub(super) slots: &'p [usize],
    pub(super) seen: HashSet<Vec<u8>, Fx>,
    pub(super) fast: FastIndex,
}

impl BOp for Distinct<'_> {
    fn next(&mut self, bx: &Bx<'_, '_>) -> Result<Option<Chunk>, QueryError> {
        let max = bx.cx.limits.max_buffered_rows;
        while let Some(ch) = self.input.next(bx)? {
            let cols: Vec<&Col> = self.slots.iter().map(|s| &ch.cols[*s]).collect();
            let fk = fast_keys(&cols, ch.len);
            if let Some((_, dicts)) = &fk {
                self.fast.reset_if_changed(dicts);
            }
            let mut keep = vec![false; ch.len];
            for (i, k) in keep.iter_mut().enumerate() {
                if let Some((keys, _)) = &fk {
                    if self.fast.get(&keys[i]).is_some() {
                        continue;
                    }
                    self.fast.insert(keys[i], 0);
                }
                let mut key = Vec::new();
                for c in &cols {
                    write_key(&cell(bx, c, i), &mut key);
                }
                if self.seen.insert(key) {
                    if self.seen.len() > max {
                        return Err(QueryError::BufferLimit(max));
                    }
                    *k = true;
                }
            }
            let out = ch.select(&keep);
            if out.len > 0 {
                return Ok(Some(out));
            }
        }
        Ok(None)
    }
}

/// ORDER BY, and with a limit top-k: keeps the best `skip + limit` rows while reading.
pub(super) struct Sort<'p> {
    pub(super) input: BBox<'p>,
    pub(super) keys: Vec<(BExpr, bool)>,
    pub(super) skip: Option<&'p crate::eval::CExpr>,
    pub(super) limit: Option<&'p crate::eval::CExpr>,
    pub(super) output: Option<std::vec::IntoIter<Chunk>>,
}

/// Sort keys of the held rows, one column per key.
struct Held {
    rows: Chunk,
    keys: Vec<Col>,
}

impl Sort<'_> {
    /// The order of `held`'s rows (input order breaks ties: the sort is stable).
    fn order(&self, bx: &Bx<'_, '_>, held: &Held) -> Vec<u32> {
        // Per key: a rank per row (dictionary codes ranked once), or values.
        enum K {
            Rank(Vec<u32>),
            Vals(Vec<Val>),
        }
        let node = |r: NodeRef| bx.node_val(r);
        let keys: Vec<K> = held
            .keys
            .iter()
            .map(|c| match c {
                Col::Dict { codes, dict } => {
                    let vals = dict.vals();
                    // Rank the codes the held rows use (the dictionary may be far larger).
                    let mut present = vec![false; vals.len()];
                    codes.iter().for_each(|c| present[*c as usize] = true);
                    let mut by: Vec<u32> = (0..vals.len() as u32)
                        .filter(|c| present[*c as usize])
                        .collect();
                    by.sort_by(|a, b| order(&vals[*a as usize], &vals[*b as usize]));
                    let mut rank = vec![0u32; vals.len()];
                    let mut r = 0u32;
                    for (i, c) in by.iter().enumerate() {
                        if i > 0 && order(&vals[by[i - 1] as usize], &vals[*c as usize]).is_ne() {
                            r += 1;
                        }
                        rank[*c as usize] = r;
                    }
                    K::Rank(codes.iter().map(|c| rank[*c as usize]).collect())
                }
                other => K::Vals(other.to_vals_with(held.rows.len, &node)),
            })
            .collect();
        let mut idx: Vec<u32> = (0..held.rows.len as u32).collect();
        idx.sort_by(|a, b| {
            for (k, (_, desc)) in keys.iter().zip(&self.keys) {
                let o = match k {
                    K::Rank(r) => r[*a as usize].cmp(&r[*b as usize]),
                    K::Vals(v) => order(&v[*a as usize], &v[*b as usize]),
                };
                let o = if *desc { o.reverse() } else { o };
                if o.is_ne() {
                    return o;
                }
            }
            std::cmp::Ordering::Equal
        });
        idx
    }

    fn run(&mut self, bx: &Bx<'_, '_>) -> Result<Vec<Chunk>, QueryError> {
        let keep = match self.limit {
            Some(l) => {
                let skip = self
                    .skip
                    .map(|s| count_arg(s, bx.cx, "SKIP"))
                    .transpose()?
                    .unwrap_or(0);
                Some(skip.saturating_add(count_arg(l, bx.cx, "LIMIT")?))
            }
            None => None,
        };
        let node = |r: NodeRef| bx.node_val(r);
        let mut held: Option<Held> = None;
        while let Some(ch) = self.input.next(bx)? {
            check_deadline(bx)?;
            let mut keys = Vec::with_capacity(self.keys.len());
            for (e, _) in &mut self.keys {
                keys.push(e.eval(bx, &ch)?);
            }
            let len = ch.len;
            match &mut held {
                None => held = Some(Held { rows: ch, keys }),
                Some(h) => {
                    let before = h.rows.len;
                    h.rows.append(ch, &node);
                    for (hk, k) in h.keys.iter_mut().zip(keys) {
                        hk.append(k, before, len, &node);
                    }
                }
            }
            let Some(h) = &mut held else { continue };
            match keep {
                Some(k) if h.rows.len > k.saturating_mul(2).max(4096) => {
                    let mut idx = self.order(bx, h);
                    idx.truncate(k);
                    *h = Held {
                        rows: h.rows.gather(&idx),
                        keys: h.keys.iter().map(|c| c.gather(&idx)).collect(),
                    };
                }
                None if h.rows.len > bx.cx.limits.max_buffered_rows => {
                    return Err(QueryError::BufferLimit(bx.cx.limits.max_buffered_rows));
                }
                _ => {}
            }
        }
        let Some(h) = held else {
            return Ok(Vec::new());
        };
        let mut idx = self.order(bx, &h);
        if let Some(k) = keep {
            idx.truncate(k);
        }
        Ok(idx.chunks(CHUNK).map(|part| h.rows.gather(part)).collect())
    }
}

impl BOp for Sort<'_> {
    fn next(&mut self, bx: &Bx<'_, '_>) -> Result<Option<Chunk>, QueryError> {
        if self.output.is_none() {
            self.output = Some(self.run(bx)?.into_iter());
        }
        Ok(self.output.as_mut().and_then(Iterator::next))
    }
}

pub(super) struct Skip<'p> {
    pub(super) input: BBox<'p>,
    pub(super) count: &'p crate::eval::CExpr,
    pub(super) remaining: Option<usize>,
}

impl BOp for Skip<'_> {
    fn next(&mut self, bx: &Bx<'_, '_>) -> Result<Option<Chunk>, QueryError> {
        if self.remaining.is_none() {
            self.remaining = Some(count_arg(self.count, bx.cx, "SKIP")?);
        }
        while let Some(ch) = self.input.next(bx)? {
            let n = self.remaining.unwrap_or(0);
            if n == 0 {
                return Ok(Some(ch));
            }
            if n >= ch.len {
                self.remaining = Some(n - ch.len);
                continue;
            }
            self.remaining = Some(0);
            let idx: Vec<u32> = (n as u32..ch.len as u32).collect();
            return Ok(Some(ch.gather(&idx)));
        }
        Ok(None)
    }
}

pub(super) struct Limit<'p> {
    pub(super) input: BBox<'p>,
    pub(super) count: &'p crate::eval::CExpr,
    pub(super) remaining: Option<usize>,
}

impl BOp for Limit<'_> {
    fn next(&mut self, bx: &Bx<'_, '_>) -> Result<Option<Chunk>, QueryError> {
        if self.remaining.is_none() {
            self.remaining = Some(count_arg(self.count, bx.cx, "LIMIT")?);
        }
        let n = self.remaining.unwrap_or(0);
        if n == 0 {
            return Ok(None);
        }
        let Some(ch) = self.input.next(bx)? else {
            return Ok(None);
        };
        if ch.len <= n {
            self.remaining = Some(n - ch.len);
            return Ok(Some(ch));
        }
        self.remaining = Some(0);
        let idx: Vec<u32> = (0..n as u32).collect();
        Ok(Some(ch.gather(&idx)))
    }
}

/// Whether `kind` is one this module aggregates (all of today's).
pub(super) fn known_aggregate(kind: AggKind) -> bool {
    matches!(
        kind,
        AggKind::Count
            | AggKind::Sum
            | AggKind::Avg
            | AggKind::Min
            | AggKind::Max
            | AggKind::Collect
    )
}
