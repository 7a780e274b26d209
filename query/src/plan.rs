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
//! - Labels otherwise come from the label bitmaps (the smallest label is scanned).
//! - Filters run as soon as every variable they mention is bound.

use std::ops::Bound;

use svc_engine::{Direction, GraphRead, IndexKind, Order};

use crate::ast::*;
use crate::error::QueryError;
use crate::eval::CExpr;
use crate::functions::{aggregate_kind, AggKind, Func};
use crate::result::{Limits, Params, PlanTree};
use crate::value::Val;

/// One operator and its inputs.
#[derive(Debug)]
pub(crate) struct Plan {
    /// Index into per-operator profile counters.
    pub id: usize,
    pub details: String,
    pub op: Op,
}

/// Where a node scan gets its candidate ids.
#[derive(Debug)]
pub(crate) enum ScanSource {
    AllNodes,
    Label(String),
    /// Property equality through an index; the value is computed per input row.
    Seek {
        label: String,
        key: String,
        value: CExpr,
        kind: IndexKind,
    },
    Range {
        label: String,
        key: String,
        lower: Bound<Val>,
        upper: Bound<Val>,
        order: Order,
        limit: Option<CExpr>,
    },
}

#[derive(Debug)]
pub(crate) struct AggSpec {
    pub slot: usize,
    pub kind: AggKind,
    pub distinct: bool,
    /// `None` for `count(*)`.
    pub arg: Option<CExpr>,
}

#[derive(Debug)]
pub(crate) enum Op {
    /// One empty row.
    Once,
    /// The outer row of an OPTIONAL MATCH or MERGE, by argument id.
    Argument {
        arg: usize,
    },
    /// The rows produced by the previous stage.
    StageInput,
    Scan {
        input: Box<Plan>,
        slot: usize,
        source: ScanSource,
        check_labels: Vec<String>,
    },
    Expand {
        input: Box<Plan>,
        from: usize,
        rel: usize,
        to: usize,
        types: Vec<String>,
        direction: Option<Direction>,
        to_labels: Vec<String>,
        rel_props: Vec<(String, CExpr)>,
        /// `to` was bound before: check the far end instead of binding it.
        into: bool,
        /// Variable length: (min, max) hops; the relationship slot then holds a list.
        hops: Option<(u32, u32)>,
        /// Relationship slots bound earlier in the same MATCH (relationships may not repeat).
        distinct_from: Vec<usize>,
    },
    Filter {
        input: Box<Plan>,
        predicate: CExpr,
    },
    Project {
        input: Box<Plan>,
        items: Vec<(usize, CExpr)>,
    },
    Aggregate {
        input: Box<Plan>,
        keys: Vec<(usize, CExpr)>,
        aggs: Vec<AggSpec>,
    },
    Distinct {
        input: Box<Plan>,
        slots: Vec<usize>,
    },
    Sort {
        input: Box<Plan>,
        keys: Vec<(CExpr, bool)>,
    },
    TopK {
        input: Box<Plan>,
        keys: Vec<(CExpr, bool)>,
        skip: Option<CExpr>,
        limit: CExpr,
    },
    Skip {
        input: Box<Plan>,
        count: CExpr,
    },
    Limit {
        input: Box<Plan>,
        count: CExpr,
    },
    Unwind {
        input: Box<Plan>,
        expr: CExpr,
        slot: usize,
    },
    /// Runs `inner` (whose leaf is `Argument { arg }`) per input row; passes the row through
    /// unchanged (its new slots null) when `inner` finds nothing.
    Optional {
        input: Box<Plan>,
        inner: Box<Plan>,
        arg: usize,
    },
    /// One hop counted instead of walked: for each input row, the number of relationships of
    /// the node in `from` (of `types`, in `direction`, whose far end carries `to_label`) goes
    /// into `slot`; rows with none are dropped, as an expansion would drop them. Planned under
    /// an aggregation whose every aggregate counts the hop's rows (see `try_degree_aggregate`).
    ExpandCount {
        input: Box<Plan>,
        from: usize,
        types: Vec<String>,
        direction: Direction,
        to_label: Option<String>,
        slot: usize,
    },
    /// A label scan with the filters directly above it fused in: the engine reads the nodes
    /// sequentially and decodes only the properties the filters read (`keys`, into
    /// `key_slots`); a node passes when every predicate is true, checked in order.
    ScanFilter {
        input: Box<Plan>,
        slot: usize,
        label: String,
        check_labels: Vec<String>,
        keys: Vec<String>,
        key_slots: Vec<usize>,
        predicates: Vec<CExpr>,
    },
    /// `count` of a label (or of all nodes) from the bitmap's cardinality.
    CountLabel {
        slot: usize,
        label: Option<String>,
    },
}

/// A node of a CREATE (or of MERGE's create branch).
#[derive(Debug)]
pub(crate) struct CreateNode {
    pub slot: usize,
    pub bound: bool,
    pub labels: Vec<String>,
    pub props: Vec<(String, CExpr)>,
}

#[derive(Debug)]
pub(crate) struct CreateRel {
    pub slot: usize,
    pub start: usize,
    pub end: usize,
    pub rel_type: String,
    pub props: Vec<(String, CExpr)>,
}

#[derive(Debug, Default)]
pub(crate) struct CreatePattern {
    pub nodes: Vec<CreateNode>,
    pub rels: Vec<CreateRel>,
}

#[derive(Debug)]
pub(crate) enum SetOp {
    Prop {
        slot: usize,
        key: String,
        value: CExpr,
    },
    Replace {
        slot: usize,
        value: CExpr,
    },
    Merge {
        slot: usize,
        value: CExpr,
    },
    Labels {
        slot: usize,
        labels: Vec<String>,
    },
}

#[derive(Debug)]
pub(crate) enum RemoveOp {
    Prop { slot: usize, key: String },
    Labels { slot: usize, labels: Vec<String> },
}

#[derive(Debug)]
pub(crate) enum WriteOp {
    Create(CreatePattern),
    Merge {
        matcher: Box<Plan>,
        arg: usize,
        create: CreatePattern,
        on_create: Vec<SetOp>,
        on_match: Vec<SetOp>,
    },
    Set(Vec<SetOp>),
    Remove(Vec<RemoveOp>),
    Delete {
        detach: bool,
        exprs: Vec<CExpr>,
    },
}

#[derive(Debug)]
pub(crate) enum Stage {
    Read(Plan),
    Write {
        id: usize,
        details: String,
        op: WriteOp,
    },
}

/// A planned statement.
#[derive(Debug)]
pub(crate) struct Planned {
    pub stages: Vec<Stage>,
    pub columns: Vec<String>,
    pub out_slots: Vec<usize>,
    pub width: usize,
    pub operators: usize,
}

/// Plans a statement against a graph (whose declared indexes and label counts guide the plan).
pub(crate) fn plan(
    g: &dyn GraphRead,
    stmt: &Statement,
    params: &Params,
    limits: &Limits,
) -> Result<Planned, QueryError> {
    let mut p = Planner {
        g,
        params,
        limits,
        next_slot: 0,
        next_op: 0,
        next_arg: 0,
        scope: Vec::new(),
    };
    let mut stages = Vec::new();
    let mut current = p.op("", Op::Once);
    let mut columns = Vec::new();
    let mut out_slots = Vec::new();
    for clause in &stmt.clauses {
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
                let (plan, items) = p.plan_projection(current, &w.projection, true)?;
                current = plan;
                p.scope = items;
                if let Some(pred) = &w.where_ {
                    let predicate = p.compile(pred, &[], &mut None)?;
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
    next_slot: usize,
    next_op: usize,
    next_arg: usize,
    /// Visible variables, name -> slot (later entries shadow earlier ones).
    scope: Vec<(String, usize)>,
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

fn split_and(e: &Expr, out: &mut Vec<Expr>) {
    match e {
        Expr::Binary(BinaryOp::And, a, b) => {
            split_and(a, out);
            split_and(b, out);
        }
        other => out.push(other.clone()),
    }
}

impl<'a> Planner<'a> {
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

    /// Compiles an expression in the current scope. `replace` maps whole sub-expressions to
    /// slots (projected items); `aggs` collects aggregate calls where they are allowed.
    fn compile(
        &self,
        e: &Expr,
        replace: &[(&Expr, usize)],
        aggs: &mut Option<AggCollector>,
    ) -> Result<CExpr, QueryError> {
        let c = self.compile_inner(e, replace, aggs)?;
        Ok(self.fold(c))
    }

    /// Evaluates variable-free expressions once at plan time, so `datetime($since)` or `-5`
    /// reach the planner as constants (and can drive index ranges). An expression that fails
    /// here is left for run time, which reports the error only if it is reached.
    fn fold(&self, c: CExpr) -> CExpr {
        if matches!(c, CExpr::Const(_) | CExpr::Slot(_)) || !c.slot_list().is_empty() {
            return c;
        }
        let far = std::time::Instant::now() + std::time::Duration::from_secs(3600);
        let cx = crate::eval::Cx::new(self.g, self.limits, far, 0, false);
        match crate::eval::eval(&c, &[], &cx) {
            Ok(v) => CExpr::Const(v),
            Err(_) => c,
        }
    }

    fn compile_inner(
        &self,
        e: &Expr,
        replace: &[(&Expr, usize)],
        aggs: &mut Option<AggCollector>,
    ) -> Result<CExpr, QueryError> {
        if let Some((_, slot)) = replace.iter().find(|(r, _)| *r == e) {
            return Ok(CExpr::Slot(*slot));
        }
        let c = |x: &Expr, aggs: &mut Option<AggCollector>| {
            self.compile(x, replace, aggs).map(Box::new)
        };
        Ok(match e {
            Expr::Literal(l) => CExpr::Const(match l {
                Literal::Null => Val::Null,
                Literal::Bool(b) => Val::Bool(*b),
                Literal::Int(i) => Val::Int(*i),
                Literal::Float(f) => Val::Float(*f),
                Literal::String(s) => Val::Str(s.clone()),
            }),
            Expr::Param(name) => match self.params.get(name) {
                Some(v) => CExpr::Const(Val::from(v)),
                None => return Err(QueryError::UnknownParameter(name.clone())),
            },
            Expr::Variable(v) => match self.lookup(v) {
                Some(s) => CExpr::Slot(s),
                None => {
                    return Err(QueryError::semantic(format!(
                        "variable `{v}` is not defined"
                    )))
                }
            },
            Expr::Property(base, key) => CExpr::Prop(c(base, aggs)?, key.clone()),
            Expr::Index(base, index) => CExpr::Index(c(base, aggs)?, c(index, aggs)?),
            Expr::List(items) => CExpr::List(
                items
                    .iter()
                    .map(|x| self.compile(x, replace, aggs))
                    .collect::<Result<_, _>>()?,
            ),
            Expr::Map(entries) => CExpr::Map(
                entries
                    .iter()
                    .map(|(k, x)| Ok((k.clone(), self.compile(x, replace, aggs)?)))
                    .collect::<Result<_, QueryError>>()?,
            ),
            Expr::Unary(UnaryOp::Not, x) => CExpr::Not(c(x, aggs)?),
            Expr::Unary(UnaryOp::Neg, x) => CExpr::Neg(c(x, aggs)?),
            // Unary plus only checks that its operand is a number.
            Expr::Unary(UnaryOp::Plus, x) => CExpr::Bin(
                BinaryOp::Add,
                Box::new(CExpr::Const(Val::Int(0))),
                c(x, aggs)?,
            ),
            Expr::Binary(BinaryOp::And, a, b) => CExpr::And(c(a, aggs)?, c(b, aggs)?),
            Expr::Binary(BinaryOp::Or, a, b) => CExpr::Or(c(a, aggs)?, c(b, aggs)?),
            Expr::Binary(BinaryOp::Xor, a, b) => CExpr::Xor(c(a, aggs)?, c(b, aggs)?),
            Expr::Binary(op, a, b) => CExpr::Bin(*op, c(a, aggs)?, c(b, aggs)?),
            Expr::IsNull { expr, negated } => CExpr::IsNull(c(expr, aggs)?, *negated),
            Expr::HasLabels { expr, labels } => CExpr::HasLabels(c(expr, aggs)?, labels.clone()),
            Expr::CountStar | Expr::Call { .. } if e.is_aggregate_call() => {
                let Some(collector) = aggs.as_mut() else {
                    return Err(QueryError::semantic(format!(
                        "aggregate {e} is not allowed here (only in WITH and RETURN items)"
                    )));
                };
                let (kind, distinct, arg) = match e {
                    Expr::Call {
                        name,
                        distinct,
                        args,
                    } => {
                        if args.len() != 1 {
                            return Err(QueryError::semantic(format!(
                                "{name}() takes exactly one argument"
                            )));
                        }
                        let kind = aggregate_kind(name)
                            .ok_or_else(|| QueryError::UnknownFunction(name.clone()))?;
                        // Aggregates do not nest.
                        (
                            kind,
                            *distinct,
                            Some(self.compile(&args[0], &[], &mut None)?),
                        )
                    }
                    _ => (AggKind::Count, false, None),
                };
                let slot = self.next_slot + collector.specs.len();
                collector.specs.push(AggSpec {
                    slot,
                    kind,
                    distinct,
                    arg,
                });
                CExpr::Slot(slot)
            }
            Expr::CountStar => return Err(QueryError::semantic("count(*) is not allowed here")),
            Expr::Call {
                name,
                distinct,
                args,
            } => {
                if *distinct {
                    return Err(QueryError::semantic(format!(
                        "DISTINCT is only allowed in aggregate calls, not in {name}()"
                    )));
                }
                let f = Func::lookup(name, args.len())?;
                CExpr::Func(
                    f,
                    args.iter()
                        .map(|x| self.compile(x, replace, aggs))
                        .collect::<Result<_, _>>()?,
                )
            }
        })
    }

    // ---- MATCH ----------------------------------------------------------------------------------

    fn plan_match(&mut self, input: Plan, m: &Match) -> Result<Plan, QueryError> {
        if m.optional {
            let arg = self.next_arg;
            self.next_arg += 1;
            let leaf = self.op("", Op::Argument { arg });
            let inner = self.plan_pattern(leaf, &m.patterns, m.where_.as_ref())?;
            let text = m
                .patterns
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ");
            Ok(self.op(
                text,
                Op::Optional {
                    input: Box::new(input),
                    inner: Box::new(inner),
                    arg,
                },
            ))
        } else {
            self.plan_pattern(input, &m.patterns, m.where_.as_ref())
        }
    }

    /// Binds the pattern's variables (adding them to the scope) and plans scans, expansions and
    /// filters over `input`.
    fn plan_pattern(
        &mut self,
        input: Plan,
        patterns: &[PathPattern],
        where_: Option<&Expr>,
    ) -> Result<Plan, QueryError> {
        let bound_before: Vec<usize> = self.scope.iter().map(|(_, s)| *s).collect();
        let mut nodes: Vec<PNode> = Vec::new();
        let mut rels: Vec<PRel> = Vec::new();
        let mut raw_props: Vec<(usize, &str, &Expr)> = Vec::new();
        let mut raw_rel_props: Vec<(usize, &[(String, Expr)])> = Vec::new();
        for path in patterns {
            let mut prev = self.bind_node(&path.start, &mut nodes, &mut raw_props)?;
            let mut prev_np = &path.start;
            for (rel, node) in &path.hops {
                let next = self.bind_node(node, &mut nodes, &mut raw_props)?;
                let slot = match &rel.variable {
                    Some(v) if self.lookup(v).is_some() => {
                        return Err(QueryError::semantic(format!(
                            "relationship variable `{v}` is already bound"
                        )))
                    }
                    Some(v) => {
                        let s = self.new_slot();
                        self.scope.push((v.clone(), s));
                        s
                    }
                    None => self.new_slot(),
                };
                let hops = match rel.length {
                    None => None,
                    Some(VarLength { min, max }) => {
                        let min = min.unwrap_or(1);
                        let Some(max) = max else {
                            return Err(QueryError::HopLimit(format!(
                                "{rel} has no upper bound; write *{min}..N with N at most {}",
                                self.limits.max_hops
                            )));
                        };
                        if max > self.limits.max_hops {
                            return Err(QueryError::HopLimit(format!(
                                "{rel} allows {max} hops; the limit is {}",
                                self.limits.max_hops
                            )));
                        }
                        Some((min, max))
                    }
                };
                raw_rel_props.push((rels.len(), &rel.properties));
                rels.push(PRel {
                    slot,
                    types: rel.types.clone(),
                    direction: rel.direction,
                    hops,
                    props: Vec::new(),
                    left: prev,
                    right: next,
                    text: format!("{}{}{}", bare(prev_np), rel, bare(node)),
                });
                prev = next;
                prev_np = node;
            }
        }
        // Inline properties may refer to any variable of the pattern, so compile them last.
        let mut conjuncts = Vec::new();
        for (slot, key, value) in raw_props {
            let value_c = self.compile(value, &[], &mut None)?;
            let expr = CExpr::Bin(
                BinaryOp::Eq,
                Box::new(CExpr::Prop(Box::new(CExpr::Slot(slot)), key.to_owned())),
                Box::new(value_c),
            );
            let name = self
                .scope
                .iter()
                .rev()
                .find(|(_, s)| *s == slot)
                .map_or("_".to_owned(), |(n, _)| n.clone());
            conjuncts.push(Conjunct {
                slots: expr.slot_list(),
                expr,
                text: format!("{name}.{key} = {value}"),
                applied: false,
            });
        }
        for (i, props) in raw_rel_props {
            rels[i].props = props
                .iter()
                .map(|(k, v)| Ok((k.clone(), self.compile(v, &[], &mut None)?)))
                .collect::<Result<_, QueryError>>()?;
        }
        for n in &nodes {
            if bound_before.contains(&n.slot) && !n.labels.is_empty() {
                let expr = CExpr::HasLabels(Box::new(CExpr::Slot(n.slot)), n.labels.clone());
                conjuncts.push(Conjunct {
                    slots: vec![n.slot],
                    expr,
                    text: format!("has labels {}", n.labels.join(", ")),
                    applied: false,
                });
            }
        }
        if let Some(w) = where_ {
            let mut parts = Vec::new();
            split_and(w, &mut parts);
            for part in parts {
                let expr = self.compile(&part, &[], &mut None)?;
                conjuncts.push(Conjunct {
                    slots: expr.slot_list(),
                    expr,
                    text: part.to_string(),
                    applied: false,
                });
            }
        }

        let mut bound = bound_before;
        let mut plan = self.apply_ready(input, &mut conjuncts, &bound, &[]);
        let mut done_rels = vec![false; rels.len()];
        let mut expanded_rel_slots: Vec<usize> = Vec::new();
        loop {
            // Prefer expanding from what is bound: adjacency lists are cheaper than any scan.
            let next_rel = (0..rels.len()).filter(|&i| !done_rels[i]).find(|&i| {
                bound.contains(&nodes[rels[i].left].slot)
                    || bound.contains(&nodes[rels[i].right].slot)
            });
            if let Some(i) = next_rel {
                done_rels[i] = true;
                let r = &rels[i];
                let (from, to, forward) = if bound.contains(&nodes[r.left].slot) {
                    (r.left, r.right, true)
                } else {
                    (r.right, r.left, false)
                };
                let direction = match (r.direction, forward) {
                    (RelDirection::Both, _) => None,
                    (RelDirection::Right, true) | (RelDirection::Left, false) => {
                        Some(Direction::Outgoing)
                    }
                    _ => Some(Direction::Incoming),
                };
                let into = bound.contains(&nodes[to].slot);
                let to_labels = if into {
                    Vec::new()
                } else {
                    nodes[to].labels.clone()
                };
                let details = r.text.clone();
                let op = Op::Expand {
                    input: Box::new(plan),
                    from: nodes[from].slot,
                    rel: r.slot,
                    to: nodes[to].slot,
                    types: r.types.clone(),
                    direction,
                    to_labels,
                    rel_props: r.props.clone(),
                    into,
                    hops: r.hops,
                    distinct_from: expanded_rel_slots.clone(),
                };
                plan = self.op(
                    if into {
                        format!("{details} (into)")
                    } else {
                        details
                    },
                    op,
                );
                expanded_rel_slots.push(r.slot);
                bound.push(r.slot);
                bound.push(nodes[to].slot);
                if into && !nodes[to].labels.is_empty() {
                    let labels = nodes[to].labels.clone();
                    let expr =
                        CExpr::HasLabels(Box::new(CExpr::Slot(nodes[to].slot)), labels.clone());
                    conjuncts.push(Conjunct {
                        slots: vec![nodes[to].slot],
                        expr,
                        text: format!("has labels {}", labels.join(", ")),
                        applied: false,
                    });
                }
                plan = self.apply_ready(plan, &mut conjuncts, &bound, &[]);
                continue;
            }
            let unbound: Vec<usize> = (0..nodes.len())
                .filter(|&i| !bound.contains(&nodes[i].slot))
                .collect();
            if unbound.is_empty() {
                break;
            }
            let mut best: Option<(usize, ScanChoice)> = None;
            for i in unbound {
                let choice = self.choose_scan(&nodes[i], &conjuncts, &bound)?;
                if best.as_ref().is_none_or(|(_, b)| choice.cost < b.cost) {
                    best = Some((i, choice));
                }
            }
            let Some((
                i,
                ScanChoice {
                    source,
                    check_labels,
                    covered,
                    ..
                },
            )) = best
            else {
                break;
            };
            let slot = nodes[i].slot;
            let details = scan_details(&source, &self.scope, slot);
            plan = self.op(
                details,
                Op::Scan {
                    input: Box::new(plan),
                    slot,
                    source,
                    check_labels,
                },
            );
            bound.push(slot);
            let leaf = match &plan.op {
                Op::Scan { input, .. } => matches!(input.op, Op::Once),
                _ => false,
            };
            plan = self.apply_ready(plan, &mut conjuncts, &bound, &covered);
            if leaf {
                plan = self.fuse_scan_filters(plan);
            }
        }
        Ok(plan)
    }

    /// Filters directly over a leaf label scan that read properties of the scanned node become
    /// one `ScanFilter`: each `n.key` in them reads a slot the scan fills from the record.
    /// Other uses of `n` (labels, id, the node itself) still see the node.
    fn fuse_scan_filters(&mut self, plan: Plan) -> Plan {
        let mut filters = Vec::new();
        let mut cursor = &plan;
        while let Op::Filter { input, predicate } = &cursor.op {
            filters.push((predicate, cursor.details.as_str()));
            cursor = input;
        }
        let Op::Scan {
            input,
            slot,
            source: ScanSource::Label(label),
            check_labels,
        } = &cursor.op
        else {
            return plan;
        };
        if filters.is_empty() || !matches!(input.op, Op::Once) {
            return plan;
        }
        let mut keys: Vec<(String, usize)> = Vec::new();
        let mut next_slot = self.next_slot;
        let mut predicates: Vec<CExpr> = filters
            .iter()
            .rev()
            .map(|(p, _)| {
                replace_props(p, *slot, &mut keys, &mut || {
                    next_slot += 1;
                    next_slot - 1
                })
            })
            .collect();
        if keys.is_empty() {
            return plan;
        }
        self.next_slot = next_slot;
        let details = format!(
            "{} WHERE {}",
            cursor.details,
            filters
                .iter()
                .rev()
                .map(|(_, d)| *d)
                .collect::<Vec<_>>()
                .join(" AND ")
        );
        let (slot, label, check_labels) = (*slot, label.clone(), check_labels.clone());
        let id = cursor.id;
        predicates.shrink_to_fit();
        Plan {
            id,
            details,
            op: Op::ScanFilter {
                input: Box::new(Plan {
                    id: self.next_id(),
                    details: String::new(),
                    op: Op::Once,
                }),
                slot,
                label,
                check_labels,
                key_slots: keys.iter().map(|(_, s)| *s).collect(),
                keys: keys.into_iter().map(|(k, _)| k).collect(),
                predicates,
            },
        }
    }

    /// Adds (or reuses) the node of a pattern and returns its index in `nodes`.
    fn bind_node<'e>(
        &mut self,
        np: &'e NodePattern,
        nodes: &mut Vec<PNode>,
        raw_props: &mut Vec<(usize, &'e str, &'e Expr)>,
    ) -> Result<usize, QueryError> {
        let slot = match &np.variable {
            Some(v) => match self.lookup(v) {
                Some(s) => s,
                None => {
                    let s = self.new_slot();
                    self.scope.push((v.clone(), s));
                    s
                }
            },
            None => self.new_slot(),
        };
        let index = match nodes.iter().position(|n| n.slot == slot) {
            Some(i) => i,
            None => {
                nodes.push(PNode {
                    slot,
                    labels: Vec::new(),
                });
                nodes.len() - 1
            }
        };
        for l in &np.labels {
            if !nodes[index].labels.contains(l) {
                nodes[index].labels.push(l.clone());
            }
        }
        for (k, v) in &np.properties {
            raw_props.push((slot, k, v));
        }
        Ok(index)
    }

    /// Emits a filter for every conjunct whose variables are all bound now.
    fn apply_ready(
        &mut self,
        mut plan: Plan,
        conjuncts: &mut [Conjunct],
        bound: &[usize],
        covered: &[usize],
    ) -> Plan {
        for (i, c) in conjuncts.iter_mut().enumerate() {
            if !c.applied && c.slots.iter().all(|s| bound.contains(s)) {
                c.applied = true;
                if covered.contains(&i) {
                    // The range scan returns exactly the nodes satisfying this comparison
                    // (the `index_range` contract), so re-checking it would only cost a
                    // node load per row.
                    continue;
                }
                let op = Op::Filter {
                    input: Box::new(plan),
                    predicate: c.expr.clone(),
                };
                plan = Plan {
                    id: self.next_op,
                    details: c.text.clone(),
                    op,
                };
                self.next_op += 1;
            }
        }
        plan
    }

    /// Picks how to find candidates for one node: (cost estimate, source, labels still to check,
    /// conjuncts the source answers exactly).
    fn choose_scan(
        &self,
        node: &PNode,
        conjuncts: &[Conjunct],
        bound: &[usize],
    ) -> Result<ScanChoice, QueryError> {
        let s = node.slot;
        let others = |label: &str| {
            node.labels
                .iter()
                .filter(|l| l.as_str() != label)
                .cloned()
                .collect::<Vec<_>>()
        };
        // 1. equality seeks
        for c in conjuncts.iter().filter(|c| !c.applied) {
            let Some((key, value)) = equality_on(&c.expr, s) else {
                continue;
            };
            let mut value_slots = Vec::new();
            value.slots(&mut value_slots);
            if !value_slots.iter().all(|v| bound.contains(v)) {
                continue;
            }
            for label in &node.labels {
                if let Some(kind) = self.g.index_kind(label, key) {
                    let source = ScanSource::Seek {
                        label: label.clone(),
                        key: key.to_owned(),
                        value: value.clone(),
                        kind,
                    };
                    return Ok(ScanChoice {
                        cost: (0, 1),
                        source,
                        check_labels: others(label),
                        covered: Vec::new(),
                    });
                }
            }
        }
        // 2. ordered range scans on constants
        for label in &node.labels {
            let mut lower: Option<(Bound<Val>, usize)> = None;
            let mut upper: Option<(Bound<Val>, usize)> = None;
            for (i, c) in conjuncts.iter().enumerate().filter(|(_, c)| !c.applied) {
                let Some((key, op, v)) = range_on(&c.expr, s) else {
                    continue;
                };
                if self.g.index_kind(label, key) != Some(IndexKind::Ordered) {
                    continue;
                }
                let same_class = |b: &Option<(Bound<Val>, usize)>| match b {
                    Some((Bound::Included(x) | Bound::Excluded(x), _)) => {
                        matches!((x, &v), (Val::DateTime(_), Val::DateTime(_)))
                            || (x.as_f64().is_some() && v.as_f64().is_some())
                    }
                    _ => true,
                };
                if !same_class(&lower) || !same_class(&upper) {
                    continue;
                }
                let key_matches = |b: &Option<(Bound<Val>, usize)>, conj: &[Conjunct]| {
                    b.as_ref().is_none_or(|(_, j)| {
                        range_on(&conj[*j].expr, s).is_some_and(|(k, _, _)| k == key)
                    })
                };
                if !key_matches(&lower, conjuncts) || !key_matches(&upper, conjuncts) {
                    continue;
                }
                match op {
                    BinaryOp::Gt if lower.is_none() => lower = Some((Bound::Excluded(v), i)),
                    BinaryOp::Ge if lower.is_none() => lower = Some((Bound::Included(v), i)),
                    BinaryOp::Lt if upper.is_none() => upper = Some((Bound::Excluded(v), i)),
                    BinaryOp::Le if upper.is_none() => upper = Some((Bound::Included(v), i)),
                    _ => {}
                }
            }
            if lower.is_some() || upper.is_some() {
                let first = lower
                    .as_ref()
                    .or(upper.as_ref())
                    .map(|(_, i)| *i)
                    .unwrap_or_default();
                let key = range_on(&conjuncts[first].expr, s)
                    .map(|(k, _, _)| k.to_owned())
                    .unwrap_or_default();
                let covered: Vec<usize> =
                    lower.iter().chain(upper.iter()).map(|(_, i)| *i).collect();
                let count = self.g.label_count(label)?;
                let source = ScanSource::Range {
                    label: label.clone(),
                    key,
                    lower: lower.map_or(Bound::Unbounded, |(b, _)| b),
                    upper: upper.map_or(Bound::Unbounded, |(b, _)| b),
                    order: Order::Ascending,
                    limit: None,
                };
                return Ok(ScanChoice {
                    cost: (1, count),
                    source,
                    check_labels: others(label),
                    covered,
                });
            }
        }
        // 3. the smallest label bitmap, or every node
        let mut best: Option<(u64, &String)> = None;
        for label in &node.labels {
            let count = self.g.label_count(label)?;
            if best.is_none_or(|(c, _)| count < c) {
                best = Some((count, label));
            }
        }
        Ok(match best {
            Some((count, label)) => ScanChoice {
                cost: (2, count),
                source: ScanSource::Label(label.clone()),
                check_labels: others(label),
                covered: Vec::new(),
            },
            None => ScanChoice {
                cost: (3, self.g.node_count()?),
                source: ScanSource::AllNodes,
                check_labels: Vec::new(),
                covered: Vec::new(),
            },
        })
    }

    // ---- WITH / RETURN --------------------------------------------------------------------------

    /// Plans a projection; returns the plan and the new scope (column names -> slots).
    fn plan_projection(
        &mut self,
        input: Plan,
        p: &Projection,
        is_with: bool,
    ) -> Result<(Plan, Vec<(String, usize)>), QueryError> {
        let mut items: Vec<(String, Expr)> = Vec::new();
        if p.star {
            let mut names: Vec<&String> = self.scope.iter().map(|(n, _)| n).collect();
            names.sort();
            names.dedup();
            if names.is_empty() {
                return Err(QueryError::semantic(
                    "RETURN * / WITH * with no variables in scope",
                ));
            }
            items.extend(
                names
                    .into_iter()
                    .map(|n| (n.clone(), Expr::Variable(n.clone()))),
            );
        }
        for item in &p.items {
            let name = match (&item.alias, &item.expr) {
                (Some(a), _) => a.clone(),
                (None, Expr::Variable(v)) => v.clone(),
                (None, e) if is_with => {
                    return Err(QueryError::semantic(format!(
                        "expression {e} in WITH must be aliased (use AS)"
                    )))
                }
                (None, e) => e.to_string(),
            };
            if items.iter().any(|(n, _)| *n == name) {
                return Err(QueryError::semantic(format!(
                    "column `{name}` is defined more than once"
                )));
            }
            items.push((name, item.expr.clone()));
        }
        let aggregating = items.iter().any(|(_, e)| e.contains_aggregate());
        let mut plan = input;
        let mut new_scope: Vec<(String, usize)> = Vec::new();
        let order_scope: Vec<(String, usize)>;
        let replace_exprs: Vec<(Expr, usize)>;

        if aggregating {
            if let Some(count_plan) = self.try_count_label(&mut plan, &items)? {
                new_scope.push((items[0].0.clone(), count_plan));
            } else {
                let mut keys = Vec::new();
                let mut key_exprs: Vec<(Expr, usize)> = Vec::new();
                for (name, e) in items.iter().filter(|(_, e)| !e.contains_aggregate()) {
                    let c = self.compile(e, &[], &mut None)?;
                    let slot = self.new_slot();
                    keys.push((slot, c));
                    key_exprs.push((e.clone(), slot));
                    new_scope.push((name.clone(), slot));
                }
                let mut collector = Some(AggCollector { specs: Vec::new() });
                let mut outer = Vec::new();
                for (name, e) in items.iter().filter(|(_, e)| e.contains_aggregate()) {
                    let replace: Vec<(&Expr, usize)> =
                        key_exprs.iter().map(|(x, s)| (x, *s)).collect();
                    let c = self.compile(e, &replace, &mut collector)?;
                    outer.push((name.clone(), c));
                }
                let mut specs = collector.map(|c| c.specs).unwrap_or_default();
                // compile() numbered the aggregate slots from next_slot; reserve them now.
                self.next_slot += specs.len();
                self.try_degree_aggregate(&mut plan, &keys, &mut specs);
                let details = items
                    .iter()
                    .map(|(n, _)| n.as_str())
                    .collect::<Vec<_>>()
                    .join(", ");
                plan = self.op(
                    details,
                    Op::Aggregate {
                        input: Box::new(plan),
                        keys,
                        aggs: specs,
                    },
                );
                let mut projected = Vec::new();
                for (name, c) in outer {
                    let slot = self.new_slot();
                    projected.push((slot, c));
                    new_scope.push((name, slot));
                }
                if !projected.is_empty() {
                    plan = self.op(
                        "",
                        Op::Project {
                            input: Box::new(plan),
                            items: projected,
                        },
                    );
                }
            }
            // Keep the original item order for the columns.
            new_scope.sort_by_key(|(n, _)| items.iter().position(|(m, _)| m == n));
            order_scope = new_scope.clone();
            replace_exprs = items
                .iter()
                .zip(&new_scope)
                .map(|((_, e), (_, s))| (e.clone(), *s))
                .collect();
        } else {
            let mut projected = Vec::new();
            for (name, e) in &items {
                let c = self.compile(e, &[], &mut None)?;
                let slot = self.new_slot();
                projected.push((slot, c));
                new_scope.push((name.clone(), slot));
            }
            let details = items
                .iter()
                .map(|(n, _)| n.as_str())
                .collect::<Vec<_>>()
                .join(", ");
            plan = self.op(
                details,
                Op::Project {
                    input: Box::new(plan),
                    items: projected,
                },
            );
            replace_exprs = items
                .iter()
                .zip(&new_scope)
                .map(|((_, e), (_, s))| (e.clone(), *s))
                .collect();
            order_scope = if p.distinct {
                new_scope.clone()
            } else {
                // ORDER BY may use both the projected names and the variables before them.
                self.scope
                    .iter()
                    .cloned()
                    .chain(new_scope.iter().cloned())
                    .collect()
            };
        }
        if p.distinct {
            let slots = new_scope.iter().map(|(_, s)| *s).collect();
            plan = self.op(
                "",
                Op::Distinct {
                    input: Box::new(plan),
                    slots,
                },
            );
        }
        let saved = std::mem::replace(&mut self.scope, order_scope);
        let result = self.plan_order_skip_limit(plan, p, &replace_exprs);
        self.scope = saved;
        Ok((result?, new_scope))
    }

    fn plan_order_skip_limit(
        &mut self,
        mut plan: Plan,
        p: &Projection,
        replace: &[(Expr, usize)],
    ) -> Result<Plan, QueryError> {
        let replace: Vec<(&Expr, usize)> = replace.iter().map(|(e, s)| (e, *s)).collect();
        let mut keys = Vec::new();
        for s in &p.order_by {
            keys.push((self.compile(&s.expr, &replace, &mut None)?, s.descending));
        }
        let constant = |planner: &Self, e: &Expr, what: &str| -> Result<CExpr, QueryError> {
            let saved_empty: [(&Expr, usize); 0] = [];
            let mut vars = Vec::new();
            e.walk(&mut |x| {
                if let Expr::Variable(v) = x {
                    vars.push(v.clone());
                }
            });
            if let Some(v) = vars.first() {
                return Err(QueryError::semantic(format!(
                    "{what} must be a constant or a parameter, not a variable ({v})"
                )));
            }
            planner.compile(e, &saved_empty, &mut None)
        };
        let skip = p
            .skip
            .as_ref()
            .map(|e| constant(self, e, "SKIP"))
            .transpose()?;
        let limit = p
            .limit
            .as_ref()
            .map(|e| constant(self, e, "LIMIT"))
            .transpose()?;
        let order_text = p
            .order_by
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        match (keys.is_empty(), limit) {
            (false, Some(limit)) => {
                self.push_topk_into_index(&mut plan, &p.order_by, skip.as_ref(), &limit);
                let details = format!(
                    "{order_text} LIMIT {}",
                    p.limit
                        .as_ref()
                        .map(ToString::to_string)
                        .unwrap_or_default()
                );
                plan = self.op(
                    details,
                    Op::TopK {
                        input: Box::new(plan),
                        keys,
                        skip: skip.clone(),
                        limit: limit.clone(),
                    },
                );
                if let Some(count) = skip {
                    plan = self.op(
                        "",
                        Op::Skip {
                            input: Box::new(plan),
                            count,
                        },
                    );
                }
                plan = self.op(
                    "",
                    Op::Limit {
                        input: Box::new(plan),
                        count: limit,
                    },
                );
            }
            (sorted, limit) => {
                if !sorted {
                    plan = self.op(
                        order_text,
                        Op::Sort {
                            input: Box::new(plan),
                            keys,
                        },
                    );
                }
                if let Some(count) = skip {
                    plan = self.op(
                        p.skip.as_ref().map(ToString::to_string).unwrap_or_default(),
                        Op::Skip {
                            input: Box::new(plan),
                            count,
                        },
                    );
                }
                if let Some(count) = limit {
                    plan = self.op(
                        p.limit
                            .as_ref()
                            .map(ToString::to_string)
                            .unwrap_or_default(),
                        Op::Limit {
                            input: Box::new(plan),
                            count,
                        },
                    );
                }
            }
        }
        Ok(plan)
    }

    /// When every node of `label` has a number (or every one a datetime) in the ordered index
    /// on (label, key), the bounds of a range holding all of them: the index is then the whole
    /// label in `ORDER BY` order (no nulls and no other types to sort before or after them).
    fn whole_label_range(&self, label: &str, key: &str) -> Option<(Val, Val)> {
        if self.g.index_kind(label, key) != Some(IndexKind::Ordered) {
            return None;
        }
        let stats = self.g.index_stats(label, key).ok()??;
        let nodes = self.g.label_count(label).ok()?;
        if nodes == 0 {
            return None;
        }
        if stats.numbers == nodes {
            Some((Val::Float(f64::NEG_INFINITY), Val::Float(f64::INFINITY)))
        } else if stats.datetimes == nodes {
            Some((Val::DateTime(i64::MIN), Val::DateTime(i64::MAX)))
        } else {
            None
        }
    }

    /// `ORDER BY n.p LIMIT k` directly over an index range scan of `n.p` (with no other filter,
    /// label check or operator between) reads only the first k (+ skip) index entries.
    fn push_topk_into_index(
        &self,
        plan: &mut Plan,
        order_by: &[SortItem],
        skip: Option<&CExpr>,
        limit: &CExpr,
    ) {
        let [sort] = order_by else { return };
        let Expr::Property(base, sort_key) = &sort.expr else {
            return;
        };
        let Expr::Variable(var) = base.as_ref() else {
            return;
        };
        let Some(var_slot) = self.lookup(var) else {
            return;
        };
        // Walk down through the projection and covered filters to the scan.
        let Some(cursor) = scan_below(plan) else {
            return;
        };
        let Op::Scan {
            input,
            slot,
            source,
            check_labels,
        } = &mut cursor.op
        else {
            return;
        };
        if *slot != var_slot || !check_labels.is_empty() || !matches!(input.op, Op::Once) {
            return;
        }
        if let ScanSource::Label(label) = source {
            let label = label.clone();
            if let Some((lower, upper)) = self.whole_label_range(&label, sort_key) {
                *source = ScanSource::Range {
                    label: label.clone(),
                    key: sort_key.clone(),
                    lower: Bound::Included(lower),
                    upper: Bound::Included(upper),
                    order: Order::Ascending,
                    limit: None,
                };
                cursor.details = format!("({var}:{label}) {var}.{sort_key}, whole label");
            }
        }
        if let ScanSource::Range {
            key,
            order,
            limit: index_limit,
            ..
        } = source
        {
            if key == sort_key {
                *order = if sort.descending {
                    Order::Descending
                } else {
                    Order::Ascending
                };
                *index_limit = Some(match skip {
                    Some(s) => {
                        CExpr::Bin(BinaryOp::Add, Box::new(s.clone()), Box::new(limit.clone()))
                    }
                    None => limit.clone(),
                });
                cursor.details.push_str(if sort.descending {
                    ", descending, top-k"
                } else {
                    ", ascending, top-k"
                });
            }
        }
    }

    /// An aggregation directly over a single-hop expansion, whose grouping keys do not read the
    /// hop's relationship or far node and whose aggregates all count the hop's rows
    /// (`count(*)`, `count(t)`, `count(r)`, without DISTINCT), needs only the number of rows
    /// each input row expands to: the expansion becomes `ExpandCount` and each count a sum of
    /// those numbers (a sum of no rows is 0, as a count of no rows is).
    fn try_degree_aggregate(
        &mut self,
        plan: &mut Plan,
        keys: &[(usize, CExpr)],
        specs: &mut [AggSpec],
    ) {
        let Op::Expand {
            from,
            rel,
            to,
            types,
            direction: Some(direction),
            to_labels,
            rel_props,
            into: false,
            hops: None,
            distinct_from,
            ..
        } = &plan.op
        else {
            return;
        };
        if !rel_props.is_empty() || !distinct_from.is_empty() || to_labels.len() > 1 {
            return;
        }
        let hop_slots = [*rel, *to];
        if keys
            .iter()
            .any(|(_, e)| e.slot_list().iter().any(|s| hop_slots.contains(s)))
        {
            return;
        }
        let counts_rows = |a: &AggSpec| {
            a.kind == AggKind::Count
                && !a.distinct
                && match &a.arg {
                    None => true,
                    Some(CExpr::Slot(s)) => hop_slots.contains(s),
                    Some(_) => false,
                }
        };
        if specs.is_empty() || !specs.iter().all(counts_rows) {
            return;
        }
        let (from, direction, to_label) = (*from, *direction, to_labels.first().cloned());
        // `[:A|A]` walks each relationship once: count each type once.
        let mut types = types.clone();
        types.sort();
        types.dedup();
        let slot = self.new_slot();
        for a in specs.iter_mut() {
            a.kind = AggKind::Sum;
            a.arg = Some(CExpr::Slot(slot));
        }
        let placeholder = Plan {
            id: plan.id,
            details: String::new(),
            op: Op::Once,
        };
        let expand = std::mem::replace(plan, placeholder);
        let Op::Expand { input, .. } = expand.op else {
            return;
        };
        *plan = Plan {
            id: expand.id,
            details: format!("{} (count)", expand.details),
            op: Op::ExpandCount {
                input,
                from,
                types,
                direction,
                to_label,
                slot,
            },
        };
    }

    /// `MATCH (n:L) RETURN count(n)` (or `count(*)`), with nothing else in the query so far,
    /// is answered from the label bitmap's cardinality.
    fn try_count_label(
        &mut self,
        plan: &mut Plan,
        items: &[(String, Expr)],
    ) -> Result<Option<usize>, QueryError> {
        let [(_, e)] = items else { return Ok(None) };
        let Op::Scan {
            input,
            slot,
            source,
            check_labels,
        } = &plan.op
        else {
            return Ok(None);
        };
        if !matches!(input.op, Op::Once) || !check_labels.is_empty() {
            return Ok(None);
        }
        let counts_node = match e {
            Expr::CountStar => true,
            Expr::Call { name, args, .. } if name.eq_ignore_ascii_case("count") => {
                matches!(args.as_slice(), [Expr::Variable(v)] if self.lookup(v) == Some(*slot))
            }
            _ => false,
        };
        let label = match source {
            ScanSource::Label(l) => Some(l.clone()),
            ScanSource::AllNodes => None,
            _ => return Ok(None),
        };
        if !counts_node {
            return Ok(None);
        }
        let out = self.new_slot();
        let details = label
            .clone()
            .map_or("all nodes".to_owned(), |l| format!(":{l}"));
        *plan = self.op(details, Op::CountLabel { slot: out, label });
        Ok(Some(out))
    }

    // ---- writes ---------------------------------------------------------------------------------

    fn plan_write(&mut self, clause: &Clause) -> Result<(String, WriteOp), QueryError> {
        let details = clause.to_string();
        let op = match clause {
            Clause::Create(patterns) => {
                let mut create = CreatePattern::default();
                for path in patterns {
                    self.plan_create_path(path, &mut create)?;
                }
                WriteOp::Create(create)
            }
            Clause::Merge(m) => {
                let bound_before: Vec<usize> = self.scope.iter().map(|(_, s)| *s).collect();
                let arg = self.next_arg;
                self.next_arg += 1;
                let leaf = self.op("", Op::Argument { arg });
                // Plan the match first (it binds the variables), then the create branch reusing
                // the same slots.
                let scope_before = self.scope.clone();
                let matcher = self.plan_pattern(leaf, std::slice::from_ref(&m.pattern), None)?;
                let scope_after = std::mem::replace(&mut self.scope, scope_before);
                let mut create = CreatePattern::default();
                self.plan_create_path(&m.pattern, &mut create)?;
                // Use the matcher's slots for the variables so both branches fill the same row.
                remap_create_slots(&mut create, &self.scope, &scope_after, &bound_before);
                self.scope = scope_after;
                let mut on_create = Vec::new();
                let mut on_match = Vec::new();
                for a in &m.actions {
                    let ops = a
                        .items
                        .iter()
                        .map(|i| self.plan_set_item(i))
                        .collect::<Result<Vec<_>, _>>()?;
                    if a.on_create {
                        on_create.extend(ops);
                    } else {
                        on_match.extend(ops);
                    }
                }
                WriteOp::Merge {
                    matcher: Box::new(matcher),
                    arg,
                    create,
                    on_create,
                    on_match,
                }
            }
            Clause::Set(items) => WriteOp::Set(
                items
                    .iter()
                    .map(|i| self.plan_set_item(i))
                    .collect::<Result<_, _>>()?,
            ),
            Clause::Remove(items) => WriteOp::Remove(
                items
                    .iter()
                    .map(|i| match i {
                        RemoveItem::Property { variable, key } => Ok(RemoveOp::Prop {
                            slot: self.var_slot(variable)?,
                            key: key.clone(),
                        }),
                        RemoveItem::Labels { variable, labels } => Ok(RemoveOp::Labels {
                            slot: self.var_slot(variable)?,
                            labels: labels.clone(),
                        }),
                    })
                    .collect::<Result<_, QueryError>>()?,
            ),
            Clause::Delete(d) => WriteOp::Delete {
                detach: d.detach,
                exprs: d
                    .exprs
                    .iter()
                    .map(|e| self.compile(e, &[], &mut None))
                    .collect::<Result<_, _>>()?,
            },
            _ => return Err(QueryError::semantic("not a write clause")),
        };
        Ok((details, op))
    }

    fn var_slot(&self, v: &str) -> Result<usize, QueryError> {
        self.lookup(v)
            .ok_or_else(|| QueryError::semantic(format!("variable `{v}` is not defined")))
    }

    fn plan_set_item(&self, item: &SetItem) -> Result<SetOp, QueryError> {
        let c = |e: &Expr| self.compile(e, &[], &mut None);
        Ok(match item {
            SetItem::Property {
                variable,
                key,
                value,
            } => SetOp::Prop {
                slot: self.var_slot(variable)?,
                key: key.clone(),
                value: c(value)?,
            },
            SetItem::Replace { variable, value } => SetOp::Replace {
                slot: self.var_slot(variable)?,
                value: c(value)?,
            },
            SetItem::Merge { variable, value } => SetOp::Merge {
                slot: self.var_slot(variable)?,
                value: c(value)?,
            },
            SetItem::Labels { variable, labels } => SetOp::Labels {
                slot: self.var_slot(variable)?,
                labels: labels.clone(),
            },
        })
    }

    fn plan_create_path(
        &mut self,
        path: &PathPattern,
        create: &mut CreatePattern,
    ) -> Result<(), QueryError> {
        let mut prev = self.plan_create_node(&path.start, create)?;
        for (rel, node) in &path.hops {
            let next = self.plan_create_node(node, create)?;
            let [rel_type] = rel.types.as_slice() else {
                return Err(QueryError::semantic(format!(
                    "a relationship to create needs exactly one type: {rel}"
                )));
            };
            if rel.length.is_some() {
                return Err(QueryError::semantic(format!(
                    "cannot create a variable-length relationship: {rel}"
                )));
            }
            let (start, end) = match rel.direction {
                RelDirection::Right => (prev, next),
                RelDirection::Left => (next, prev),
                RelDirection::Both => {
                    return Err(QueryError::semantic(format!(
                        "a relationship to create needs a direction: {rel}"
                    )))
                }
            };
            let slot = match &rel.variable {
                Some(v) if self.lookup(v).is_some() => {
                    return Err(QueryError::semantic(format!(
                        "relationship variable `{v}` is already bound"
                    )))
                }
                Some(v) => {
                    let s = self.new_slot();
                    self.scope.push((v.clone(), s));
                    s
                }
                None => self.new_slot(),
            };
            let props = rel
                .properties
                .iter()
                .map(|(k, v)| Ok((k.clone(), self.compile(v, &[], &mut None)?)))
                .collect::<Result<_, QueryError>>()?;
            create.rels.push(CreateRel {
                slot,
                start,
                end,
                rel_type: rel_type.clone(),
                props,
            });
            prev = next;
        }
        Ok(())
    }

    /// Returns the slot of the node (new or already bound).
    fn plan_create_node(
        &mut self,
        np: &NodePattern,
        create: &mut CreatePattern,
    ) -> Result<usize, QueryError> {
        if let Some(v) = &np.variable {
            if let Some(slot) = self.lookup(v) {
                if !np.labels.is_empty() || !np.properties.is_empty() {
                    if create.nodes.iter().any(|n| n.slot == slot && !n.bound) {
                        return Ok(slot);
                    }
                    return Err(QueryError::semantic(format!("variable `{v}` is already bound; it cannot be given labels or properties here")));
                }
                if !create.nodes.iter().any(|n| n.slot == slot) {
                    create.nodes.push(CreateNode {
                        slot,
                        bound: true,
                        labels: Vec::new(),
                        props: Vec::new(),
                    });
                }
                return Ok(slot);
            }
        }
        let props = np
            .properties
            .iter()
            .map(|(k, v)| Ok((k.clone(), self.compile(v, &[], &mut None)?)))
            .collect::<Result<_, QueryError>>()?;
        let slot = self.new_slot();
        if let Some(v) = &np.variable {
            self.scope.push((v.clone(), slot));
        }
        create.nodes.push(CreateNode {
            slot,
            bound: false,
            labels: np.labels.clone(),
            props,
        });
        Ok(slot)
    }
}

/// After planning MERGE's create branch in a scratch scope, point its named variables at the
/// slots the matcher bound, so either branch leaves the same row layout.
fn remap_create_slots(
    create: &mut CreatePattern,
    create_scope: &[(String, usize)],
    match_scope: &[(String, usize)],
    bound_before: &[usize],
) {
    let map = |slot: usize| -> usize {
        if bound_before.contains(&slot) {
            return slot;
        }
        create_scope
            .iter()
            .rev()
            .find(|(_, s)| *s == slot)
            .and_then(|(name, _)| {
                match_scope
                    .iter()
                    .rev()
                    .find(|(n, _)| n == name)
                    .map(|(_, s)| *s)
            })
            .unwrap_or(slot)
    };
    for n in &mut create.nodes {
        n.slot = map(n.slot);
    }
    for r in &mut create.rels {
        r.slot = map(r.slot);
        r.start = map(r.start);
        r.end = map(r.end);
    }
}

/// The scan directly under the projection, if that is all there is (no filter may drop
/// rows between the index and the limit).
fn scan_below(plan: &mut Plan) -> Option<&mut Plan> {
    match &mut plan.op {
        Op::Project { input, .. } if matches!(input.op, Op::Scan { .. }) => Some(input),
        _ => None,
    }
}

/// `e` with every `n.key` of the node in `slot` replaced by a slot of its own (one per key,
/// allocated by `alloc` and listed in `keys`).
fn replace_props(
    e: &CExpr,
    slot: usize,
    keys: &mut Vec<(String, usize)>,
    alloc: &mut dyn FnMut() -> usize,
) -> CExpr {
    let mut r = |x: &CExpr| Box::new(replace_props(x, slot, keys, alloc));
    match e {
        CExpr::Prop(base, key) if matches!(base.as_ref(), CExpr::Slot(s) if *s == slot) => {
            let s = match keys.iter().find(|(k, _)| k == key) {
                Some((_, s)) => *s,
                None => {
                    let s = alloc();
                    keys.push((key.clone(), s));
                    s
                }
            };
            CExpr::Slot(s)
        }
        CExpr::Const(_) | CExpr::Slot(_) => e.clone(),
        CExpr::Prop(base, key) => CExpr::Prop(r(base), key.clone()),
        CExpr::Index(a, b) => {
            let a = r(a);
            CExpr::Index(a, r(b))
        }
        CExpr::List(items) => CExpr::List(
            items
                .iter()
                .map(|x| replace_props(x, slot, keys, alloc))
                .collect(),
        ),
        CExpr::Map(entries) => CExpr::Map(
            entries
                .iter()
                .map(|(k, x)| (k.clone(), replace_props(x, slot, keys, alloc)))
                .collect(),
        ),
        CExpr::Not(x) => CExpr::Not(r(x)),
        CExpr::Neg(x) => CExpr::Neg(r(x)),
        CExpr::And(a, b) => {
            let a = r(a);
            CExpr::And(a, r(b))
        }
        CExpr::Or(a, b) => {
            let a = r(a);
            CExpr::Or(a, r(b))
        }
        CExpr::Xor(a, b) => {
            let a = r(a);
            CExpr::Xor(a, r(b))
        }
        CExpr::Bin(op, a, b) => {
            let a = r(a);
            CExpr::Bin(*op, a, r(b))
        }
        CExpr::IsNull(x, negated) => CExpr::IsNull(r(x), *negated),
        CExpr::Func(f, args) => CExpr::Func(
            *f,
            args.iter()
                .map(|x| replace_props(x, slot, keys, alloc))
                .collect(),
        ),
        CExpr::HasLabels(x, labels) => CExpr::HasLabels(r(x), labels.clone()),
    }
}

/// A node pattern without its property map, for plan details.
fn bare(n: &NodePattern) -> NodePattern {
    NodePattern {
        variable: n.variable.clone(),
        labels: n.labels.clone(),
        properties: Vec::new(),
    }
}

fn scan_details(source: &ScanSource, scope: &[(String, usize)], slot: usize) -> String {
    let var = scope
        .iter()
        .rev()
        .find(|(_, s)| *s == slot)
        .map_or("_", |(n, _)| n.as_str());
    match source {
        ScanSource::AllNodes => format!("({var})"),
        ScanSource::Label(l) => format!("({var}:{l})"),
        ScanSource::Seek { label, key, .. } => format!("({var}:{label}) {var}.{key} = ?"),
        ScanSource::Range {
            label,
            key,
            lower,
            upper,
            ..
        } => {
            let show = |b: &Bound<Val>, lo: bool| match b {
                Bound::Included(v) => format!("{}{}", if lo { ">= " } else { "<= " }, short(v)),
                Bound::Excluded(v) => format!("{}{}", if lo { "> " } else { "< " }, short(v)),
                Bound::Unbounded => String::new(),
            };
            format!(
                "({var}:{label}) {var}.{key} {} {}",
                show(lower, true),
                show(upper, false)
            )
            .trim_end()
            .to_owned()
        }
    }
}

fn short(v: &Val) -> String {
    match v {
        Val::Int(i) => i.to_string(),
        Val::Float(f) => format!("{f:?}"),
        Val::DateTime(t) => crate::result::format_datetime(*t),
        other => other.type_name().to_owned(),
    }
}

/// `n.key = value` (either way round) where n is in `slot`.
fn equality_on(e: &CExpr, slot: usize) -> Option<(&str, &CExpr)> {
    let CExpr::Bin(BinaryOp::Eq, a, b) = e else {
        return None;
    };
    for (p, v) in [(a, b), (b, a)] {
        if let CExpr::Prop(base, key) = p.as_ref() {
            if matches!(base.as_ref(), CExpr::Slot(s) if *s == slot)
                && !v.slot_list().contains(&slot)
            {
                return Some((key, v));
            }
        }
    }
    None
}

/// `n.key < constant` and friends (either way round), normalised so n is on the left.
fn range_on(e: &CExpr, slot: usize) -> Option<(&str, BinaryOp, Val)> {
    let CExpr::Bin(op, a, b) = e else { return None };
    let flipped = match op {
        BinaryOp::Lt => BinaryOp::Gt,
        BinaryOp::Le => BinaryOp::Ge,
        BinaryOp::Gt => BinaryOp::Lt,
        BinaryOp::Ge => BinaryOp::Le,
        _ => return None,
    };
    for (p, v, op) in [(a, b, *op), (b, a, flipped)] {
        if let (CExpr::Prop(base, key), CExpr::Const(c)) = (p.as_ref(), v.as_ref()) {
            let rangeable = matches!(c, Val::Int(_) | Val::DateTime(_))
                || matches!(c, Val::Float(f) if !f.is_nan());
            if matches!(base.as_ref(), CExpr::Slot(s) if *s == slot) && rangeable {
                return Some((key, op, c.clone()));
            }
        }
    }
    None
}

// ---- rendering ----------------------------------------------------------------------------------

/// Renders the plan of a statement as a tree (last stage at the root).
pub(crate) fn render(planned: &Planned, profile: Option<&[(u64, u64)]>) -> PlanTree {
    render_stage(planned, planned.stages.len().saturating_sub(1), profile)
}

fn figures(id: usize, profile: Option<&[(u64, u64)]>) -> (Option<u64>, Option<u64>) {
    match profile.and_then(|p| p.get(id)) {
        Some((rows, nanos)) => (Some(*rows), Some(nanos / 1000)),
        None => (None, None),
    }
}

fn render_stage(planned: &Planned, index: usize, profile: Option<&[(u64, u64)]>) -> PlanTree {
    let previous = |i: usize| {
        if i == 0 {
            Vec::new()
        } else {
            vec![render_stage(planned, i - 1, profile)]
        }
    };
    match &planned.stages[index] {
        Stage::Read(p) => {
            let mut tree = render_plan(p, profile, &mut || previous(index));
            if index == planned.stages.len() - 1 {
                let (rows, time_us) = (tree.rows, None);
                tree = PlanTree {
                    operator: "ProduceResults".into(),
                    details: planned.columns.join(", "),
                    rows,
                    time_us,
                    children: vec![tree],
                };
            }
            tree
        }
        Stage::Write { id, details, op } => {
            let name = match op {
                WriteOp::Create(_) => "Create",
                WriteOp::Merge { .. } => "Merge",
                WriteOp::Set(_) => "SetProperties",
                WriteOp::Remove(_) => "Remove",
                WriteOp::Delete { detach: true, .. } => "DetachDelete",
                WriteOp::Delete { .. } => "Delete",
            };
            let (rows, time_us) = figures(*id, profile);
            let mut children = previous(index);
            if let WriteOp::Merge { matcher, .. } = op {
                children.push(render_plan(matcher, profile, &mut Vec::new));
            }
            PlanTree {
                operator: name.into(),
                details: details.clone(),
                rows,
                time_us,
                children,
            }
        }
    }
}

fn render_plan(
    p: &Plan,
    profile: Option<&[(u64, u64)]>,
    stage_input: &mut dyn FnMut() -> Vec<PlanTree>,
) -> PlanTree {
    let (name, children): (&str, Vec<PlanTree>) = match &p.op {
        Op::Once => ("Start", Vec::new()),
        Op::Argument { .. } => ("Argument", Vec::new()),
        Op::StageInput => ("Eager", stage_input()),
        Op::Scan { input, source, .. } => (
            match source {
                ScanSource::AllNodes => "AllNodesScan",
                ScanSource::Label(_) => "NodeByLabelScan",
                ScanSource::Seek { .. } => "NodeIndexSeek",
                ScanSource::Range { .. } => "NodeIndexRangeScan",
            },
            vec![render_plan(input, profile, stage_input)],
        ),
        Op::Expand {
            input, hops, into, ..
        } => (
            match (hops.is_some(), *into) {
                (true, _) => "VarLengthExpand",
                (false, true) => "ExpandInto",
                (false, false) => "Expand",
            },
            vec![render_plan(input, profile, stage_input)],
        ),
        Op::Filter { input, .. } => ("Filter", vec![render_plan(input, profile, stage_input)]),
        Op::Project { input, .. } => ("Projection", vec![render_plan(input, profile, stage_input)]),
        Op::Aggregate { input, .. } => (
            "Aggregation",
            vec![render_plan(input, profile, stage_input)],
        ),
        Op::Distinct { input, .. } => ("Distinct", vec![render_plan(input, profile, stage_input)]),
        Op::Sort { input, .. } => ("Sort", vec![render_plan(input, profile, stage_input)]),
        Op::TopK { input, .. } => ("Top", vec![render_plan(input, profile, stage_input)]),
        Op::Skip { input, .. } => ("Skip", vec![render_plan(input, profile, stage_input)]),
        Op::Limit { input, .. } => ("Limit", vec![render_plan(input, profile, stage_input)]),
        Op::Unwind { input, .. } => ("Unwind", vec![render_plan(input, profile, stage_input)]),
        Op::Optional { input, inner, .. } => (
            "OptionalMatch",
            vec![
                render_plan(input, profile, stage_input),
                render_plan(inner, profile, &mut Vec::new),
            ],
        ),
        Op::ScanFilter { input, .. } => (
            "NodeByLabelScan",
            vec![render_plan(input, profile, stage_input)],
        ),
        Op::ExpandCount { input, .. } => (
            "ExpandCount",
            vec![render_plan(input, profile, stage_input)],
        ),
        Op::CountLabel { .. } => ("NodeCountFromCountStore", Vec::new()),
    };
    let (rows, time_us) = figures(p.id, profile);
    PlanTree {
        operator: name.to_owned(),
        details: p.details.clone(),
        rows,
        time_us,
        children,
    }
}
