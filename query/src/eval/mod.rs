//! Compiled expressions and their evaluation against a row and the graph.

use std::collections::BTreeMap;

use svc_engine::{EdgeId, NodeId};

use crate::ast::{BinaryOp, Quantifier};
use crate::error::QueryError;
use crate::functions::{call_pure, Func};
use crate::value::{compare, equals, Val};

mod context;
mod operators;

pub(crate) use context::Cx;
pub(crate) use operators::*;

/// A row: one value per slot the planner allocated.
pub(crate) type Row = Vec<Val>;

/// An expression with variables resolved to row slots and parameters to constants.
#[derive(Clone, Debug)]
pub(crate) enum CExpr {
    Const(Val),
    Slot(usize),
    Prop(Box<CExpr>, String),
    Index(Box<CExpr>, Box<CExpr>),
    List(Vec<CExpr>),
    Map(Vec<(String, CExpr)>),
    Not(Box<CExpr>),
    Neg(Box<CExpr>),
    And(Box<CExpr>, Box<CExpr>),
    Or(Box<CExpr>, Box<CExpr>),
    Xor(Box<CExpr>, Box<CExpr>),
    Bin(BinaryOp, Box<CExpr>, Box<CExpr>),
    IsNull(Box<CExpr>, bool),
    Func(Func, Vec<CExpr>),
    /// Whether the node in the slot carries every label (used for pattern labels on bound nodes).
    HasLabels(Box<CExpr>, Vec<String>),
    /// A variable bound inside the expression (a comprehension's, a list predicate's, ...),
    /// by its nesting level: `Cx::locals[level]`.
    Local(usize),
    /// `list[from..to]`
    Slice(Box<CExpr>, Option<Box<CExpr>>, Option<Box<CExpr>>),
    /// `[x IN list WHERE predicate | projection]`, `x` at local level `level`.
    Comprehension {
        level: usize,
        list: Box<CExpr>,
        predicate: Option<Box<CExpr>>,
        projection: Option<Box<CExpr>>,
    },
    Quantified {
        quantifier: Quantifier,
        level: usize,
        list: Box<CExpr>,
        predicate: Box<CExpr>,
    },
    /// `reduce(acc = init, x IN list | expr)`: `acc` at `level`, `x` at `level + 1`.
    Reduce {
        level: usize,
        init: Box<CExpr>,
        list: Box<CExpr>,
        expr: Box<CExpr>,
    },
    Case {
        operand: Option<Box<CExpr>>,
        whens: Vec<(CExpr, CExpr)>,
        else_: Option<Box<CExpr>>,
    },
    /// A named path from its elements, in pattern order.
    Path(Vec<(PathPart, CExpr)>),
    /// A pattern expression or pattern comprehension: a plan run per row.
    SubQuery(std::sync::Arc<SubQuery>),
}

/// A pattern run for each row: its plan starts from an `Argument` leaf holding the row.
#[derive(Debug)]
pub(crate) struct SubQuery {
    pub plan: crate::plan::Plan,
    pub arg: usize,
    /// Row width the plan needs.
    pub width: usize,
    /// Outer slots the pattern reads (its bound variables).
    pub reads: Vec<usize>,
    /// Local variables (comprehensions) copied into slots of the plan's rows: (level, slot).
    pub locals: Vec<(usize, usize)>,
    pub kind: SubQueryKind,
}

#[derive(Debug)]
pub(crate) enum SubQueryKind {
    /// Whether the pattern matches.
    Exists,
    /// The projection of each match.
    Collect(CExpr),
}

/// What an element of a named path holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PathPart {
    Node,
    Rel,
    /// A variable-length relationship: a list of relationships.
    Rels,
}

impl CExpr {
    /// The direct sub-expressions.
    pub(crate) fn children(&self) -> Vec<&CExpr> {
        match self {
            CExpr::Const(_) | CExpr::Slot(_) | CExpr::Local(_) | CExpr::SubQuery(_) => vec![],
            CExpr::Prop(e, _)
            | CExpr::Not(e)
            | CExpr::Neg(e)
            | CExpr::IsNull(e, _)
            | CExpr::HasLabels(e, _) => vec![e],
            CExpr::Index(a, b)
            | CExpr::And(a, b)
            | CExpr::Or(a, b)
            | CExpr::Xor(a, b)
            | CExpr::Bin(_, a, b) => vec![a, b],
            CExpr::List(items) | CExpr::Func(_, items) => items.iter().collect(),
            CExpr::Map(entries) => entries.iter().map(|(_, e)| e).collect(),
            CExpr::Path(parts) => parts.iter().map(|(_, e)| e).collect(),
            CExpr::Slice(a, b, c) => std::iter::once(&**a)
                .chain(b.as_deref())
                .chain(c.as_deref())
                .collect(),
            CExpr::Comprehension {
                list,
                predicate,
                projection,
                ..
            } => std::iter::once(&**list)
                .chain(predicate.as_deref())
                .chain(projection.as_deref())
                .collect(),
            CExpr::Quantified {
                list, predicate, ..
            } => vec![list, predicate],
            CExpr::Reduce {
                init, list, expr, ..
            } => vec![init, list, expr],
            CExpr::Case {
                operand,
                whens,
                else_,
            } => operand
                .as_deref()
                .into_iter()
                .chain(whens.iter().flat_map(|(w, t)| [w, t]))
                .chain(else_.as_deref())
                .collect(),
        }
    }

    /// The same expression with each direct sub-expression replaced by `f` of it.
    pub(crate) fn map_children(&self, f: &mut dyn FnMut(&CExpr) -> CExpr) -> CExpr {
        let mut b = |x: &CExpr| Box::new(f(x));
        match self {
            CExpr::Const(_) | CExpr::Slot(_) | CExpr::Local(_) | CExpr::SubQuery(_) => self.clone(),
            CExpr::Prop(e, k) => CExpr::Prop(b(e), k.clone()),
            CExpr::Not(e) => CExpr::Not(b(e)),
            CExpr::Neg(e) => CExpr::Neg(b(e)),
            CExpr::IsNull(e, n) => CExpr::IsNull(b(e), *n),
            CExpr::HasLabels(e, l) => CExpr::HasLabels(b(e), l.clone()),
            CExpr::Index(x, y) => {
                let x = b(x);
                CExpr::Index(x, b(y))
            }
            CExpr::And(x, y) => {
                let x = b(x);
                CExpr::And(x, b(y))
            }
            CExpr::Or(x, y) => {
                let x = b(x);
                CExpr::Or(x, b(y))
            }
            CExpr::Xor(x, y) => {
                let x = b(x);
                CExpr::Xor(x, b(y))
            }
            CExpr::Bin(op, x, y) => {
                let x = b(x);
                CExpr::Bin(*op, x, b(y))
            }
            CExpr::List(items) => CExpr::List(items.iter().map(&mut *f).collect()),
            CExpr::Func(g, items) => CExpr::Func(*g, items.iter().map(&mut *f).collect()),
            CExpr::Map(entries) => {
                CExpr::Map(entries.iter().map(|(k, x)| (k.clone(), f(x))).collect())
            }
            CExpr::Path(parts) => CExpr::Path(parts.iter().map(|(k, x)| (*k, f(x))).collect()),
            CExpr::Slice(x, from, to) => {
                let x = b(x);
                let from = from.as_deref().map(&mut b);
                CExpr::Slice(x, from, to.as_deref().map(&mut b))
            }
            CExpr::Comprehension {
                level,
                list,
                predicate,
                projection,
            } => {
                let list = b(list);
                let predicate = predicate.as_deref().map(&mut b);
                CExpr::Comprehension {
                    level: *level,
                    list,
                    predicate,
                    projection: projection.as_deref().map(&mut b),
                }
            }
            CExpr::Quantified {
                quantifier,
                level,
                list,
                predicate,
            } => {
                let list = b(list);
                CExpr::Quantified {
                    quantifier: *quantifier,
                    level: *level,
                    list,
                    predicate: b(predicate),
                }
            }
            CExpr::Reduce {
                level,
                init,
                list,
                expr,
            } => {
                let init = b(init);
                let list = b(list);
                CExpr::Reduce {
                    level: *level,
                    init,
                    list,
                    expr: b(expr),
                }
            }
            CExpr::Case {
                operand,
                whens,
                else_,
            } => {
                let operand = operand.as_deref().map(&mut b);
                let whens = whens.iter().map(|(w, t)| (f(w), f(t))).collect();
                CExpr::Case {
                    operand,
                    whens,
                    else_: else_.as_deref().map(|x| Box::new(f(x))),
                }
            }
        }
    }

    /// Slots the expression reads.
    pub(crate) fn slots(&self, out: &mut Vec<usize>) {
        match self {
            CExpr::Slot(s) => out.push(*s),
            CExpr::SubQuery(sq) => out.extend(&sq.reads),
            other => other.children().into_iter().for_each(|c| c.slots(out)),
        }
    }

    /// Whether the expression reads a local variable (so it cannot be evaluated on its own).
    pub(crate) fn has_locals(&self) -> bool {
        matches!(self, CExpr::Local(_))
            || matches!(self, CExpr::SubQuery(sq) if !sq.locals.is_empty())
            || self.children().into_iter().any(CExpr::has_locals)
    }

    pub(crate) fn slot_list(&self) -> Vec<usize> {
        let mut v = Vec::new();
        self.slots(&mut v);
        v
    }
}

/// The elements of a list operand; None for null.
fn list_operand(v: Val, what: &str) -> Result<Option<Vec<Val>>, QueryError> {
    match v {
        Val::Null => Ok(None),
        Val::List(l) => Ok(Some(l)),
        other => Err(QueryError::type_err(format!(
            "{what} needs a list, got a {}",
            other.type_name()
        ))),
    }
}

/// A slice bound: an integer, negative from the end, clamped to the list.
fn slice_bound(v: Option<Val>, len: i64, default: i64) -> Result<Option<usize>, QueryError> {
    let i = match v {
        None => default,
        Some(Val::Null) => return Ok(None),
        Some(Val::Int(i)) => i,
        Some(other) => {
            return Err(QueryError::type_err(format!(
                "a list slice bound must be an integer, got a {}",
                other.type_name()
            )))
        }
    };
    let i = if i < 0 { len.saturating_add(i) } else { i };
    Ok(Some(i.clamp(0, len) as usize))
}

fn deleted(what: &str) -> QueryError {
    QueryError::semantic(format!("the {what} was deleted earlier in this query"))
}

/// Evaluates an expression for one row.
pub(crate) fn eval(e: &CExpr, row: &[Val], cx: &Cx<'_>) -> Result<Val, QueryError> {
    Ok(match e {
        CExpr::Const(v) => v.clone(),
        CExpr::Slot(s) => row.get(*s).cloned().unwrap_or(Val::Null),
        CExpr::Prop(base, key) => match eval(base, row, cx)? {
            Val::Null => Val::Null,
            Val::Node(id) => match cx.node_property(id, key)? {
                Some(v) => v,
                None => return Err(deleted("node")),
            },
            Val::Rel(id) => match cx.edge(id)? {
                Some(r) => r.properties.get(key).map_or(Val::Null, Val::from),
                None => return Err(deleted("relationship")),
            },
            Val::Map(mut m) => m.remove(key).unwrap_or(Val::Null),
            v @ (Val::DateTime(_)
            | Val::Zoned(_)
            | Val::Date(_)
            | Val::LocalTime(_)
            | Val::Time(..)
            | Val::LocalDateTime(_)
            | Val::Duration(_)) => crate::temporal::field(&v, key)?,
            other => {
                return Err(QueryError::type_err(format!(
                    "cannot read property {key} of a {}",
                    other.type_name()
                )))
            }
        },
        CExpr::Index(base, index) => match (eval(base, row, cx)?, eval(index, row, cx)?) {
            (Val::Null, _) | (_, Val::Null) => Val::Null,
            (Val::List(l), Val::Int(i)) => {
                let len = l.len() as i64;
                let i = if i < 0 { len + i } else { i };
                if (0..len).contains(&i) {
                    l.into_iter().nth(i as usize).unwrap_or(Val::Null)
                } else {
                    Val::Null
                }
            }
            (Val::Map(mut m), Val::Str(k)) => m.remove(&k).unwrap_or(Val::Null),
            (b @ (Val::Node(_) | Val::Rel(_)), Val::Str(k)) => {
                eval(&CExpr::Prop(Box::new(CExpr::Const(b)), k), row, cx)?
            }
            (b, i) => {
                return Err(QueryError::type_err(format!(
                    "cannot index a {} with a {}",
                    b.type_name(),
                    i.type_name()
                )))
            }
        },
        CExpr::List(items) => Val::List(
            items
                .iter()
                .map(|x| eval(x, row, cx))
                .collect::<Result<_, _>>()?,
        ),
        CExpr::Map(entries) => {
            let mut m = BTreeMap::new();
            for (k, x) in entries {
                m.insert(k.clone(), eval(x, row, cx)?);
            }
            Val::Map(m)
        }
        CExpr::Not(x) => match eval(x, row, cx)?.truthy()? {
            Some(b) => Val::Bool(!b),
            None => Val::Null,
        },
        CExpr::Neg(x) => match eval(x, row, cx)? {
            Val::Null => Val::Null,
            Val::Int(i) => Val::Int(
                i.checked_neg()
                    .ok_or_else(|| QueryError::Arithmetic("integer overflow".into()))?,
            ),
            Val::Float(f) => Val::Float(-f),
            other => {
                return Err(QueryError::type_err(format!(
                    "cannot negate a {}",
                    other.type_name()
                )))
            }
        },
        CExpr::And(a, b) => {
            // false wins over null: `null AND false` is false.
            let l = eval(a, row, cx)?.truthy()?;
            if l == Some(false) {
                return Ok(Val::Bool(false));
            }
            match (l, eval(b, row, cx)?.truthy()?) {
                (_, Some(false)) => Val::Bool(false),
                (Some(true), Some(true)) => Val::Bool(true),
                _ => Val::Null,
            }
        }
        CExpr::Or(a, b) => {
            let l = eval(a, row, cx)?.truthy()?;
            if l == Some(true) {
                return Ok(Val::Bool(true));
            }
            match (l, eval(b, row, cx)?.truthy()?) {
                (_, Some(true)) => Val::Bool(true),
                (Some(false), Some(false)) => Val::Bool(false),
                _ => Val::Null,
            }
        }
        CExpr::Xor(a, b) => match (eval(a, row, cx)?.truthy()?, eval(b, row, cx)?.truthy()?) {
            (Some(x), Some(y)) => Val::Bool(x != y),
            _ => Val::Null,
        },
        CExpr::Bin(op, a, b) => binary(*op, eval(a, row, cx)?, eval(b, row, cx)?)?,
        CExpr::IsNull(x, negated) => Val::Bool(eval(x, row, cx)?.is_null() != *negated),
        CExpr::HasLabels(x, labels) => match eval(x, row, cx)? {
            Val::Null => Val::Null,
            Val::Node(id) => Val::Bool(cx.has_labels(id, labels)?),
            other => {
                return Err(QueryError::type_err(format!(
                    "a {} has no labels",
                    other.type_name()
                )))
            }
        },
        CExpr::Local(level) => cx.local(*level)?,
        CExpr::SubQuery(sq) => {
            let mut r = row.to_vec();
            if r.len() < sq.width {
                r.resize(sq.width, Val::Null);
            }
            for (level, slot) in &sq.locals {
                r[*slot] = cx.local(*level)?;
            }
            {
                let mut args = cx.args.borrow_mut();
                if args.len() <= sq.arg {
                    args.resize(sq.arg + 1, Vec::new());
                }
                args[sq.arg] = r;
            }
            let mut op = crate::exec::build(&sq.plan, sq.width, false);
            match &sq.kind {
                SubQueryKind::Exists => Val::Bool(op.next(cx)?.is_some()),
                SubQueryKind::Collect(projection) => {
                    let mut out = Vec::new();
                    while let Some(r) = op.next(cx)? {
                        cx.tick()?;
                        if out.len() >= cx.limits.max_buffered_rows {
                            return Err(QueryError::BufferLimit(cx.limits.max_buffered_rows));
                        }
                        out.push(eval(projection, &r, cx)?);
                    }
                    Val::List(out)
                }
            }
        }
        CExpr::Path(parts) => {
            let mut nodes: Vec<NodeId> = Vec::new();
            let mut rels: Vec<EdgeId> = Vec::new();
            for (kind, x) in parts {
                let v = eval(x, row, cx)?;
                let edges = match (kind, v) {
                    (_, Val::Null) => return Ok(Val::Null),
                    (PathPart::Node, Val::Node(n)) => {
                        if nodes.is_empty() {
                            nodes.push(n);
                        }
                        continue;
                    }
                    (PathPart::Rel, Val::Rel(r)) => vec![r],
                    (PathPart::Rels, Val::List(l)) => l
                        .into_iter()
                        .filter_map(|x| match x {
                            Val::Rel(r) => Some(r),
                            _ => None,
                        })
                        .collect(),
                    (_, other) => {
                        return Err(QueryError::type_err(format!(
                            "a path cannot hold a {}",
                            other.type_name()
                        )))
                    }
                };
                // Each relationship leads from the path's last node to its other end.
                for r in edges {
                    let edge = cx.edge(r)?.ok_or_else(|| deleted("relationship"))?;
                    let at = nodes.last().copied().unwrap_or(edge.start);
                    nodes.push(if edge.start == at {
                        edge.end
                    } else {
                        edge.start
                    });
                    rels.push(r);
                }
            }
            Val::Path(nodes, rels)
        }
        CExpr::Slice(list, from, to) => {
            let Some(items) = list_operand(eval(list, row, cx)?, "slicing")? else {
                return Ok(Val::Null);
            };
            let len = items.len() as i64;
            let from = from.as_ref().map(|x| eval(x, row, cx)).transpose()?;
            let to = to.as_ref().map(|x| eval(x, row, cx)).transpose()?;
            match (slice_bound(from, len, 0)?, slice_bound(to, len, len)?) {
                (Some(a), Some(b)) if a < b => Val::List(items[a..b].to_vec()),
                (Some(_), Some(_)) => Val::List(Vec::new()),
                _ => Val::Null,
            }
        }
        CExpr::Comprehension {
            level,
            list,
            predicate,
            projection,
        } => {
            let Some(items) = list_operand(eval(list, row, cx)?, "a list comprehension")? else {
                return Ok(Val::Null);
            };
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                cx.tick()?;
                cx.bind(*level, item.clone());
                if let Some(p) = predicate {
                    if eval(p, row, cx)?.truthy()? != Some(true) {
                        continue;
                    }
                }
                out.push(match projection {
                    Some(p) => eval(p, row, cx)?,
                    None => item,
                });
            }
            Val::List(out)
        }
        CExpr::Quantified {
            quantifier,
            level,
            list,
            predicate,
        } => {
            let Some(items) = list_operand(eval(list, row, cx)?, quantifier_name(*quantifier))?
            else {
                return Ok(Val::Null);
            };
            let (mut trues, mut falses, mut nulls) = (0usize, 0usize, 0usize);
            for item in items {
                cx.tick()?;
                cx.bind(*level, item);
                match eval(predicate, row, cx)?.truthy()? {
                    Some(true) => trues += 1,
                    Some(false) => falses += 1,
                    None => nulls += 1,
                }
                // Stop as soon as the answer is known.
                let decided = match quantifier {
                    Quantifier::All => falses > 0,
                    Quantifier::Any | Quantifier::None => trues > 0,
                    Quantifier::Single => trues > 1,
                };
                if decided {
                    break;
                }
            }
            let decided = match quantifier {
                Quantifier::All => (falses > 0).then_some(false),
                Quantifier::Any => (trues > 0).then_some(true),
                Quantifier::None => (trues > 0).then_some(false),
                Quantifier::Single => (trues > 1).then_some(false),
            };
            match decided {
                Some(b) => Val::Bool(b),
                None if nulls > 0 => Val::Null,
                None => Val::Bool(match quantifier {
                    Quantifier::All | Quantifier::None => true,
                    Quantifier::Any => false,
                    Quantifier::Single => trues == 1,
                }),
            }
        }
        CExpr::Reduce {
            level,
            init,
            list,
            expr,
        } => {
            let mut acc = eval(init, row, cx)?;
            let Some(items) = list_operand(eval(list, row, cx)?, "reduce()")? else {
                return Ok(Val::Null);
            };
            for item in items {
                cx.tick()?;
                cx.bind(*level, acc);
                cx.bind(level + 1, item);
                acc = eval(expr, row, cx)?;
            }
            acc
        }
        CExpr::Case {
            operand,
            whens,
            else_,
        } => {
            let subject = operand.as_ref().map(|o| eval(o, row, cx)).transpose()?;
            for (w, t) in whens {
                let v = eval(w, row, cx)?;
                let hit = match &subject {
                    Some(s) => equals(s, &v) == Some(true),
                    None => v == Val::Bool(true),
                };
                if hit {
                    return eval(t, row, cx);
                }
            }
            match else_ {
                Some(e) => eval(e, row, cx)?,
                None => Val::Null,
            }
        }
        CExpr::Func(Func::Coalesce, args) => {
            // As in Neo4j, the arguments after the first non-null one are not evaluated.
            for a in args {
                let v = eval(a, row, cx)?;
                if !v.is_null() {
                    return Ok(v);
                }
            }
            Val::Null
        }
        CExpr::Func(f, args) => {
            let args = args
                .iter()
                .map(|x| eval(x, row, cx))
                .collect::<Result<Vec<_>, _>>()?;
            if f.null_in_null_out() && args.iter().any(Val::is_null) {
                return Ok(Val::Null);
            }
            call(*f, args, cx)?
        }
    })
}

fn quantifier_name(q: Quantifier) -> &'static str {
    match q {
        Quantifier::All => "all()",
        Quantifier::Any => "any()",
        Quantifier::None => "none()",
        Quantifier::Single => "single()",
    }
}

/// Functions that need the graph; everything else is pure.
fn call(f: Func, args: Vec<Val>, cx: &Cx<'_>) -> Result<Val, QueryError> {
    // Borrowed, not copied: `coalesce(a.x, ...)` would copy a string per row.
    let null = Val::Null;
    let first = args.first().unwrap_or(&null);
    Ok(match (f, first) {
        (Func::Id, Val::Node(n)) => Val::Int(cx.limits.ids.node(*n)),
        (Func::Id, Val::Rel(r)) => Val::Int(cx.limits.ids.relationship(*r)),
        (Func::Labels, Val::Node(n)) => {
            let node = cx.node(*n)?.ok_or_else(|| deleted("node"))?;
            Val::List(node.labels.iter().map(|l| Val::Str(l.clone())).collect())
        }
        (Func::Type, Val::Rel(r)) => Val::Str(
            cx.edge(*r)?
                .ok_or_else(|| deleted("relationship"))?
                .rel_type
                .clone(),
        ),
        (Func::StartNode, Val::Rel(r)) => {
            Val::Node(cx.edge(*r)?.ok_or_else(|| deleted("relationship"))?.start)
        }
        (Func::EndNode, Val::Rel(r)) => {
            Val::Node(cx.edge(*r)?.ok_or_else(|| deleted("relationship"))?.end)
        }
        (Func::Keys | Func::Properties, Val::Node(_) | Val::Rel(_) | Val::Map(_)) => {
            let props: BTreeMap<String, Val> = match first {
                Val::Node(n) => cx
                    .node(*n)?
                    .ok_or_else(|| deleted("node"))?
                    .properties
                    .iter()
                    .map(|(k, v)| (k.clone(), Val::from(v)))
                    .collect(),
                Val::Rel(r) => cx
                    .edge(*r)?
                    .ok_or_else(|| deleted("relationship"))?
                    .properties
                    .iter()
                    .map(|(k, v)| (k.clone(), Val::from(v)))
                    .collect(),
                Val::Map(m) => m.clone(),
                _ => BTreeMap::new(),
            };
            if f == Func::Keys {
                Val::List(props.into_keys().map(Val::Str).collect())
            } else {
                Val::Map(props)
            }
        }
        (
            Func::Id
            | Func::Labels
            | Func::Type
            | Func::StartNode
            | Func::EndNode
            | Func::Keys
            | Func::Properties,
            other,
        ) => {
            return Err(QueryError::type_err(format!(
                "{}() cannot take a {}",
                format!("{f:?}").to_ascii_lowercase(),
                other.type_name()
            )))
        }
        _ => call_pure(f, args)?,
    })
}
