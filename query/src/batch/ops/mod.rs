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

mod aggkern;
mod columns;
mod expand;
mod fold;
mod group;
mod keys;
mod memo;
mod order;
mod scan;
#[cfg(test)]
mod tests;
mod topk;
mod varlen;

use aggkern::*;
pub(in crate::batch) use columns::*;
pub(in crate::batch) use expand::*;
pub(in crate::batch) use group::*;
pub(in crate::batch) use keys::*;
use memo::*;
pub(in crate::batch) use order::*;
pub(in crate::batch) use scan::*;
pub(in crate::batch) use varlen::*;

/// Every operator can be reset for another run (`super::reset`).
pub(super) trait BOp: super::reset::Reset {
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

pub(super) struct Filter<'p> {
    pub(super) input: BBox<'p>,
    pub(super) predicate: BExpr,
}

impl BOp for Filter<'_> {
    fn next(&mut self, bx: &Bx<'_, '_>) -> Result<Option<Chunk>, QueryError> {
        while let Some(ch) = self.input.next(bx)? {
            let keep = self.predicate.keep(bx, &ch)?;
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
    /// The list's slot when the expression is a slot nothing reads afterwards: its lists
    /// are moved out of the chunk, not copied.
    pub(super) list_slot: Option<usize>,
    /// Codes of the strings it hands on (one dictionary for every chunk, so grouping and
    /// DISTINCT above key on codes).
    pub(super) dict: Rc<super::chunk::Dict>,
}

impl BOp for Unwind<'_> {
    fn next(&mut self, bx: &Bx<'_, '_>) -> Result<Option<Chunk>, QueryError> {
        while let Some(mut ch) = self.input.next(bx)? {
            check_deadline(bx)?;
            let c = match self.list_slot {
                Some(s) => std::mem::replace(&mut ch.cols[s], Col::Null),
                None => self.expr.eval(bx, &ch)?,
            };
            for s in &self.dead {
                ch.cols[*s] = Col::Null;
            }
            let limit = bx.cx.limits.max_buffered_rows;
            let mut idx = Vec::new();
            let mut vals = Vec::new();
            let mut add = |i: usize, v: Val| -> Result<(), QueryError> {
                let items = match v {
                    Val::List(items) => items,
                    Val::Null => Vec::new(),
                    other => vec![other],
                };
                if items.len() > limit {
                    return Err(QueryError::BufferLimit(limit));
                }
                idx.extend(std::iter::repeat_n(i as u32, items.len()));
                vals.extend(items);
                Ok(())
            };
            match c {
                Col::Vals(v) => {
                    for (i, x) in v.into_iter().enumerate() {
                        add(i, x)?;
                    }
                }
                other => {
                    for i in 0..ch.len {
                        add(i, cell(bx, &other, i))?;
                    }
                }
            }
            if idx.is_empty() {
                continue;
            }
            let mut out = ch.gather(&idx);
            out.cols[self.slot] = if vals.iter().all(|v| matches!(v, Val::Str(_) | Val::Null)) {
                Col::Dict {
                    codes: vals.into_iter().map(|v| self.dict.code(v)).collect(),
                    dict: Rc::clone(&self.dict),
                }
            } else {
                col_from_vals(bx, vals)
            };
            return Ok(Some(out));
        }
        Ok(None)
    }
}
