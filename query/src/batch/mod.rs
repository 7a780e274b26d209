//! The batch executor: read plans run chunk at a time over the engine's in-memory read model
//! (`svc_engine::ModelView`) instead of row by row over RocksDB.
//!
//! - Which plans: `compile` turns a plan subtree into batch operators (`ops`) when the
//!   subtree contains a scan or an expansion (where batches pay off); an operator it has no
//!   batch form for (index seeks, counts from the model, relationships with property
//!   constraints, anything added later) runs on the row path below a `FromRows` adapter, so
//!   new constructs keep working. Expressions are always evaluated by the row evaluator
//!   (`expr`), with property reads served from the model's columns.
//! - When: at run time, only over a source with a model (`GraphRead::model_view`: snapshots
//!   once their workspace's model is built). Write transactions, the in-memory `ModelGraph`,
//!   a workspace without a model (never built, over `--read-model-mb`) run the row path.
//! - Exactness: nodes a commit touched after the model was built are read through the
//!   snapshot (labels, properties, adjacency), as the engine's own model counts do; every
//!   other node from the base, which holds exactly what the snapshot would read.
//! - Same answers: the batch runs to completion before its first row is handed on; if it
//!   fails (an expression error, a buffer limit: evaluation order differs from the row path's,
//!   so the row path decides) the row path runs instead. A timeout is final.
//!
//! The differential test (`tests/batch_differential.rs`) runs the query crate's case suite,
//! the benchmark corpus and random reads on both paths and on the model graph.

mod analysis;
mod chunk;
mod expr;
mod ops;
mod reset;
mod switch;
#[cfg(test)]
mod tests;

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use svc_engine::ModelView;

use crate::error::QueryError;
use crate::eval::{CExpr, Cx, Row};
use crate::exec::{BoxOp, Operator};
use crate::plan::{Op, Plan, ScanSource};
use crate::value::Val;

pub(crate) use analysis::Analysis;
pub use switch::ModelSwitch;

use expr::{cell, replace, BExpr, Bx, Extras};
use ops::*;

/// Most rows a batch subtree hands to the row operators above it; beyond that the row path
/// streams instead.
const MAX_OUTPUT: usize = 1_000_000;
/// The source of a `ScanFilter`'s scan (its label is the scan's own).
static LABEL_SCAN: ScanSource = ScanSource::AllNodes;

/// Deeper plans run on the row path (the batch compiler recurses once per operator, and the
/// largest accepted statements must plan and run on a small thread stack).
const MAX_DEPTH: usize = 48;

/// The plan's depth (operators on the longest path to a leaf), counted without recursion.
fn depth(plan: &Plan) -> usize {
    let mut stack = vec![(plan, 1usize)];
    let mut max = 0;
    while let Some((p, d)) = stack.pop() {
        max = max.max(d);
        if max > MAX_DEPTH {
            break;
        }
        stack.extend(p.inputs().into_iter().map(|c| (c, d + 1)));
    }
    max
}

/// Builds batch operators for a plan subtree.
struct Compiler<'p> {
    a: &'p Analysis,
    /// The plan's slots.
    width: usize,
    profile: bool,
    /// Whether the batch holds a scan or an expansion (else the row path is as good).
    heavy: bool,
}

impl<'p> Compiler<'p> {
    fn chunk_width(&self) -> usize {
        self.width + self.a.depth + 1
    }

    /// The batch form of `plan`, or for an operator without one, its row form as a source.
    fn any(&mut self, plan: &'p Plan, level: usize) -> BBox<'p> {
        match self.op(plan, level, None) {
            Some(b) => b,
            None => Box::new(FromRows {
                input: crate::exec::build_rows(plan, self.width, self.profile, Some(self.a)),
                done: false,
            }),
        }
    }

    /// The batch form of an `ExpandCount` plan, `bound` a filter on its count fused in.
    fn expand_count(
        &mut self,
        plan: &'p Plan,
        level: usize,
        arg: Option<&ArgChunk>,
        bound: Option<(crate::ast::BinaryOp, i64)>,
    ) -> Option<BBox<'p>> {
        let Op::ExpandCount {
            input: i,
            from,
            hops,
            slot,
            keep_zero,
        } = &plan.op
        else {
            return None;
        };
        let w = self.chunk_width();
        // A whole scan below: the far nodes met will be many, worth testing all at once.
        let eager = matches!(
            &i.op,
            Op::Scan {
                source: ScanSource::AllNodes | ScanSource::Label(_),
                ..
            } | Op::ScanFilter { .. }
        );
        let input = match arg {
            Some(_) => self.op(i, level, arg)?,
            None => self.any(i, level),
        };
        let steps = hops
            .iter()
            .map(|h| {
                let mut reads: Vec<usize> = h
                    .filters
                    .iter()
                    .flat_map(|f| f.slot_list())
                    .filter(|s| *s != h.to)
                    .collect();
                reads.sort_unstable();
                reads.dedup();
                CountStep {
                    step: Expand {
                        input: Box::new(Once { done: true }),
                        from: *from,
                        rel: h.to,
                        to: h.to,
                        types: &h.types,
                        direction: Some(h.direction),
                        to_labels: &h.to_labels,
                        into: false,
                        bind: false,
                        distinct_from: &[],
                        end_labels: Default::default(),
                        at: None,
                    },
                    hop: h,
                    filters: h.filters.iter().map(|f| BExpr::new(f, w)).collect(),
                    reads,
                    passing: None,
                    eager,
                    tested: 0,
                    reverse: None,
                    walked: 0,
                    retry_at: 0,
                }
            })
            .collect();
        Some(Box::new(ExpandCount {
            input,
            from: *from,
            hops: steps,
            slot: *slot,
            keep_zero: *keep_zero,
            bound,
        }))
    }

    /// The batch form of `plan`; None when the operator has none. `arg` is the argument chunk
    /// of an OPTIONAL MATCH's inner pipeline (the only place an `Argument` leaf is batched).
    fn op(&mut self, plan: &'p Plan, level: usize, arg: Option<&ArgChunk>) -> Option<BBox<'p>> {
        let w = self.chunk_width();
        let input = |c: &mut Self, p: &'p Plan| -> Option<BBox<'p>> {
            match arg {
                Some(_) => c.op(p, level, arg),
                None => Some(c.any(p, level)),
            }
        };
        Some(match &plan.op {
            Op::Once => Box::new(Once { done: false }),
            Op::Argument { .. } => Box::new(Argument {
                chunk: Rc::clone(arg?),
            }),
            Op::Scan {
                input: i,
                slot,
                source,
                check_labels,
            } => {
                let label = match source {
                    ScanSource::AllNodes => None,
                    ScanSource::Label(l) => Some(l.as_str()),
                    // An index's candidates: batched when they do not depend on the row, and
                    // worth it only when many (a range without a limit).
                    ScanSource::Seek { value, .. } | ScanSource::ById { value }
                        if value.slot_list().is_empty() =>
                    {
                        None
                    }
                    ScanSource::Range { limit, .. }
                        if limit.as_ref().is_none_or(|l| l.slot_list().is_empty()) =>
                    {
                        self.heavy |= limit.is_none();
                        None
                    }
                    _ => return None,
                };
                if matches!(source, ScanSource::AllNodes | ScanSource::Label(_)) {
                    self.heavy = true;
                }
                Box::new(Scan {
                    input: input(self, i)?,
                    slot: *slot,
                    source,
                    label,
                    check_labels,
                    candidates: None,
                    at: None,
                })
            }
            Op::ScanFilter {
                input: i,
                slot,
                label,
                check_labels,
                keys,
                key_slots,
                predicates,
            } => {
                self.heavy = true;
                let mut op: BBox<'p> = Box::new(Scan {
                    input: input(self, i)?,
                    slot: *slot,
                    source: &LABEL_SCAN,
                    label: Some(label),
                    check_labels,
                    candidates: None,
                    at: None,
                });
                // The predicates read the scanned node's properties from `key_slots`: read
                // them from the node instead (the slots stay unset, as the row path leaves them).
                for p in predicates {
                    let p = replace(p, &mut |e| match e {
                        CExpr::Slot(s) => key_slots
                            .iter()
                            .position(|k| k == s)
                            .map(|i| CExpr::Prop(Box::new(CExpr::Slot(*slot)), keys[i].clone())),
                        _ => None,
                    });
                    op = Box::new(Filter {
                        input: op,
                        predicate: BExpr::new(&p, w),
                    });
                }
                op
            }
            Op::Expand {
                input: i,
                from,
                rel,
                to,
                types,
                direction,
                to_labels,
                rel_props,
                into,
                hops,
                distinct_from,
            } => {
                if !rel_props.is_empty() {
                    return None;
                }
                self.heavy = true;
                // Types that can never meet need no comparison.
                let check: &[usize] = if self.a.disjoint(types, distinct_from) {
                    &[]
                } else {
                    distinct_from
                };
                let hop = Expand {
                    input: input(self, i)?,
                    from: *from,
                    rel: *rel,
                    to: *to,
                    types,
                    direction: *direction,
                    to_labels,
                    into: *into,
                    bind: self.a.used(*rel),
                    distinct_from: check,
                    end_labels: Default::default(),
                    at: None,
                };
                match hops {
                    Some((min, max)) => Box::new(VarExpand {
                        hop,
                        min: *min,
                        max: *max,
                        at: None,
                    }),
                    None => Box::new(hop),
                }
            }
            Op::ExpandCount { .. } => {
                self.heavy = true;
                return self.expand_count(plan, level, arg, None);
            }
            Op::Filter {
                input: i,
                predicate,
            } if count_bound(predicate, i).is_some() => {
                self.heavy = true;
                return self.expand_count(i, level, arg, count_bound(predicate, i));
            }
            Op::Filter {
                input: i,
                predicate,
            } if eq_scan_shape(predicate, i).is_some() => {
                let (below, slot, label, check_labels, key, value) = eq_scan_shape(predicate, i)?;
                self.heavy = true;
                // The scan and the filter themselves, for chunks the model cannot decide.
                let arg: ArgChunk = Rc::new(RefCell::new(None));
                let Op::Scan { source, .. } = &i.op else {
                    return None;
                };
                let generic = Box::new(Filter {
                    input: Box::new(Scan {
                        input: Box::new(Argument {
                            chunk: Rc::clone(&arg),
                        }),
                        slot,
                        source,
                        label: Some(label),
                        check_labels,
                        candidates: None,
                        at: None,
                    }),
                    predicate: BExpr::new(predicate, w),
                });
                Box::new(ScanEq {
                    input: input(self, below)?,
                    slot,
                    label,
                    key,
                    check_labels,
                    value: BExpr::new(value, w),
                    generic,
                    arg,
                    generic_on: false,
                    strings: None,
                    at: None,
                })
            }
            Op::Filter {
                input: i,
                predicate,
            } => Box::new(Filter {
                input: input(self, i)?,
                predicate: BExpr::new(predicate, w),
            }),
            Op::Project { input: i, items } => Box::new(Project {
                input: input(self, i)?,
                items: items.iter().map(|(s, e)| (*s, BExpr::new(e, w))).collect(),
            }),
            Op::Aggregate {
                input: i,
                keys,
                aggs,
            } => {
                if arg.is_some() || !aggs.iter().all(|a| known_aggregate(a.kind)) {
                    return None;
                }
                Box::new(Aggregate {
                    input: input(self, i)?,
                    keys: keys.iter().map(|(s, e)| (*s, BExpr::new(e, w))).collect(),
                    aggs: aggs
                        .iter()
                        .map(|a| (a, a.arg.as_ref().map(|e| BExpr::new(e, w))))
                        .collect(),
                    output: None,
                })
            }
            Op::Distinct { input: i, slots } if arg.is_none() => Box::new(Distinct {
                input: input(self, i)?,
                slots,
                seen: Default::default(),
                fast: Default::default(),
            }),
            Op::Sort { input: i, keys } if arg.is_none() => Box::new(Sort {
                input: input(self, i)?,
                keys: keys.iter().map(|(e, d)| (BExpr::new(e, w), *d)).collect(),
                skip: None,
                limit: None,
                output: None,
                readable: Vec::new(),
            }),
            Op::TopK {
                input: i,
                keys,
                skip,
                limit,
            } if arg.is_none() => {
                let sort = |input: BBox<'p>, keys: &[(CExpr, bool)], readable: Vec<usize>| {
                    Box::new(Sort {
                        input,
                        keys: keys.iter().map(|(e, d)| (BExpr::new(e, w), *d)).collect(),
                        skip: skip.as_ref(),
                        limit: Some(limit),
                        output: None,
                        readable,
                    })
                };
                match deferrable(i, keys) {
                    // The projection runs after the cut, on the kept rows only.
                    Some((below, items, keys, readable)) => Box::new(Project {
                        input: sort(self.any(below, level), &keys, readable),
                        items: items.iter().map(|(s, e)| (*s, BExpr::new(e, w))).collect(),
                    }),
                    None => sort(input(self, i)?, keys, Vec::new()),
                }
            }
            Op::Skip { input: i, count } if arg.is_none() => Box::new(Skip {
                input: input(self, i)?,
                count,
                remaining: None,
            }),
            Op::Limit { input: i, count } if arg.is_none() => Box::new(Limit {
                input: input(self, i)?,
                count,
                remaining: None,
            }),
            Op::Unwind {
                input: i,
                expr,
                slot,
            } => {
                let dead = self.a.dead.get(&plan.id).cloned().unwrap_or_default();
                let list_slot = match expr {
                    CExpr::Slot(s) if dead.contains(s) => Some(*s),
                    _ => None,
                };
                Box::new(Unwind {
                    input: input(self, i)?,
                    expr: BExpr::new(expr, w),
                    slot: *slot,
                    dead,
                    list_slot,
                    dict: Default::default(),
                })
            }
            Op::Optional {
                input: i,
                inner,
                arg: _,
            } => {
                let outer = input(self, i)?;
                // The inner pipeline must be batch throughout (its leaf is the argument).
                let probe = Rc::new(RefCell::new(None));
                self.op(inner, level + 1, Some(&probe))?;
                let a = self.a;
                let (width, profile) = (self.width, self.profile);
                let inner_plan: &'p Plan = inner;
                Box::new(Optional {
                    input: outer,
                    inner: Box::new(move |chunk| {
                        let mut c = Compiler {
                            a,
                            width,
                            profile,
                            heavy: false,
                        };
                        c.op(inner_plan, level + 1, Some(&chunk))
                            .unwrap_or_else(|| Box::new(Once { done: true }))
                    }),
                    origin: width + level,
                })
            }
            Op::StageInput
            | Op::Union { .. }
            | Op::Distinct { .. }
            | Op::Sort { .. }
            | Op::TopK { .. }
            | Op::Skip { .. }
            | Op::Limit { .. }
            | Op::CountWhere { .. }
            | Op::ReachCount { .. }
            | Op::CountLabel { .. } => return None,
        })
    }
}

/// A filter `count <op> k` (or `k <op> count`) on the count an `ExpandCount` directly below
/// makes, with an integer `k`: the comparison to fuse into it.
fn count_bound(predicate: &CExpr, input: &Plan) -> Option<(crate::ast::BinaryOp, i64)> {
    use crate::ast::BinaryOp::*;
    let Op::ExpandCount { slot, .. } = &input.op else {
        return None;
    };
    let CExpr::Bin(op, a, b) = predicate else {
        return None;
    };
    let flip = |op| match op {
        Lt => Gt,
        Le => Ge,
        Gt => Lt,
        Ge => Le,
        other => other,
    };
    match (a.as_ref(), b.as_ref(), op) {
        (_, _, Eq | Ne | Lt | Le | Gt | Ge) => {}
        _ => return None,
    }
    match (a.as_ref(), b.as_ref()) {
        (CExpr::Slot(s), CExpr::Const(Val::Int(k))) if s == slot => Some((*op, *k)),
        (CExpr::Const(Val::Int(k)), CExpr::Slot(s)) if s == slot => Some((flip(*op), *k)),
        _ => None,
    }
}

/// A top-k over a projection that can run before it: the keys read through the
/// projection's items (each pure, so evaluating it again for the kept rows gives the same
/// value), and every item not itself a key unable to fail (a slot, a constant, or a property
/// read of a slot, whose values `top_k` checks per chunk). Gives the projection's input, its
/// items, the keys rewritten, and the slots whose properties the items read.
#[allow(clippy::type_complexity)]
fn deferrable<'p>(
    input: &'p Plan,
    keys: &[(CExpr, bool)],
) -> Option<(
    &'p Plan,
    &'p [(usize, CExpr)],
    Vec<(CExpr, bool)>,
    Vec<usize>,
)> {
    let Op::Project {
        input: below,
        items,
    } = &input.op
    else {
        return None;
    };
    let targets: Vec<usize> = items.iter().map(|(s, _)| *s).collect();
    // An item reading a slot another item sets (renames over their own inputs): keep order.
    if items
        .iter()
        .any(|(_, e)| e.slot_list().iter().any(|s| targets.contains(s)))
    {
        return None;
    }
    let rewritten: Vec<(CExpr, bool)> = keys
        .iter()
        .map(|(e, d)| {
            let e = replace(e, &mut |x| match x {
                CExpr::Slot(s) => items
                    .iter()
                    .find(|(t, _)| t == s)
                    .map(|(_, item)| item.clone()),
                _ => None,
            });
            (e, *d)
        })
        .collect();
    if !rewritten.iter().all(|(e, _)| expr::pure(e)) {
        return None;
    }
    let mut readable = Vec::new();
    for (t, e) in items {
        let is_key = keys
            .iter()
            .any(|(k, _)| matches!(k, CExpr::Slot(s) if s == t));
        match e {
            CExpr::Slot(_) | CExpr::Const(_) => {}
            CExpr::Prop(b, _) => match b.as_ref() {
                CExpr::Slot(s) => readable.push(*s),
                _ if is_key => {}
                _ => return None,
            },
            _ if is_key => {}
            _ => return None,
        }
    }
    Some((below, items, rewritten, readable))
}

/// The batch form of a plan subtree as a row operator, when it has one worth running.
pub(crate) fn compile<'p>(
    plan: &'p Plan,
    width: usize,
    profile: bool,
    a: &'p Analysis,
) -> Option<BoxOp<'p>> {
    if profile {
        return None; // PROFILE reports per-operator rows, which only the row path counts
    }
    Some(compile_tree(plan, width, a)?)
}

/// `compile`'s tree itself, which a plan run many times keeps between runs (`Tree::reset`).
pub(crate) fn compile_tree<'p>(
    plan: &'p Plan,
    width: usize,
    a: &'p Analysis,
) -> Option<Box<Tree<'p>>> {
    if a.off {
        return None;
    }
    let mut c = Compiler {
        a,
        width,
        profile: false,
        heavy: false,
    };
    let batch = c.op(plan, 1, None)?;
    if !c.heavy {
        return None;
    }
    Some(Box::new(Tree {
        batch,
        plan,
        fallback: None,
        width,
        chunk_width: c.chunk_width(),
        state: State::Start,
    }))
}

enum State {
    Start,
    Rows(std::vec::IntoIter<Row>),
    Fallback,
}

/// A batch subtree run as a row operator: its batch operators (or, without a model or after a
/// batch failure, its row form) handing their rows on.
pub(crate) struct Tree<'p> {
    batch: BBox<'p>,
    plan: &'p Plan,
    /// The row form, built only when a run needs it.
    fallback: Option<BoxOp<'p>>,
    width: usize,
    chunk_width: usize,
    state: State,
}

impl Tree<'_> {
    fn run(&mut self, cx: &Cx<'_>, m: &ModelView) -> Result<Vec<Row>, QueryError> {
        let extras = Extras::default();
        let bx = Bx::new(cx, m, &extras, self.chunk_width);
        let mut rows = Vec::new();
        while let Some(ch) = self.batch.next(&bx)? {
            if rows.len() + ch.len > MAX_OUTPUT {
                return Err(QueryError::BufferLimit(MAX_OUTPUT));
            }
            for i in 0..ch.len {
                let mut row: Row = Vec::with_capacity(self.width);
                for c in ch.cols.iter().take(self.width) {
                    row.push(cell(&bx, c, i));
                }
                rows.push(row);
            }
        }
        Ok(rows)
    }

    /// Back to the state `compile_tree` left it in, for another run (of any snapshot, model
    /// version or thread); false when it cannot be (then drop it).
    pub(crate) fn reset(&mut self) -> bool {
        let Tree {
            batch,
            plan: _,
            fallback,
            width: _,
            chunk_width: _,
            state,
        } = self;
        *fallback = None;
        *state = State::Start;
        batch.reset()
    }
}

#[cfg(test)]
thread_local! {
    /// (batch runs that answered, batch runs that failed over to the row path), for tests
    /// that must know the batch path really ran.
    static RUNS: std::cell::Cell<(u64, u64)> = const { std::cell::Cell::new((0, 0)) };
}

impl Operator for Tree<'_> {
    fn next(&mut self, cx: &Cx<'_>) -> Result<Option<Row>, QueryError> {
        if let State::Start = self.state {
            self.state = match cx.g.model_view() {
                None => State::Fallback,
                Some(m) => {
                    let outcome = self.run(cx, &m);
                    #[cfg(test)]
                    RUNS.with(|r| {
                        let (ok, failed) = r.get();
                        r.set(match outcome {
                            Ok(_) => (ok + 1, failed),
                            Err(_) => (ok, failed + 1),
                        })
                    });
                    match outcome {
                        Ok(rows) => State::Rows(rows.into_iter()),
                        Err(e @ QueryError::Timeout(_)) => return Err(e),
                        Err(_) => State::Fallback,
                    }
                }
            };
        }
        match &mut self.state {
            State::Rows(rows) => Ok(rows.next()),
            _ => {
                let (plan, width) = (self.plan, self.width);
                self.fallback
                    .get_or_insert_with(|| crate::exec::build_rows(plan, width, false, None))
                    .next(cx)
            }
        }
    }
}
