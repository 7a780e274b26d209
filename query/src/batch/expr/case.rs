//! `CASE` a column at a time: every condition and every result is an expression of its own
//! (with its kernels: typed comparisons, per-string memos), evaluated over the whole chunk;
//! each row then takes the first branch whose condition holds. Constant results (the usual
//! `THEN 'hot'`, `THEN 1 ELSE 0`) come out as dictionary codes, so a grouping on the CASE
//! groups by code. The row evaluator's rules: a searched `WHEN` holds only when exactly
//! `true`; a simple `CASE x WHEN v` when `x = v` is true (so a null never matches).
//!
//! Every branch is evaluated for every row, where the row evaluator evaluates only the
//! branch taken: an error in a branch a row would not take (`1 / 0`) fails the batch and the
//! row path answers (same answer, its speed).

use std::rc::Rc;

use crate::ast::BinaryOp;
use crate::error::QueryError;
use crate::eval::CExpr;
use crate::value::Val;

use super::super::chunk::{Chunk, Col, Dict};
use super::{cell, BExpr, Bx};

pub(super) struct CaseK {
    /// One condition per branch (a simple CASE's `x = v`).
    conds: Vec<BExpr>,
    /// One result per branch, then the ELSE (null without one).
    results: Vec<BExpr>,
    /// Per result, its value when constant (then the output is codes of `dict`).
    consts: Option<Vec<Val>>,
}

impl CaseK {
    /// Forgets the last run's state (see `BExpr::reset`).
    pub(super) fn reset(&mut self) {
        let CaseK {
            conds,
            results,
            consts: _,
        } = self;
        conds.iter_mut().chain(results).for_each(BExpr::reset);
    }

    /// The kernel of `CASE` parts, for chunks `width` slots wide.
    pub(super) fn new(
        operand: Option<&CExpr>,
        whens: &[(CExpr, CExpr)],
        else_: Option<&CExpr>,
        width: usize,
    ) -> CaseK {
        let conds = whens
            .iter()
            .map(|(w, _)| match operand {
                Some(x) => BExpr::new(
                    &CExpr::Bin(BinaryOp::Eq, Box::new(x.clone()), Box::new(w.clone())),
                    width,
                ),
                None => BExpr::new(w, width),
            })
            .collect();
        let null = CExpr::Const(Val::Null);
        let result_exprs: Vec<&CExpr> = whens
            .iter()
            .map(|(_, t)| t)
            .chain(Some(else_.unwrap_or(&null)))
            .collect();
        let consts = result_exprs
            .iter()
            .map(|e| match e {
                CExpr::Const(v) => Some(v.clone()),
                _ => None,
            })
            .collect();
        CaseK {
            conds,
            results: result_exprs.iter().map(|e| BExpr::new(e, width)).collect(),
            consts,
        }
    }

    /// The CASE's value for every row of `ch`.
    pub(super) fn eval(
        &mut self,
        bx: &Bx<'_, '_>,
        ch: &Chunk,
        dict: &Rc<Dict>,
    ) -> Result<Col, QueryError> {
        let n = ch.len;
        // The branch each row takes (`conds.len()`: the ELSE).
        let whens = self.conds.len();
        let mut branch = vec![whens as u32; n];
        let mut open = n;
        for (j, cond) in self.conds.iter_mut().enumerate() {
            if open == 0 {
                break;
            }
            let holds = cond.holds(bx, ch)?;
            // Branch-free: a row still on the ELSE whose condition holds takes branch `j`.
            let (j, whens) = (j as u32, whens as u32);
            for (b, h) in branch.iter_mut().zip(&holds) {
                *b = if *h & (*b == whens) { j } else { *b };
            }
            if j + 1 < whens {
                open = branch.iter().filter(|b| **b == whens).count();
            }
        }
        if let Some(consts) = &self.consts {
            let codes: Vec<u32> = consts.iter().map(|v| dict.code(v.clone())).collect();
            return Ok(Col::Dict {
                codes: branch.iter().map(|b| codes[*b as usize]).collect(),
                dict: Rc::clone(dict),
            });
        }
        let mut cols = Vec::with_capacity(self.results.len());
        for (j, r) in self.results.iter_mut().enumerate() {
            // A branch no row takes is not evaluated (nor can it fail the batch).
            cols.push(if branch.iter().any(|b| *b as usize == j) {
                r.eval(bx, ch)?
            } else {
                Col::Null
            });
        }
        Ok(Col::Vals(
            branch
                .iter()
                .enumerate()
                .map(|(i, b)| cell(bx, &cols[*b as usize], i))
                .collect(),
        ))
    }
}

/// Per row: whether the value is exactly `true` (null, false and non-booleans are not).
pub(super) fn exactly_true(c: &Col, n: usize) -> Vec<bool> {
    match c {
        Col::Null | Col::Nodes(_) | Col::Rels(_) => vec![false; n],
        Col::Dict { codes, dict } => {
            let hits: Vec<bool> = dict.vals().iter().map(|v| *v == Val::Bool(true)).collect();
            codes.iter().map(|c| hits[*c as usize]).collect()
        }
        Col::Vals(v) => v.iter().map(|x| *x == Val::Bool(true)).collect(),
    }
}
