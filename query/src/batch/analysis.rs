//! What the whole statement's plan says about slots (which are read, which relationship
//! types and uniqueness checks an expansion carries, what an UNWIND need not copy): the batch
//! compiler decides from it what a batch may skip.

#[allow(unused_imports)]
use super::*;

/// What the whole statement's plan says about slots, for deciding what a batch may skip.
#[derive(Debug, Default)]
pub(crate) struct Analysis {
    /// Slots read anywhere (expressions, DISTINCT, result columns).
    pub(super) used: Vec<bool>,
    /// Relationship types per relationship slot (empty: any type).
    pub(super) rel_types: HashMap<usize, Vec<String>>,
    /// Extra chunk columns for OPTIONAL MATCH origins (one per nesting level).
    pub(super) depth: usize,
    /// The plan is too deep for the batch compiler: everything runs on the row path.
    pub(super) off: bool,
    /// (types, relationships it must differ from) per expansion with such a check.
    pub(super) checks: Vec<(Vec<String>, Vec<usize>)>,
    /// Per UNWIND (by operator id): the slots no operator above it reads, which need not be
    /// copied into every row it makes.
    pub(super) dead: HashMap<usize, Vec<usize>>,
    /// Analyse this operator alone (for its own reads), not its inputs.
    pub(super) only: Option<usize>,
}

impl Analysis {
    /// Analyses a stage plan; `out_slots` None means every slot counts as read.
    pub(crate) fn new(plan: &Plan, width: usize, out_slots: Option<&[usize]>) -> Analysis {
        let mut a = Analysis {
            used: vec![out_slots.is_none(); width],
            ..Default::default()
        };
        if depth(plan) > MAX_DEPTH {
            a.off = true;
            return a;
        }
        for s in out_slots.unwrap_or(&[]) {
            a.mark(*s);
        }
        a.walk(plan, 1);
        if let Some(out) = out_slots {
            let mut live = vec![false; width];
            out.iter().for_each(|s| {
                if let Some(l) = live.get_mut(*s) {
                    *l = true;
                }
            });
            a.liveness(plan, live, 0);
        }
        // A relationship another expansion must differ from is read by that check, unless
        // the types alone keep them apart.
        for (types, others) in std::mem::take(&mut a.checks) {
            if !a.disjoint(&types, &others) {
                others.iter().for_each(|s| a.mark(*s));
            }
        }
        a
    }

    pub(super) fn mark(&mut self, s: usize) {
        if let Some(u) = self.used.get_mut(s) {
            *u = true;
        }
    }

    pub(super) fn expr(&mut self, e: &CExpr) {
        for s in e.slot_list() {
            self.mark(s);
        }
    }

    /// Records, for each UNWIND, the slots nothing above it reads (`live`: the slots its
    /// ancestors and the result read).
    pub(super) fn liveness(&mut self, plan: &Plan, live: Vec<bool>, level: usize) {
        if level > MAX_DEPTH {
            return;
        }
        let mut own = Analysis {
            used: vec![false; live.len()],
            only: Some(plan.id),
            ..Default::default()
        };
        own.walk(plan, 1);
        if let Op::Unwind { slot, .. } = &plan.op {
            let dead = (0..live.len()).filter(|s| !live[*s] && s != slot).collect();
            self.dead.insert(plan.id, dead);
        }
        let below: Vec<bool> = live.iter().zip(&own.used).map(|(a, b)| *a || *b).collect();
        for c in plan.inputs() {
            self.liveness(c, below.clone(), level + 1);
        }
    }

    pub(super) fn walk(&mut self, plan: &Plan, depth: usize) {
        if self.only.is_some_and(|id| id != plan.id) {
            return;
        }
        match &plan.op {
            Op::Once | Op::Argument { .. } | Op::StageInput | Op::CountLabel { .. } => {}
            Op::Scan { input, source, .. } => {
                match source {
                    ScanSource::Seek { value, .. } | ScanSource::ById { value } => self.expr(value),
                    ScanSource::Range { limit: Some(l), .. } => self.expr(l),
                    _ => {}
                }
                self.walk(input, depth);
            }
            Op::Expand {
                input,
                from,
                rel,
                to,
                types,
                rel_props,
                into,
                distinct_from,
                ..
            } => {
                if !distinct_from.is_empty() {
                    self.checks.push((types.clone(), distinct_from.clone()));
                }
                self.mark(*from);
                if *into {
                    self.mark(*to);
                }
                rel_props.iter().for_each(|(_, e)| self.expr(e));
                self.rel_types.insert(*rel, types.clone());
                self.walk(input, depth);
            }
            Op::Filter { input, predicate } => {
                self.expr(predicate);
                self.walk(input, depth);
            }
            Op::Project { input, items } => {
                items.iter().for_each(|(_, e)| self.expr(e));
                self.walk(input, depth);
            }
            Op::Aggregate { input, keys, aggs } => {
                keys.iter().for_each(|(_, e)| self.expr(e));
                aggs.iter().flat_map(|a| &a.arg).for_each(|e| self.expr(e));
                self.walk(input, depth);
            }
            Op::Distinct { input, slots } => {
                slots.iter().for_each(|s| self.mark(*s));
                self.walk(input, depth);
            }
            Op::Union { inputs, out } => {
                out.iter().for_each(|s| self.mark(*s));
                for (p, slots) in inputs {
                    slots.iter().for_each(|s| self.mark(*s));
                    self.walk(p, depth);
                }
            }
            Op::Sort { input, keys } => {
                keys.iter().for_each(|(e, _)| self.expr(e));
                self.walk(input, depth);
            }
            Op::TopK {
                input,
                keys,
                skip,
                limit,
            } => {
                keys.iter().for_each(|(e, _)| self.expr(e));
                skip.iter().for_each(|e| self.expr(e));
                self.expr(limit);
                self.walk(input, depth);
            }
            Op::Skip { input, count } | Op::Limit { input, count } => {
                self.expr(count);
                self.walk(input, depth);
            }
            Op::Unwind { input, expr, .. } => {
                self.expr(expr);
                self.walk(input, depth);
            }
            Op::Optional { input, inner, .. } => {
                self.depth = self.depth.max(depth);
                self.walk(input, depth);
                self.walk(inner, depth + 1);
            }
            Op::ExpandCount {
                input, from, hops, ..
            } => {
                self.mark(*from);
                hops.iter()
                    .flat_map(|h| &h.filters)
                    .for_each(|e| self.expr(e));
                self.walk(input, depth);
            }
            Op::ScanFilter {
                input, predicates, ..
            } => {
                predicates.iter().for_each(|e| self.expr(e));
                self.walk(input, depth);
            }
            Op::CountWhere { fallback, .. } | Op::ReachCount { fallback, .. } => {
                self.walk(fallback, depth)
            }
        }
    }

    /// The slots nothing above UNWIND `id` reads (None: not analysed, the plan is too deep).
    pub(crate) fn dead_after(&self, id: usize) -> Option<&[usize]> {
        self.dead.get(&id).map(Vec::as_slice)
    }

    pub(super) fn used(&self, s: usize) -> bool {
        self.used.get(s).copied().unwrap_or(true)
    }

    /// Whether an expansion over `types` can never meet a relationship bound in `others`
    /// (then MATCH's uniqueness holds without comparing relationships).
    pub(super) fn disjoint(&self, types: &[String], others: &[usize]) -> bool {
        others.iter().all(|o| match self.rel_types.get(o) {
            Some(t) => !types.is_empty() && !t.is_empty() && t.iter().all(|x| !types.contains(x)),
            None => false,
        })
    }
}
