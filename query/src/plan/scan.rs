//! Scan choice: label, index seek, range and top-k selection for a pattern node, the label-count
//! shortcut, and the predicate shapes (equality, range) that drive them.

use super::assumptions::WholeLabel;
use super::*;

impl Planner<'_> {
    /// Picks how to find candidates for one node: (cost estimate, source, labels still to check,
    /// conjuncts the source answers exactly).
    pub(super) fn choose_scan(
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
        // 0. `id(n) = value`: one node at most. The conjunct stays as a filter above (it also
        // decides `id(n) = 1.0` and the like exactly).
        for c in conjuncts.iter().filter(|c| !c.applied) {
            let Some(value) = id_equality_on(&c.expr, s) else {
                continue;
            };
            let mut value_slots = Vec::new();
            value.slots(&mut value_slots);
            if value_slots.iter().all(|v| bound.contains(v)) {
                return Ok(ScanChoice {
                    cost: (0, 0),
                    source: ScanSource::ById {
                        value: value.clone(),
                    },
                    check_labels: node.labels.clone(),
                    covered: Vec::new(),
                });
            }
        }
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
                    Some((Bound::Included(x) | Bound::Excluded(x), _)) => same_range_class(x, &v),
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
                let count = self.assumed.label_count(self.g, label)?;
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
            let count = self.assumed.label_count(self.g, label)?;
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
                cost: (3, self.assumed.node_count(self.g)?),
                source: ScanSource::AllNodes,
                check_labels: Vec::new(),
                covered: Vec::new(),
            },
        })
    }

    /// When every node of `label` has a number (or every one a datetime) in the ordered index
    /// on (label, key), the bounds of a range holding all of them: the index is then the whole
    /// label in `ORDER BY` order (no nulls and no other types to sort before or after them).
    pub(super) fn whole_label_range(&self, label: &str, key: &str) -> Option<(Val, Val)> {
        match self.assumed.whole_label(self.g, label, key) {
            WholeLabel::Numbers => Some((Val::Float(f64::NEG_INFINITY), Val::Float(f64::INFINITY))),
            WholeLabel::DateTimes => Some((Val::DateTime(i64::MIN), Val::DateTime(i64::MAX))),
            WholeLabel::Neither => None,
        }
    }

    /// `ORDER BY n.p LIMIT k` directly over an index range scan of `n.p` (with no other filter,
    /// label check or operator between) reads only the first k (+ skip) index entries. The
    /// sort key may name `n.p` through projections between (`RETURN n.p AS s ORDER BY s`,
    /// `WITH n AS m ... ORDER BY m.p`): the planner sees through aliases and renames.
    pub(super) fn push_topk_into_index(
        &self,
        plan: &mut Plan,
        keys: &[(CExpr, bool)],
        skip: Option<&CExpr>,
        limit: &CExpr,
    ) {
        let [(sort_expr, descending)] = keys else {
            return;
        };
        let descending = *descending;
        // Walk down through the projections to the scan, resolving the key through them.
        let Some((cursor, resolved)) = scan_below(plan, sort_expr.clone()) else {
            return;
        };
        let CExpr::Prop(base, sort_key) = &resolved else {
            return;
        };
        let CExpr::Slot(var_slot) = base.as_ref() else {
            return;
        };
        let (var_slot, sort_key) = (*var_slot, sort_key.clone());
        let var = cursor
            .details
            .trim_start_matches('(')
            .split(':')
            .next()
            .unwrap_or("")
            .to_owned();
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
            if let Some((lower, upper)) = self.whole_label_range(&label, &sort_key) {
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
            if *key == sort_key {
                *order = if descending {
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
                cursor.details.push_str(if descending {
                    ", descending, top-k"
                } else {
                    ", ascending, top-k"
                });
            }
        }
    }

    /// `MATCH (n:L) RETURN count(n)` (or `count(*)`), with nothing else in the query so far,
    /// is answered from the label bitmap's cardinality.
    pub(super) fn try_count_label(
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
}

/// The scan under one or more projections, if that is all there is (no filter may drop rows
/// between the index and the limit), with `key` rewritten through the projections' items
/// (an alias's slot becomes the expression it was given).
fn scan_below(plan: &mut Plan, key: CExpr) -> Option<(&mut Plan, CExpr)> {
    scan_below_at(plan, key, 0)
}

fn scan_below_at(plan: &mut Plan, mut key: CExpr, depth: usize) -> Option<(&mut Plan, CExpr)> {
    if matches!(plan.op, Op::Scan { .. }) {
        return Some((plan, key));
    }
    let Op::Project { input, items } = &mut plan.op else {
        return None;
    };
    if depth > 64 {
        return None;
    }
    match &key {
        CExpr::Slot(s) => {
            if let Some((_, e)) = items.iter().find(|(slot, _)| slot == s) {
                key = e.clone();
            }
        }
        CExpr::Prop(base, k) => {
            if let CExpr::Slot(s) = base.as_ref() {
                if let Some((_, e @ CExpr::Slot(_))) = items.iter().find(|(slot, _)| slot == s) {
                    key = CExpr::Prop(Box::new(e.clone()), k.clone());
                }
            }
        }
        _ => {}
    }
    scan_below_at(input, key, depth + 1)
}

/// `id(n) = value` (either way round) where n is in `slot`.
fn id_equality_on(e: &CExpr, slot: usize) -> Option<&CExpr> {
    let CExpr::Bin(BinaryOp::Eq, a, b) = e else {
        return None;
    };
    for (f, v) in [(a, b), (b, a)] {
        if let CExpr::Func(Func::Id, args) = f.as_ref() {
            if matches!(args.as_slice(), [CExpr::Slot(s)] if *s == slot)
                && !v.slot_list().contains(&slot)
            {
                return Some(v);
            }
        }
    }
    None
}

/// `n.key = value` (either way round) where n is in `slot`.
pub(super) fn equality_on(e: &CExpr, slot: usize) -> Option<(&str, &CExpr)> {
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
/// Whether two range bounds compare with each other: numbers with numbers, datetimes (of any
/// zone) with datetimes, and each other temporal type with itself.
fn same_range_class(x: &Val, v: &Val) -> bool {
    let datetime = |a: &Val| matches!(a, Val::DateTime(_) | Val::Zoned(_));
    (datetime(x) && datetime(v))
        || (x.as_f64().is_some() && v.as_f64().is_some())
        || matches!(
            (x, v),
            (Val::Date(_), Val::Date(_))
                | (Val::LocalTime(_), Val::LocalTime(_))
                | (Val::Time(..), Val::Time(..))
                | (Val::LocalDateTime(_), Val::LocalDateTime(_))
        )
}

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
            // Numbers and every orderable temporal (durations have no order).
            let rangeable = matches!(
                c,
                Val::Int(_)
                    | Val::DateTime(_)
                    | Val::Zoned(_)
                    | Val::Date(_)
                    | Val::LocalTime(_)
                    | Val::Time(..)
                    | Val::LocalDateTime(_)
            ) || matches!(c, Val::Float(f) if !f.is_nan());
            if matches!(base.as_ref(), CExpr::Slot(s) if *s == slot) && rangeable {
                return Some((key, op, c.clone()));
            }
        }
    }
    None
}
