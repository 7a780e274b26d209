//! The streaming executor: pull-based operators built from a plan, one row at a time.
//!
//! Operators that must see all their input (sort, aggregation, DISTINCT, top-k) hold at most
//! `Limits::max_buffered_rows`; everything else streams. Scans and expansions tick the time
//! budget as they go, so no query can outlive its deadline by more than a few hundred steps.

use std::collections::{HashMap, HashSet};
use std::ops::Bound;
use std::time::Instant;

use svc_engine::{Direction, EdgeId, IndexKind, NodeId, Value};

use crate::error::QueryError;
use crate::eval::{eval, CExpr, Cx, Row};
use crate::functions::AggKind;
use crate::plan::{AggSpec, Op, Plan, ScanSource};
use crate::result::{ResultNode, ResultPath, ResultRelationship, ResultValue};
use crate::value::{equals, key_of, order, to_property, write_key, Val};

mod aggregate;
mod budgets;
mod expand;
mod order;
mod readmodel;
mod rows;
mod scan;

pub(crate) use aggregate::AggState;
pub(crate) use budgets::{analyse, collect, produce};
pub(crate) use order::count_arg;
pub(crate) use scan::candidates;

use aggregate::{Aggregate, Distinct};
use budgets::Profiled;
use expand::{Expand, ExpandCount};
use order::{Limit, Skip, Sort};
use readmodel::ModelCount;
use rows::{Argument, Filter, Once, Optional, Project, StageInput, Unwind};
use scan::{CountLabel, Scan, ScanFilter};

pub(crate) use crate::batch::Analysis;

pub(crate) trait Operator {
    fn next(&mut self, cx: &Cx<'_>) -> Result<Option<Row>, QueryError>;
}

pub(crate) type BoxOp<'p> = Box<dyn Operator + 'p>;

/// Builds the row operator tree of `plan`; rows are `width` slots wide.
pub(crate) fn build<'p>(plan: &'p Plan, width: usize, profile: bool) -> BoxOp<'p> {
    build_rows(plan, width, profile, None)
}

/// Builds the operator tree of `plan`; with `batch` (the statement's analysis), each subtree
/// that has a batch form runs batch-at-a-time over the read model when there is one
/// (`crate::batch`), the rest row by row.
pub(crate) fn build_rows<'p>(
    plan: &'p Plan,
    width: usize,
    profile: bool,
    batch: Option<&'p Analysis>,
) -> BoxOp<'p> {
    build_memo(plan, width, profile, batch, None)
}

/// Which operators of a plan `crate::batch::compile` declines: it decides from the plan and
/// its analysis alone, so a plan run many times (`crate::prepared`) asks once per operator
/// instead of once per run (a declined attempt builds and drops batch operators: about a
/// microsecond for a point lookup).
#[derive(Debug)]
pub(crate) struct BatchMemo(Vec<std::sync::atomic::AtomicBool>);

impl BatchMemo {
    /// For a plan of `operators` operators (ids below that).
    pub(crate) fn new(operators: usize) -> BatchMemo {
        BatchMemo((0..operators).map(|_| Default::default()).collect())
    }

    pub(crate) fn declined(&self, id: usize) -> bool {
        self.0
            .get(id)
            .is_some_and(|d| d.load(std::sync::atomic::Ordering::Relaxed))
    }

    pub(crate) fn decline(&self, id: usize) {
        if let Some(d) = self.0.get(id) {
            d.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

/// `build_rows`, skipping the batch form of operators `memo` knows it declines.
pub(crate) fn build_memo<'p>(
    plan: &'p Plan,
    width: usize,
    profile: bool,
    batch: Option<&'p Analysis>,
    memo: Option<&'p BatchMemo>,
) -> BoxOp<'p> {
    if let Some(a) = batch {
        if !memo.is_some_and(|m| m.declined(plan.id)) {
            match crate::batch::compile(plan, width, profile, a) {
                Some(op) => return op,
                None if !profile => {
                    if let Some(m) = memo {
                        m.decline(plan.id);
                    }
                }
                None => {}
            }
        }
    }
    let b = |p: &'p Plan| build_memo(p, width, profile, batch, memo);
    let op: BoxOp<'p> = match &plan.op {
        Op::Once => Box::new(Once { width, done: false }),
        Op::Argument { arg } => Box::new(Argument {
            arg: *arg,
            done: false,
        }),
        Op::StageInput => Box::new(StageInput { rows: None }),
        Op::Scan {
            input,
            slot,
            source,
            check_labels,
        } => Box::new(Scan {
            input: b(input),
            slot: *slot,
            source,
            check_labels,
            current: None,
            ids: Vec::new().into_iter(),
        }),
        Op::Expand { input, .. } => Box::new(Expand {
            input: b(input),
            plan: &plan.op,
            pending: Vec::new(),
        }),
        Op::Filter {
            input, predicate, ..
        } => Box::new(Filter {
            input: b(input),
            predicate,
        }),
        Op::Project { input, items } => Box::new(Project {
            input: b(input),
            items,
        }),
        Op::Aggregate { input, keys, aggs } => Box::new(Aggregate {
            input: b(input),
            keys,
            aggs,
            width,
            output: None,
        }),
        Op::Union { inputs, out } => Box::new(rows::Union {
            inputs: inputs
                .iter()
                .map(|(p, slots)| (b(p), slots.as_slice()))
                .collect(),
            out,
            width,
        }),
        Op::Distinct { input, slots } => Box::new(Distinct {
            input: b(input),
            slots,
            seen: HashSet::new(),
        }),
        Op::Sort { input, keys } => Box::new(Sort {
            input: b(input),
            keys,
            skip: None,
            limit: None,
            output: None,
        }),
        Op::TopK {
            input,
            keys,
            skip,
            limit,
        } => Box::new(Sort {
            input: b(input),
            keys,
            skip: skip.as_ref(),
            limit: Some(limit),
            output: None,
        }),
        Op::Skip { input, count } => Box::new(Skip {
            input: b(input),
            count,
            remaining: None,
        }),
        Op::Limit { input, count } => Box::new(Limit {
            input: b(input),
            count,
            remaining: None,
        }),
        Op::Unwind { input, expr, slot } => Box::new(Unwind {
            input: b(input),
            expr,
            slot: *slot,
            pending: Vec::new(),
        }),
        Op::Optional { input, inner, arg } => Box::new(Optional {
            input: b(input),
            inner,
            arg: *arg,
            width,
            profile,
            current: None,
        }),
        Op::ScanFilter {
            input,
            slot,
            label,
            check_labels,
            keys,
            key_slots,
            predicates,
        } => Box::new(ScanFilter {
            input: b(input),
            slot: *slot,
            label,
            check_labels,
            keys,
            key_slots,
            predicates,
            current: None,
            ids: Vec::new().into_iter(),
        }),
        Op::ExpandCount {
            input,
            from,
            hops,
            slot,
            keep_zero,
        } => Box::new(ExpandCount {
            input: b(input),
            from: *from,
            hops,
            slot: *slot,
            keep_zero: *keep_zero,
        }),
        Op::CountWhere { .. } | Op::ReachCount { .. } => {
            Box::new(ModelCount::new(&plan.op, width, profile))
        }
        Op::CountLabel { slot, label } => Box::new(CountLabel {
            width,
            slot: *slot,
            label: label.as_deref(),
            done: false,
        }),
    };
    if profile {
        Box::new(Profiled {
            inner: op,
            id: plan.id,
        })
    } else {
        op
    }
}
