//! Pipeline rules (issue 25): where a WITH pipeline reads only how many rows a chain of hops
//! gives per input row, or only whether it gives any, the chain is counted instead of walked
//! (`Op::ExpandCount`), and where a grouping key is unique per row the aggregation becomes a
//! projection. Each rule looks at slots and operator shapes only, never at labels, types or
//! property names, so it applies to any pattern of the shape:
//!
//! - `count_chain`: an aggregation whose every aggregate counts the chain's rows
//!   (`count(*)`, `count(x)` of a chain variable, no DISTINCT) and whose keys read no chain
//!   variable: `ExpandCount` and a sum of the counts. Under an OPTIONAL MATCH whose pattern is
//!   the chain (`count(x)` only, since `count(*)` counts the row a miss leaves), the counted
//!   rows keep their misses with 0 (a sum of the counts is then the count of non-null `x`).
//! - `semi_chain`: an aggregation whose aggregates all ignore repeats (DISTINCT, `min`,
//!   `max`), or a `DISTINCT` projection: over the longest chain that neither they nor the
//!   grouping keys read, one row per input row with at least one path (a semi-join), the
//!   chain's filters still checked.
//! - `unique_aggregate`: grouping by a variable that is unique per row of the input (a
//!   scanned node, carried through filters, counts and renames): each group is one row, so
//!   `sum` of a count is the count and `count(*)` is 1, a projection.
//! - `collect_unwind`: a list collected without grouping keys and unwound at once, read by
//!   nothing else, is the rows it was collected from (nulls dropped).
//! - A DISTINCT whose rows are unique in one of its slots (`unique_slots`) is left out.
//! - `push_filter`: a WITH ... WHERE whose variables a projection below only renames runs
//!   below it (down to an `ExpandCount`, where the batch executor tests the count as it is
//!   made).
//!
//! MATCH's relationship uniqueness: a chain's hops must have pairwise disjoint relationship
//! types and types disjoint from every relationship bound earlier that they must differ
//! from, so no path of the chain can repeat a relationship and no check is skipped.

use super::*;

/// Most hops a counted chain has (the executors walk it depth first, one level per hop).
const MAX_CHAIN: usize = 4;

/// A chain found over a plan: its hops top first, with the filters above each.
struct Chain<'p> {
    /// (the `Expand` operator, the predicates of the filters directly above it, top first).
    hops: Vec<(&'p Op, Vec<&'p CExpr>)>,
}

impl Chain<'_> {
    /// Every slot the chain binds (relationships and far nodes).
    fn slots(&self) -> Vec<usize> {
        let mut out = Vec::new();
        for (op, _) in &self.hops {
            if let Op::Expand { rel, to, .. } = op {
                out.extend([*rel, *to]);
            }
        }
        out
    }
}

/// The relationship types bound to `slot` by an expansion in `plan` (None: not found).
fn rel_types_of(plan: &Plan, slot: usize) -> Option<&[String]> {
    let mut stack = vec![plan];
    let mut seen = 0usize;
    while let Some(p) = stack.pop() {
        seen += 1;
        if seen > 4096 {
            return None;
        }
        match &p.op {
            Op::Expand {
                input, rel, types, ..
            } => {
                if *rel == slot {
                    return Some(types);
                }
                stack.push(input);
            }
            Op::Scan { input, .. }
            | Op::Filter { input, .. }
            | Op::Project { input, .. }
            | Op::ScanFilter { input, .. }
            | Op::ExpandCount { input, .. } => stack.push(input),
            Op::Optional { input, inner, .. } => {
                stack.push(input);
                stack.push(inner);
            }
            _ => {}
        }
    }
    None
}

fn disjoint(a: &[String], b: &[String]) -> bool {
    !a.is_empty() && !b.is_empty() && a.iter().all(|x| !b.contains(x))
}

/// The longest chain of directed single hops at the top of `plan` (filters between them)
/// that nothing in `reads_above` reads and whose uniqueness checks the types make void.
/// `whole`: the subtree to look up other relationships' types in.
fn find_chain<'p>(plan: &'p Plan, reads_above: &[usize], whole: &'p Plan) -> Option<Chain<'p>> {
    let mut hops: Vec<(&'p Op, Vec<&'p CExpr>)> = Vec::new();
    let mut filters: Vec<&'p CExpr> = Vec::new();
    let mut p = plan;
    loop {
        match &p.op {
            Op::Filter { input, predicate } => {
                filters.push(predicate);
                p = input;
            }
            Op::Expand {
                input,
                to,
                direction: Some(_),
                rel_props,
                into: false,
                hops: None,
                ..
            } if rel_props.is_empty() && hops.len() < MAX_CHAIN => {
                // Each hop starts where the one below it ended.
                if let Some((Op::Expand { from: upper, .. }, _)) = hops.last() {
                    if upper != to {
                        break;
                    }
                }
                hops.push((&p.op, std::mem::take(&mut filters)));
                p = input;
            }
            _ => break,
        }
    }
    // The longest valid chain of the top hops.
    while !hops.is_empty() {
        let chain = Chain { hops };
        if valid(&chain, reads_above, whole) {
            return Some(chain);
        }
        hops = chain.hops;
        hops.pop();
    }
    None
}

fn valid(chain: &Chain<'_>, reads_above: &[usize], whole: &Plan) -> bool {
    let slots = chain.slots();
    if reads_above.iter().any(|s| slots.contains(s)) {
        return false;
    }
    for (op, filters) in &chain.hops {
        let Op::Expand {
            to,
            types,
            distinct_from,
            ..
        } = op
        else {
            return false;
        };
        // Filters read the hop's far node and the input row only.
        for f in filters {
            if f.slot_list().iter().any(|s| slots.contains(s) && s != to) {
                return false;
            }
        }
        for other in distinct_from {
            match rel_types_of(whole, *other) {
                Some(t) if disjoint(types, t) => {}
                _ => return false,
            }
        }
    }
    true
}

/// Slots each holding a different value in every row of `plan` (never null).
pub(super) fn unique_slots(plan: &Plan) -> Vec<usize> {
    let mut p = plan;
    // Operators that keep or drop rows (never repeat one), walked down to the source.
    let mut renames: Vec<&[(usize, CExpr)]> = Vec::new();
    let mut out = loop {
        match &p.op {
            Op::Filter { input, .. }
            | Op::ExpandCount { input, .. }
            | Op::Limit { input, .. }
            | Op::Skip { input, .. }
            | Op::Sort { input, .. }
            | Op::TopK { input, .. } => p = input,
            Op::Project { input, items } => {
                renames.push(items);
                p = input;
            }
            Op::Scan {
                input,
                slot,
                source: ScanSource::AllNodes | ScanSource::Label(_),
                ..
            }
            | Op::ScanFilter { input, slot, .. }
                if matches!(input.op, Op::Once) =>
            {
                break vec![*slot];
            }
            _ => break Vec::new(),
        }
    };
    // Apply the projections bottom up: a slot overwritten is no longer unique; a plain copy
    // of a unique slot is.
    for items in renames.into_iter().rev() {
        let copies: Vec<usize> = items
            .iter()
            .filter(|(_, e)| matches!(e, CExpr::Slot(s) if out.contains(s)))
            .map(|(t, _)| *t)
            .collect();
        out.retain(|s| !items.iter().any(|(t, _)| t == s));
        out.extend(copies);
    }
    out
}

impl Planner<'_> {
    /// `count_chain` (see the module doc): rewrites `plan` (an aggregation's input) and its
    /// aggregates when it applies.
    pub(super) fn count_chain(
        &mut self,
        plan: &mut Plan,
        keys: &[(usize, CExpr)],
        specs: &mut [AggSpec],
    ) {
        if specs.is_empty() {
            return;
        }
        let key_reads: Vec<usize> = keys.iter().flat_map(|(_, e)| e.slot_list()).collect();
        let (optional, target): (bool, &Plan) = match &plan.op {
            Op::Optional { inner, .. } => (true, inner),
            _ => (false, &*plan),
        };
        let Some(chain) = find_chain(target, &key_reads, target) else {
            return;
        };
        let n = chain.hops.len();
        let slots = chain.slots();
        if optional && !chain_ends(target, n).0 {
            return;
        }
        let counts = |a: &AggSpec| {
            a.kind == AggKind::Count
                && !a.distinct
                && match &a.arg {
                    None => !optional,
                    Some(CExpr::Slot(s)) => slots.contains(s),
                    Some(_) => false,
                }
        };
        if specs.iter().all(counts) {
            let slot = self.new_slot();
            for a in specs.iter_mut() {
                a.kind = AggKind::Sum;
                a.arg = Some(CExpr::Slot(slot));
            }
            self.rewrite_chain(plan, n, slot, optional);
            return;
        }
        // Aggregates that ignore repeats: a semi-join over the longest chain they read nothing
        // of (`count(DISTINCT c)` over `(c)-->()-->(b {..})` keeps one row per `c` row that
        // reaches a `b`, however many paths).
        let repeats_ignored = |a: &AggSpec| {
            (a.distinct || matches!(a.kind, AggKind::Min | AggKind::Max)) && a.arg.is_some()
        };
        if !specs.iter().all(repeats_ignored) {
            return;
        }
        let mut reads = key_reads;
        reads.extend(
            specs
                .iter()
                .flat_map(|a| a.arg.iter().flat_map(CExpr::slot_list)),
        );
        let Some(chain) = find_chain(target, &reads, target) else {
            return;
        };
        let n = chain.hops.len();
        if optional && !chain_ends(target, n).0 {
            return;
        }
        self.semi(plan, n, optional);
    }

    /// `semi_chain` for a DISTINCT projection's input (`reads`: what the projection reads).
    pub(super) fn semi_chain(&mut self, plan: &mut Plan, reads: &[usize]) {
        let (optional, target): (bool, &Plan) = match &plan.op {
            Op::Optional { inner, .. } => (true, inner),
            _ => (false, &*plan),
        };
        let Some(chain) = find_chain(target, reads, target) else {
            return;
        };
        let n = chain.hops.len();
        if optional && !chain_ends(target, n).0 {
            return;
        }
        self.semi(plan, n, optional);
    }

    /// One row per input row with a path (or, under OPTIONAL MATCH, every input row once).
    fn semi(&mut self, plan: &mut Plan, n: usize, optional: bool) {
        if optional {
            let Op::Optional { inner, .. } = &plan.op else {
                return;
            };
            let filtered = chain_ends(inner, n).1;
            if !filtered {
                // Nothing of the pattern is read and nothing in it can fail: the outer rows.
                let op = std::mem::replace(&mut plan.op, Op::Once);
                if let Op::Optional { input, .. } = op {
                    *plan = *input;
                }
                return;
            }
        }
        let slot = self.new_slot();
        self.rewrite_chain(plan, n, slot, optional);
    }

    /// Replaces the top `n` hops of `plan` (or of its OPTIONAL MATCH's pattern) by an
    /// `ExpandCount` into `slot`.
    fn rewrite_chain(&mut self, plan: &mut Plan, n: usize, slot: usize, optional: bool) {
        let placeholder = Plan {
            id: plan.id,
            details: String::new(),
            op: Op::Once,
        };
        let top = std::mem::replace(plan, placeholder);
        let (outer, chain_top) = if optional {
            match top.op {
                Op::Optional { input, inner, .. } => (Some(input), *inner),
                other => {
                    *plan = Plan { op: other, ..top };
                    return;
                }
            }
        } else {
            (None, top)
        };
        let id = chain_top.id;
        let mut details = Vec::new();
        let mut hops: Vec<CountHop> = Vec::new();
        let mut filters: Vec<CExpr> = Vec::new();
        let mut from = 0;
        let mut p = chain_top;
        while hops.len() < n {
            match p.op {
                Op::Filter { input, predicate } => {
                    details.push(p.details);
                    filters.push(predicate);
                    p = *input;
                }
                Op::Expand {
                    input,
                    from: f,
                    to,
                    types,
                    direction,
                    to_labels,
                    ..
                } => {
                    details.push(p.details);
                    let mut types = types;
                    types.sort();
                    types.dedup();
                    filters.reverse(); // the lowest filter ran first
                    hops.push(CountHop {
                        types,
                        direction: direction.unwrap_or(Direction::Outgoing),
                        to_labels,
                        to,
                        filters: std::mem::take(&mut filters),
                    });
                    from = f;
                    p = *input;
                }
                other => {
                    // Not reached: `find_chain` checked the shape.
                    p = Plan { op: other, ..p };
                    break;
                }
            }
        }
        hops.reverse();
        details.reverse();
        let input = match outer {
            Some(o) => o,
            None => Box::new(p),
        };
        *plan = Plan {
            id,
            details: format!("{} (count)", details.join(", ")),
            op: Op::ExpandCount {
                input,
                from,
                hops,
                slot,
                keep_zero: optional,
            },
        };
    }

    /// `unique_aggregate` (see the module doc) on an `Aggregate` plan.
    pub(super) fn unique_aggregate(&mut self, plan: &mut Plan) {
        let Op::Aggregate { input, keys, aggs } = &plan.op else {
            return;
        };
        let unique = unique_slots(input);
        if !keys
            .iter()
            .any(|(_, e)| matches!(e, CExpr::Slot(s) if unique.contains(s)))
        {
            return;
        }
        // Counts an `ExpandCount` below made: never null integers.
        let counted = counted_slots(input);
        let mut items: Vec<(usize, CExpr)> = keys.clone();
        for a in aggs {
            let item = match (a.kind, &a.arg) {
                (AggKind::Count, None) => CExpr::Const(Val::Int(1)),
                (AggKind::Sum | AggKind::Min | AggKind::Max, Some(CExpr::Slot(s)))
                    if counted.contains(s) =>
                {
                    CExpr::Slot(*s)
                }
                _ => return,
            };
            items.push((a.slot, item));
        }
        let op = std::mem::replace(&mut plan.op, Op::Once);
        if let Op::Aggregate { input, .. } = op {
            plan.op = Op::Project { input, items };
        }
    }

    /// `push_filter` (see the module doc): a filter over projections that only rename the
    /// slots it reads runs below them.
    pub(super) fn push_filter(&mut self, plan: Plan) -> Plan {
        push_filter(plan, 0)
    }
}

fn push_filter(plan: Plan, depth: usize) -> Plan {
    let Plan { id, details, op } = plan;
    let Op::Filter { input, predicate } = op else {
        return Plan { id, details, op };
    };
    let Plan {
        id: pid,
        details: pdetails,
        op: below,
    } = *input;
    match below {
        Op::Project { input, items } if depth < 16 => match substitute(&predicate, &items) {
            Some(predicate) => {
                let filter = Plan {
                    id,
                    details,
                    op: Op::Filter { input, predicate },
                };
                Plan {
                    id: pid,
                    details: pdetails,
                    op: Op::Project {
                        input: Box::new(push_filter(filter, depth + 1)),
                        items,
                    },
                }
            }
            None => Plan {
                id,
                details,
                op: Op::Filter {
                    input: Box::new(Plan {
                        id: pid,
                        details: pdetails,
                        op: Op::Project { input, items },
                    }),
                    predicate,
                },
            },
        },
        other => Plan {
            id,
            details,
            op: Op::Filter {
                input: Box::new(Plan {
                    id: pid,
                    details: pdetails,
                    op: other,
                }),
                predicate,
            },
        },
    }
}

/// `collect_unwind` (see the module doc): `WITH collect(e) AS xs UNWIND xs AS x`, without
/// grouping keys and with nothing after reading `xs`, is `x = e` for every row whose `e` is
/// not null, in the same order (an empty collection unwinds to no rows, as no rows give):
/// the list is never built. Depth bounded as the batch analysis is.
pub(super) fn collect_unwind(plan: &mut Plan, a: &crate::batch::Analysis, depth: usize) {
    if depth > 64 {
        return;
    }
    let id = plan.id;
    if let Op::Unwind { input, expr, slot } = &mut plan.op {
        let list = match expr {
            CExpr::Slot(s) => Some(*s),
            _ => None,
        };
        let unread = list.is_some_and(|l| a.dead_after(id).is_some_and(|d| d.contains(&l)));
        if let (true, Some(list), Op::Project { input: agg, items }) = (unread, list, &mut input.op)
        {
            let collected = match (items.as_slice(), &mut agg.op) {
                ([(target, CExpr::Slot(a_slot))], Op::Aggregate { keys, aggs, .. })
                    if *target == list
                        && keys.is_empty()
                        && aggs.len() == 1
                        && aggs[0].slot == *a_slot
                        && aggs[0].kind == AggKind::Collect
                        && !aggs[0].distinct =>
                {
                    aggs[0].arg.take()
                }
                _ => None,
            };
            if let Some(e) = collected {
                let x = *slot;
                let below = std::mem::replace(&mut agg.op, Op::Once);
                let Op::Aggregate { input: rows, .. } = below else {
                    return;
                };
                let test = |value: CExpr| CExpr::IsNull(Box::new(value), true);
                plan.details = format!("{} (collected rows, not null)", plan.details);
                // A property read is tested before the projection (the same value, read
                // twice: the batch path tests it once per distinct value); anything else
                // after, on the projected slot, evaluated once.
                if matches!(&e, CExpr::Prop(b, _) if matches!(b.as_ref(), CExpr::Slot(_))) {
                    let filter = Plan {
                        id: plan.id,
                        details: plan.details.clone(),
                        op: Op::Filter {
                            input: rows,
                            predicate: test(e.clone()),
                        },
                    };
                    plan.id = input.id;
                    plan.details = input.details.clone();
                    plan.op = Op::Project {
                        input: Box::new(filter),
                        items: vec![(x, e)],
                    };
                } else {
                    let project = Plan {
                        id: input.id,
                        details: input.details.clone(),
                        op: Op::Project {
                            input: rows,
                            items: vec![(x, e)],
                        },
                    };
                    plan.op = Op::Filter {
                        input: Box::new(project),
                        predicate: test(CExpr::Slot(x)),
                    };
                }
            }
        }
    }
    for input in plan.inputs_mut() {
        collect_unwind(input, a, depth + 1);
    }
}

/// `e` with the slots `items` set replaced by the slots they copy; None when one of them is
/// set to anything but a copy of a slot, or `e` runs a subquery (which reads its row itself).
fn substitute(e: &CExpr, items: &[(usize, CExpr)]) -> Option<CExpr> {
    if has_subquery(e) {
        return None;
    }
    let mut ok = true;
    let out = map_slots(e, &mut |s| match items.iter().find(|(t, _)| *t == s) {
        None => s,
        Some((_, CExpr::Slot(x))) => *x,
        Some(_) => {
            ok = false;
            s
        }
    });
    ok.then_some(out)
}

fn has_subquery(e: &CExpr) -> bool {
    matches!(e, CExpr::SubQuery(_)) || e.children().into_iter().any(has_subquery)
}

fn map_slots(e: &CExpr, f: &mut dyn FnMut(usize) -> usize) -> CExpr {
    match e {
        CExpr::Slot(s) => CExpr::Slot(f(*s)),
        other => other.map_children(&mut |x| map_slots(x, f)),
    }
}

/// The count slots of `ExpandCount`s that feed `plan`'s rows unchanged.
fn counted_slots(plan: &Plan) -> Vec<usize> {
    let mut out = Vec::new();
    let mut p = plan;
    loop {
        match &p.op {
            Op::ExpandCount { input, slot, .. } => {
                out.push(*slot);
                p = input;
            }
            Op::Filter { input, .. } => p = input,
            _ => return out,
        }
    }
}

/// The top `n` hops of `plan` (filters between): (whether they end on its `Argument` leaf,
/// whether a filter is among them).
fn chain_ends(plan: &Plan, n: usize) -> (bool, bool) {
    let mut p = plan;
    let (mut seen, mut filtered) = (0, false);
    loop {
        match &p.op {
            Op::Filter { input, .. } if seen < n => {
                filtered = true;
                p = input;
            }
            Op::Expand { input, .. } if seen < n => {
                seen += 1;
                p = input;
            }
            Op::Argument { .. } => return (seen == n, filtered),
            _ => return (false, filtered),
        }
    }
}
