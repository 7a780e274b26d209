//! Planner: AST -> a tree of physical operators (per stage), using the engine's indexes.
//!
//! Read-only statements become one pipeline that streams. A statement with writes is split into
//! stages at every write clause: each read stage runs to completion before the write that
//! follows it (the "eager" semantics that keeps a write from seeing its own effects mid-scan).
//!
//! Index use (all of it exact: the predicate that chose an index stays as a filter, so an index
//! can only ever narrow the candidates, never change the answer):
//! - `MATCH (n:L) RETURN count(n)` reads the label bitmap's cardinality.
//! - Equality on an indexed property seeks the index; numeric equality uses the ordered index.
//! - Comparisons with constants on an ordered property become a range scan.
//! - `ORDER BY n.p [DESC] LIMIT k` over such a range scan (and nothing else) reads only the
//!   first k entries of the index, in index order. So does `ORDER BY n.p [DESC] LIMIT k` over a
//!   plain label scan when the index's value-type counts show that every node of the label has
//!   a number (or every one a datetime) there: the index then holds the whole label in order.
//! - Aggregations whose every aggregate counts the rows of a final single hop
//!   (`MATCH (c)<-[:T]-(t) RETURN c.x, count(t)`) count each node's relationships instead of
//!   walking them (`ExpandCount`): a degree counter read, or with a label on the far end a
//!   scan of adjacency keys checked against the label bitmap.
//! - Counts of a label's nodes under `n.key <op> constant` filters, and `count(DISTINCT end)`
//!   over chains of distinct-type hops, ask the engine's in-memory read model first
//!   (`CountWhere`, `ReachCount`, see `readmodel`) and keep the ordinary plan as a fallback.
//! - Labels otherwise come from the label bitmaps (the smallest label is scanned).
//! - Filters run as soon as every variable they mention is bound.

use std::ops::Bound;
use std::time::Instant;

use svc_engine::{Direction, GraphRead, IndexKind, Order};

use crate::ast::*;
use crate::error::QueryError;
use crate::eval::CExpr;
use crate::functions::{aggregate_kind, AggKind, Func};
use crate::result::{Limits, Params, PlanTree};
use crate::value::Val;

mod explain;
mod expressions;
mod operators;
mod pattern;
mod projection;
mod readmodel;
mod scan;
mod writes;

pub(crate) use explain::render;
pub(crate) use operators::*;
pub(crate) use readmodel::reach_input;

/// Plans a statement against a graph (whose declared indexes and label counts guide the plan).
///
/// Planning counts against the query's time budget: it stops with `timeout` at `deadline`.
pub(crate) fn plan(
    g: &dyn GraphRead,
    stmt: &Statement,
    params: &Params,
    limits: &Limits,
    deadline: Instant,
) -> Result<Planned, QueryError> {
    let mut p = Planner {
        g,
        params,
        limits,
        deadline,
        next_slot: 0,
        next_op: 0,
        next_arg: 0,
        scope: Vec::new(),
        locals: std::cell::RefCell::new(Vec::new()),
        next_hidden: 0,
    };
    let mut stages = Vec::new();
    let mut current = p.op("", Op::Once);
    let mut columns = Vec::new();
    let mut out_slots = Vec::new();
    for clause in &stmt.clauses {
        p.check_deadline()?;
        match clause {
            Clause::Match(m) => current = p.plan_match(current, m)?,
            Clause::Unwind(u) => {
                let expr = p.compile(&u.expr, &[], &mut None)?;
                let slot = p.new_slot();
                current = p.op(
                    format!("{} AS {}", u.expr, u.alias),
                    Op::Unwind {
                        input: Box::new(current),
                        expr,
                        slot,
                    },
                );
                p.scope.push((u.alias.clone(), slot));
            }
            Clause::With(w) => {
                let before = p.scope.clone();
                let (plan, items) = p.plan_projection(current, &w.projection, true)?;
                current = plan;
                p.scope = items;
                if let Some(pred) = &w.where_ {
                    // Without aggregation or DISTINCT the rows still hold the variables from
                    // before WITH, and WHERE may read them (as ORDER BY may).
                    let keeps_rows = !w.projection.distinct
                        && !w
                            .projection
                            .items
                            .iter()
                            .any(|i| i.expr.contains_aggregate());
                    let projected = p.scope.clone();
                    if keeps_rows {
                        p.scope = before
                            .into_iter()
                            .chain(projected.iter().cloned())
                            .collect();
                    }
                    let predicate = p.compile(pred, &[], &mut None);
                    p.scope = projected;
                    let predicate = predicate?;
                    current = p.op(
                        pred.to_string(),
                        Op::Filter {
                            input: Box::new(current),
                            predicate,
                        },
                    );
                }
            }
            Clause::Return(r) => {
                let (plan, items) = p.plan_projection(current, r, false)?;
                current = plan;
                columns = items.iter().map(|(n, _)| n.clone()).collect();
                out_slots = items.iter().map(|(_, s)| *s).collect();
            }
            write => {
                let (details, op) = p.plan_write(write)?;
                stages.push(Stage::Read(current));
                let id = p.next_id();
                stages.push(Stage::Write { id, details, op });
                current = p.op("", Op::StageInput);
            }
        }
    }
    stages.push(Stage::Read(current));
    Ok(Planned {
        stages,
        columns,
        out_slots,
        width: p.next_slot,
        operators: p.next_op,
    })
}

struct Planner<'a> {
    g: &'a dyn GraphRead,
    params: &'a Params,
    limits: &'a Limits,
    /// The query's deadline: planning a huge pattern must not outlast the time budget.
    deadline: Instant,
    next_slot: usize,
    next_op: usize,
    next_arg: usize,
    /// Visible variables, name -> slot (later entries shadow earlier ones).
    scope: Vec<(String, usize)>,
    /// Variables bound inside the expression being compiled (comprehensions, list
    /// predicates), innermost last; they shadow `scope`.
    locals: std::cell::RefCell<Vec<String>>,
    /// Counter of the hidden variables of named paths' anonymous elements.
    next_hidden: usize,
}

/// Collects aggregate calls while compiling a projection item.
struct AggCollector {
    specs: Vec<AggSpec>,
}

/// A WHERE conjunct or an inline-property predicate waiting for its variables to be bound.
struct Conjunct {
    expr: CExpr,
    text: String,
    slots: Vec<usize>,
    applied: bool,
}

/// How to find the candidates of one pattern node.
struct ScanChoice {
    /// (kind, estimated candidates), compared in that order: a seek beats a range scan beats
    /// a label scan beats scanning every node, whatever the counts (the planner has no
    /// selectivity statistics, and expanding from a small label can still fan out widely).
    cost: (u8, u64),
    source: ScanSource,
    /// Labels the source does not guarantee.
    check_labels: Vec<String>,
    /// Conjuncts the source answers exactly (for top-k pushdown).
    covered: Vec<usize>,
}

struct PNode {
    slot: usize,
    labels: Vec<String>,
}

struct PRel {
    slot: usize,
    types: Vec<String>,
    direction: RelDirection,
    hops: Option<(u32, u32)>,
    props: Vec<(String, CExpr)>,
    left: usize,
    right: usize,
    text: String,
}

impl<'a> Planner<'a> {
    fn check_deadline(&self) -> Result<(), QueryError> {
        if Instant::now() > self.deadline {
            return Err(QueryError::Timeout(self.limits.time));
        }
        Ok(())
    }

    fn new_slot(&mut self) -> usize {
        self.next_slot += 1;
        self.next_slot - 1
    }

    fn next_id(&mut self) -> usize {
        self.next_op += 1;
        self.next_op - 1
    }

    fn op(&mut self, details: impl Into<String>, op: Op) -> Plan {
        Plan {
            id: self.next_id(),
            details: details.into(),
            op,
        }
    }

    fn lookup(&self, name: &str) -> Option<usize> {
        self.scope
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, s)| *s)
    }
}
