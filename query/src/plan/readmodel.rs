//! Aggregations the engine's in-memory read model can answer whole (see `svc_engine`'s
//! `readmodel`): the aggregation is wrapped in an operator that asks the engine first and runs
//! the ordinary plan (kept as its fallback) only when the engine has no model to answer from.
//!
//! - `count` of a label's nodes under property comparisons with constants (a label scan or an
//!   index range scan with filters): `CountWhere`.
//! - `count(DISTINCT end)` of a chain of directed single-type hops with distinct types:
//!   `ReachCount`. Distinct types keep the chain's relationships distinct, as MATCH requires,
//!   so the distinct end nodes are exactly the nodes reached hop by hop.

use svc_engine::{Comparison, Hop, PropertyTest};

use super::*;

impl Planner<'_> {
    /// Wraps an `Aggregate` without grouping keys in `CountWhere` or `ReachCount` when its shape
    /// allows.
    pub(super) fn try_read_model_aggregate(&mut self, plan: &mut Plan) {
        let Op::Aggregate { input, keys, aggs } = &plan.op else {
            return;
        };
        if !keys.is_empty() || aggs.is_empty() {
            return;
        }
        let slots: Vec<usize> = aggs.iter().map(|a| a.slot).collect();
        if let Some((label, tests, details)) = count_where_shape(input, aggs) {
            let fallback = std::mem::replace(plan, self.op("", Op::Once));
            *plan = self.op(
                details,
                Op::CountWhere {
                    label,
                    tests,
                    slots,
                    fallback: Box::new(fallback),
                },
            );
        } else if let Some((from, hops, depth)) = reach_shape(input, aggs) {
            let details = hops
                .iter()
                .map(|h| format!("{:?} {} {:?}", h.direction, h.rel_type, h.label))
                .collect::<Vec<_>>()
                .join(", ");
            let fallback = std::mem::replace(plan, self.op("", Op::Once));
            *plan = self.op(
                details,
                Op::ReachCount {
                    from,
                    hops,
                    depth,
                    slots,
                    fallback: Box::new(fallback),
                },
            );
        }
    }
}

/// `count(*)` / `count(n)` (no DISTINCT) over filters on a leaf scan of `n`.
fn count_where_shape(
    input: &Plan,
    aggs: &[AggSpec],
) -> Option<(String, Vec<PropertyTest>, String)> {
    let mut predicates: Vec<&CExpr> = Vec::new();
    let mut cursor = input;
    while let Op::Filter { input, predicate } = &cursor.op {
        predicates.push(predicate);
        cursor = input;
    }
    let mut tests = Vec::new();
    let (slot, label) = match &cursor.op {
        Op::Scan {
            input,
            slot,
            source,
            check_labels,
        } if matches!(input.op, Op::Once) && check_labels.is_empty() => match source {
            ScanSource::Label(l) => (*slot, l.clone()),
            ScanSource::Range {
                label,
                key,
                lower,
                upper,
                limit: None,
                ..
            } => {
                fn bound(
                    b: &Bound<Val>,
                    incl: Comparison,
                    excl: Comparison,
                ) -> Option<Option<(Comparison, &Val)>> {
                    match b {
                        Bound::Included(v) => Some(Some((incl, v))),
                        Bound::Excluded(v) => Some(Some((excl, v))),
                        Bound::Unbounded => Some(None),
                    }
                }
                for (op, v) in [
                    bound(lower, Comparison::Ge, Comparison::Gt)?,
                    bound(upper, Comparison::Le, Comparison::Lt)?,
                ]
                .into_iter()
                .flatten()
                {
                    tests.push(PropertyTest {
                        key: key.clone(),
                        op,
                        value: scalar(v)?,
                    });
                }
                (*slot, label.clone())
            }
            _ => return None,
        },
        Op::ScanFilter {
            input,
            slot,
            label,
            check_labels,
            keys,
            key_slots,
            predicates: fused,
        } if matches!(input.op, Op::Once) && check_labels.is_empty() => {
            for p in fused {
                tests_of(
                    p,
                    &|e| match e {
                        CExpr::Slot(s) => key_slots
                            .iter()
                            .position(|k| k == s)
                            .map(|i| keys[i].clone()),
                        _ => None,
                    },
                    &mut tests,
                )?;
            }
            (*slot, label.clone())
        }
        _ => return None,
    };
    let counts_rows = |a: &AggSpec| {
        a.kind == AggKind::Count
            && !a.distinct
            && match &a.arg {
                None => true,
                Some(CExpr::Slot(s)) => *s == slot,
                Some(_) => false,
            }
    };
    if !aggs.iter().all(counts_rows) {
        return None;
    }
    for p in predicates {
        tests_of(
            p,
            &|e| match e {
                CExpr::Prop(base, key) if matches!(base.as_ref(), CExpr::Slot(s) if *s == slot) => {
                    Some(key.clone())
                }
                _ => None,
            },
            &mut tests,
        )?;
    }
    let details = format!(
        ":{label} {}",
        tests
            .iter()
            .map(|t| format!("{} {:?} {:?}", t.key, t.op, t.value))
            .collect::<Vec<_>>()
            .join(" AND ")
    );
    Some((label, tests, details))
}

/// The property tests a predicate is the conjunction of (None: not only such tests).
/// `property` names the key an operand reads, if it reads one of the scanned node.
fn tests_of(
    e: &CExpr,
    property: &dyn Fn(&CExpr) -> Option<String>,
    out: &mut Vec<PropertyTest>,
) -> Option<()> {
    match e {
        CExpr::And(a, b) => {
            tests_of(a, property, out)?;
            tests_of(b, property, out)
        }
        CExpr::Bin(op, a, b) => {
            let (op, flipped) = match op {
                BinaryOp::Eq => (Comparison::Eq, Comparison::Eq),
                BinaryOp::Lt => (Comparison::Lt, Comparison::Gt),
                BinaryOp::Le => (Comparison::Le, Comparison::Ge),
                BinaryOp::Gt => (Comparison::Gt, Comparison::Lt),
                BinaryOp::Ge => (Comparison::Ge, Comparison::Le),
                _ => return None,
            };
            let (key, op, c) = match (property(a), b.as_ref(), property(b), a.as_ref()) {
                (Some(k), CExpr::Const(c), _, _) => (k, op, c),
                (_, _, Some(k), CExpr::Const(c)) => (k, flipped, c),
                _ => return None,
            };
            out.push(PropertyTest {
                key,
                op,
                value: scalar(c)?,
            });
            Some(())
        }
        _ => None,
    }
}

/// A constant the engine's tests compare exactly as Cypher does.
fn scalar(v: &Val) -> Option<svc_engine::Value> {
    use svc_engine::Value;
    Some(match v {
        Val::Int(i) => Value::Int(*i),
        Val::Float(f) if !f.is_nan() => Value::Float(*f),
        Val::Str(s) => Value::String(s.clone()),
        Val::Bool(b) => Value::Bool(*b),
        Val::DateTime(t) => Value::DateTime(*t),
        // The engine orders and equates temporals as `value::compare` / `equals` do.
        other => crate::temporal::to_value(other)?,
    })
}

/// `count(DISTINCT end)` over a chain of expansions: (start slot, hops, number of expansions).
fn reach_shape(input: &Plan, aggs: &[AggSpec]) -> Option<(usize, Vec<Hop>, usize)> {
    let end = match &aggs.first()?.arg {
        Some(CExpr::Slot(s)) => *s,
        _ => return None,
    };
    if !aggs.iter().all(|a| {
        a.kind == AggKind::Count && a.distinct && matches!(a.arg, Some(CExpr::Slot(s)) if s == end)
    }) {
        return None;
    }
    let mut hops = Vec::new();
    // Relationship slots of the chain, and those its hops must differ from.
    let (mut rels, mut differ): (Vec<usize>, Vec<usize>) = (Vec::new(), Vec::new());
    let mut want = end;
    let mut cursor = input;
    loop {
        match &cursor.op {
            Op::Expand {
                input,
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
            } if *to == want && rel_props.is_empty() && to_labels.len() <= 1 => {
                let [t] = types.as_slice() else { return None };
                hops.push(Hop {
                    direction: *direction,
                    rel_type: t.clone(),
                    label: to_labels.first().cloned(),
                });
                rels.push(*rel);
                differ.extend(distinct_from);
                want = *from;
                cursor = input;
            }
            _ => break,
        }
    }
    if hops.is_empty() {
        return None;
    }
    hops.reverse();
    let mut types: Vec<&str> = hops.iter().map(|h| h.rel_type.as_str()).collect();
    types.sort_unstable();
    types.dedup();
    // Relationships bound below the chain could coincide with the chain's: not this shape.
    if types.len() != hops.len() || differ.iter().any(|r| !rels.contains(r)) {
        return None;
    }
    let depth = hops.len();
    Some((want, hops, depth))
}

/// The input of the chain of `depth` expansions under a `ReachCount`'s fallback aggregation.
pub(crate) fn reach_input(fallback: &Plan, depth: usize) -> Option<&Plan> {
    let Op::Aggregate { input, .. } = &fallback.op else {
        return None;
    };
    let mut cursor = input.as_ref();
    for _ in 0..depth {
        let Op::Expand { input, .. } = &cursor.op else {
            return None;
        };
        cursor = input;
    }
    Some(cursor)
}
