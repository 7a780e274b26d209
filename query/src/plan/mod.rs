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
//! - Aggregations whose every aggregate counts the rows of a final chain of hops
//!   (`MATCH (c)<-[:T]-(t) RETURN c.x, count(t)`, also under OPTIONAL MATCH and with filters
//!   on the far nodes) count each node's paths instead of walking them (`ExpandCount`): a
//!   degree counter read for the last hop, or with a label on the far end a scan of
//!   adjacency keys checked against the label bitmap; DISTINCT over rows that read nothing of
//!   the chain keeps one row per input row with a path (a semi-join); grouping by a variable
//!   unique per row projects instead (`pipeline`).
//! - Counts of a label's nodes under `n.key <op> constant` filters, and `count(DISTINCT end)`
//!   over chains of distinct-type hops, ask the engine's in-memory read model first
//!   (`CountWhere`, `ReachCount`, see `readmodel`) and keep the ordinary plan as a fallback.
//! - Labels otherwise come from the label bitmaps (the smallest label is scanned).
//! - Filters run as soon as every variable they mention is bound; over a label scan that
//!   crosses input rows, an equality of the node's property with the row's value runs first
//!   (the batch executor looks the value up, `batch::ops::scan::ScanEq`).

use std::ops::Bound;
use std::time::Instant;

use svc_engine::{Direction, GraphRead, IndexKind, Order};

use crate::ast::*;
use crate::error::QueryError;
use crate::eval::CExpr;
use crate::functions::{aggregate_kind, AggKind, Func};
use crate::result::{Limits, Params, PlanTree};
use crate::value::Val;

mod assumptions;
mod explain;
mod expressions;
mod operators;
mod pattern;
mod pipeline;
mod projection;
mod readmodel;
mod scan;
mod writes;

pub(crate) use assumptions::{Assumptions, Checks};
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
    plan_assuming(g, stmt, params, limits, deadline, &Assumptions::default())
}

/// `plan`, noting in `assumed` what the plan took from the graph's statistics (for a plan
/// cache to check before reusing it).
pub(crate) fn plan_assuming(
    g: &dyn GraphRead,
    stmt: &Statement,
    params: &Params,
    limits: &Limits,
    deadline: Instant,
    assumed: &Assumptions,
) -> Result<Planned, QueryError> {
    let mut p = Planner {
        g,
        assumed,
        params,
        limits,
        deadline,
        next_slot: 0,
        next_op: 0,
        next_arg: 0,
        scope: Vec::new(),
        locals: std::cell::RefCell::new(Vec::new()),
        next_hidden: 0,
        kinds: std::collections::HashMap::new(),
        in_predicate: std::cell::Cell::new(false),
        post_aggregate: std::cell::Cell::new(false),
    };
    if !stmt.unions.is_empty() {
        return plan_union(p, stmt);
    }
    let mut stages = Vec::new();
    let mut current = p.op("", Op::Once);
    let mut columns = Vec::new();
    let mut out_slots = Vec::new();
    for clause in &stmt.clauses {
        p.check_deadline()?;
        match clause {
            Clause::Match(_) | Clause::Unwind(_) | Clause::With(_) => {
                current = p.plan_read_clause(current, clause)?
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
    if stages.is_empty() {
        // A read-only statement: what each UNWIND's list feeds is known now.
        let dead = crate::batch::Analysis::new(&current, p.next_slot, Some(&out_slots));
        pipeline::collect_unwind(&mut current, &dead, 0);
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

/// `q1 UNION [ALL] q2 ...` (read-only parts, checked by the parser): each part planned with a
/// scope of its own, their rows concatenated into common output slots, then made distinct
/// unless `ALL`.
fn plan_union(mut p: Planner<'_>, stmt: &Statement) -> Result<Planned, QueryError> {
    let parts = std::iter::once(&stmt.clauses).chain(stmt.unions.iter().map(|u| &u.clauses));
    let mut inputs = Vec::new();
    let mut columns: Option<Vec<String>> = None;
    for clauses in parts {
        p.scope.clear();
        let mut current = p.op("", Op::Once);
        let mut items = Vec::new();
        for clause in clauses {
            p.check_deadline()?;
            match clause {
                Clause::Return(r) => {
                    let (plan, projected) = p.plan_projection(current, r, false)?;
                    current = plan;
                    items = projected;
                }
                other => current = p.plan_read_clause(current, other)?,
            }
        }
        let names: Vec<String> = items.iter().map(|(n, _)| n.clone()).collect();
        match &columns {
            Some(c) if *c != names => {
                return Err(QueryError::semantic(format!(
                    "all queries of a UNION must return the same columns ({} and {})",
                    c.join(", "),
                    names.join(", ")
                )))
            }
            None => columns = Some(names),
            Some(_) => {}
        }
        inputs.push((
            current,
            items.into_iter().map(|(_, s)| s).collect::<Vec<_>>(),
        ));
    }
    let columns = columns.unwrap_or_default();
    let out: Vec<usize> = columns.iter().map(|_| p.new_slot()).collect();
    let all = stmt.unions.iter().all(|u| u.all);
    let mut plan = p.op(
        if all { "UNION ALL" } else { "UNION" },
        Op::Union {
            inputs,
            out: out.clone(),
        },
    );
    if !all {
        plan = p.op(
            "",
            Op::Distinct {
                input: Box::new(plan),
                slots: out.clone(),
            },
        );
    }
    Ok(Planned {
        stages: vec![Stage::Read(plan)],
        columns,
        out_slots: out,
        width: p.next_slot,
        operators: p.next_op,
    })
}

struct Planner<'a> {
    g: &'a dyn GraphRead,
    /// What the plan takes from statistics, and whether it read the clock while folding.
    assumed: &'a Assumptions,
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
    /// What each slot is known to hold (slots absent here: unknown), to refuse a variable used
    /// as something else (`MATCH ()-[r]-() MATCH (r)`, `WITH 1 AS n MATCH (n)`).
    kinds: std::collections::HashMap<usize, VarKind>,
    /// Set while compiling a WHERE predicate: the one place a bare pattern may stand.
    in_predicate: std::cell::Cell<bool>,
    /// Set while compiling what an aggregating projection computes around its aggregates.
    post_aggregate: std::cell::Cell<bool>,
}

/// What a variable holds, where the planner knows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum VarKind {
    Node,
    Relationship,
    Relationships,
    Path,
    /// A value that is not a graph entity (a literal, arithmetic, ...).
    Value,
}

impl VarKind {
    fn name(self) -> &'static str {
        match self {
            VarKind::Node => "a node",
            VarKind::Relationship => "a relationship",
            VarKind::Relationships => "a list of relationships",
            VarKind::Path => "a path",
            VarKind::Value => "a value",
        }
    }
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

    /// MATCH, UNWIND or WITH over `current` (shared by statements and subqueries).
    fn plan_read_clause(&mut self, mut current: Plan, clause: &Clause) -> Result<Plan, QueryError> {
        match clause {
            Clause::Match(m) => current = self.plan_match(current, m)?,
            Clause::Unwind(u) => {
                let expr = self.compile(&u.expr, &[], &mut None)?;
                let slot = self.new_slot();
                current = self.op(
                    format!("{} AS {}", u.expr, u.alias),
                    Op::Unwind {
                        input: Box::new(current),
                        expr,
                        slot,
                    },
                );
                self.scope.push((u.alias.clone(), slot));
            }
            Clause::With(w) => {
                let before = self.scope.clone();
                let (plan, items) = self.plan_projection(current, &w.projection, true)?;
                current = plan;
                self.carry_kinds(&before, &items, &w.projection);
                self.scope = items;
                if let Some(pred) = &w.where_ {
                    // Without aggregation or DISTINCT the rows still hold the variables from
                    // before WITH, and WHERE may read them (as ORDER BY may).
                    let keeps_rows = !w.projection.distinct
                        && !w
                            .projection
                            .items
                            .iter()
                            .any(|i| i.expr.contains_aggregate());
                    let projected = self.scope.clone();
                    if keeps_rows {
                        self.scope = before
                            .into_iter()
                            .chain(projected.iter().cloned())
                            .collect();
                    }
                    let predicate = self.compile_predicate(pred);
                    self.scope = projected;
                    let predicate = predicate?;
                    let filter = self.op(
                        pred.to_string(),
                        Op::Filter {
                            input: Box::new(current),
                            predicate,
                        },
                    );
                    current = self.push_filter(filter);
                }
            }
            _ => {}
        }
        Ok(current)
    }

    /// Kinds of the slots a projection made: a variable keeps its kind, a literal or an
    /// operator's result is a value, anything else unknown.
    fn carry_kinds(
        &mut self,
        before: &[(String, usize)],
        items: &[(String, usize)],
        p: &Projection,
    ) {
        let old = |name: &str| {
            before
                .iter()
                .rev()
                .find(|(n, _)| n == name)
                .map(|(_, s)| *s)
        };
        for (name, slot) in items {
            let expr = p
                .items
                .iter()
                .find(|i| i.column_name() == *name)
                .map(|i| &i.expr);
            let kind = match expr {
                Some(Expr::Variable(v)) => old(v).and_then(|s| self.kinds.get(&s).copied()),
                // null may stand for anything.
                Some(Expr::Literal(Literal::Null)) => None,
                Some(
                    Expr::Literal(_)
                    | Expr::List(_)
                    | Expr::Map(_)
                    | Expr::Binary(..)
                    | Expr::Unary(..)
                    | Expr::Comprehension { .. },
                ) => Some(VarKind::Value),
                Some(_) => None,
                None => old(name).and_then(|s| self.kinds.get(&s).copied()),
            };
            if let Some(k) = kind {
                self.kinds.insert(*slot, k);
            }
        }
    }

    /// Refuses `name`, bound to `slot`, where the pattern needs `want`.
    fn check_kind(&self, name: &str, slot: usize, want: VarKind) -> Result<(), QueryError> {
        match self.kinds.get(&slot) {
            // A list value may be a list of relationships.
            Some(VarKind::Value) if want == VarKind::Relationships => Ok(()),
            Some(k) if *k != want => Err(QueryError::semantic(format!(
                "variable `{name}` is {}, not {}",
                k.name(),
                want.name()
            ))),
            _ => Ok(()),
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
