//! MATCH planning: binding a pattern's nodes and relationships, placing WHERE conjuncts as soon as
//! their variables are bound, and fusing property filters into leaf scans.

use super::explain::scan_details;
use super::expressions::{replace_props, split_and};
use super::*;
use crate::eval::PathPart;

/// Prefix of the variables named paths give their anonymous elements (a control character:
/// no query names a variable so without backticks, and these never reach the query's scope).
const HIDDEN: &str = "\u{1}path";

impl Planner<'_> {
    // ---- MATCH ----------------------------------------------------------------------------------

    pub(super) fn plan_match(&mut self, input: Plan, m: &Match) -> Result<Plan, QueryError> {
        if !m.optional {
            return self.plan_match_inner(input, m);
        }
        let arg = self.next_arg;
        self.next_arg += 1;
        let leaf = self.op("", Op::Argument { arg });
        let inner = self.plan_match_inner(leaf, m)?;
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
    }

    /// The pattern, its WHERE and its named paths over `input`.
    fn plan_match_inner(&mut self, input: Plan, m: &Match) -> Result<Plan, QueryError> {
        if m.patterns.iter().all(|p| p.variable.is_none()) {
            return self.plan_pattern(input, &m.patterns, m.where_.as_ref());
        }
        // Named paths: every element gets a variable (a hidden one where the query has none)
        // so the path can be assembled from the bound slots; WHERE may read the path, so it
        // runs after.
        let patterns = self.name_path_elements(&m.patterns);
        let mut plan = self.plan_pattern(input, &patterns, None)?;
        plan = self.bind_paths(plan, &patterns)?;
        if let Some(w) = &m.where_ {
            let predicate = self.compile_predicate(w)?;
            plan = self.op(
                w.to_string(),
                Op::Filter {
                    input: Box::new(plan),
                    predicate,
                },
            );
        }
        Ok(plan)
    }

    /// The patterns with a hidden variable on every node and relationship of a named path that
    /// has none.
    fn name_path_elements(&mut self, patterns: &[PathPattern]) -> Vec<PathPattern> {
        let mut out = patterns.to_vec();
        for p in out.iter_mut().filter(|p| p.variable.is_some()) {
            let mut fresh = || {
                self.next_hidden += 1;
                format!("{HIDDEN}{}", self.next_hidden)
            };
            if p.start.variable.is_none() {
                p.start.variable = Some(fresh());
            }
            for (rel, node) in &mut p.hops {
                if rel.variable.is_none() {
                    rel.variable = Some(fresh());
                }
                if node.variable.is_none() {
                    node.variable = Some(fresh());
                }
            }
        }
        out
    }

    /// Projects each named path from its elements' slots, then drops the hidden variables.
    fn bind_paths(&mut self, mut plan: Plan, patterns: &[PathPattern]) -> Result<Plan, QueryError> {
        for p in patterns {
            let Some(var) = &p.variable else { continue };
            if self.lookup(var).is_some() {
                return Err(QueryError::semantic(format!(
                    "path variable `{var}` is already bound"
                )));
            }
            let slot_of = |v: &Option<String>| {
                v.as_ref()
                    .and_then(|v| self.lookup(v))
                    .map(CExpr::Slot)
                    .ok_or_else(|| QueryError::semantic("a path element has no variable"))
            };
            let mut parts = vec![(PathPart::Node, slot_of(&p.start.variable)?)];
            for (rel, node) in &p.hops {
                let kind = if rel.length.is_some() {
                    PathPart::Rels
                } else {
                    PathPart::Rel
                };
                parts.push((kind, slot_of(&rel.variable)?));
                parts.push((PathPart::Node, slot_of(&node.variable)?));
            }
            let slot = self.new_slot();
            self.kinds.insert(slot, VarKind::Path);
            plan = self.op(
                format!("{} = path", p.variable.as_deref().unwrap_or("")),
                Op::Project {
                    input: Box::new(plan),
                    items: vec![(slot, CExpr::Path(parts))],
                },
            );
            self.scope.push((var.clone(), slot));
        }
        self.scope.retain(|(n, _)| !n.starts_with(HIDDEN));
        Ok(plan)
    }

    /// Binds the pattern's variables (adding them to the scope) and plans scans, expansions and
    /// filters over `input`.
    pub(super) fn plan_pattern(
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
        let mut rebound: Vec<(usize, usize, String)> = Vec::new();
        for path in patterns {
            let mut prev = self.bind_node(&path.start, &mut nodes, &mut raw_props)?;
            let mut prev_np = &path.start;
            for (rel, node) in &path.hops {
                let next = self.bind_node(node, &mut nodes, &mut raw_props)?;
                let kind = if rel.length.is_some() {
                    VarKind::Relationships
                } else {
                    VarKind::Relationship
                };
                let slot = match &rel.variable {
                    // Bound by an earlier clause: this MATCH must find that relationship
                    // (walked into a slot of its own, then compared).
                    Some(v) if self.lookup(v).is_some_and(|s| bound_before.contains(&s)) => {
                        let old = self.lookup(v).unwrap_or_default();
                        self.check_kind(v, old, kind)?;
                        let s = self.new_slot();
                        rebound.push((s, old, v.clone()));
                        s
                    }
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
                self.kinds.insert(slot, kind);
                // Paths longer than the hop budget are an error when one is actually found
                // (see `Expand`), not a refusal of the pattern.
                let hops = rel
                    .length
                    .map(|VarLength { min, max }| (min.unwrap_or(1), max.unwrap_or(u32::MAX)));
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
        for (new, old, name) in rebound {
            let expr = CExpr::Bin(
                BinaryOp::Eq,
                Box::new(CExpr::Slot(new)),
                Box::new(CExpr::Slot(old)),
            );
            conjuncts.push(Conjunct {
                slots: expr.slot_list(),
                expr,
                text: format!("{name} is the bound relationship"),
                applied: false,
            });
        }
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
                let expr = self.compile_predicate(&part)?;
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
            self.check_deadline()?;
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
                if !forward && r.hops.is_some() {
                    // Walked right to left: the list must read in the pattern's order.
                    plan = self.op(
                        "",
                        Op::Project {
                            input: Box::new(plan),
                            items: vec![(
                                r.slot,
                                CExpr::Func(Func::Reverse, vec![CExpr::Slot(r.slot)]),
                            )],
                        },
                    );
                }
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
            let label_scan = matches!(
                &plan.op,
                Op::Scan {
                    source: ScanSource::Label(_),
                    ..
                }
            );
            if !leaf && label_scan {
                equality_first(&mut conjuncts, slot, &bound);
            }
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
    pub(super) fn fuse_scan_filters(&mut self, plan: Plan) -> Plan {
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
    pub(super) fn bind_node<'e>(
        &mut self,
        np: &'e NodePattern,
        nodes: &mut Vec<PNode>,
        raw_props: &mut Vec<(usize, &'e str, &'e Expr)>,
    ) -> Result<usize, QueryError> {
        let slot = match &np.variable {
            Some(v) => match self.lookup(v) {
                Some(s) => {
                    self.check_kind(v, s, VarKind::Node)?;
                    s
                }
                None => {
                    let s = self.new_slot();
                    self.scope.push((v.clone(), s));
                    s
                }
            },
            None => self.new_slot(),
        };
        self.kinds.insert(slot, VarKind::Node);
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
    pub(super) fn apply_ready(
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
}

/// Over a label scan that crosses input rows, the first ready `n.key = value` (the value read
/// from the row) runs before the other ready conjuncts: the batch executor then looks each
/// row's value up among the label's nodes instead of testing every pair (`ScanEq`). Filters
/// commute; only which of two failing conjuncts reports its error first can change, and the
/// batch and row paths follow the same order.
fn equality_first(conjuncts: &mut Vec<Conjunct>, slot: usize, bound: &[usize]) {
    let ready = |c: &Conjunct| !c.applied && c.slots.iter().all(|s| bound.contains(s));
    let Some(first) = conjuncts.iter().position(ready) else {
        return;
    };
    let eq = conjuncts
        .iter()
        .position(|c| ready(c) && super::scan::equality_on(&c.expr, slot).is_some());
    if let Some(j) = eq.filter(|j| *j > first) {
        let c = conjuncts.remove(j);
        conjuncts.insert(first, c);
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
