//! Write planning: CREATE, MERGE, SET, REMOVE and DELETE clauses to `WriteOp`s, and the slot
//! remapping that gives MERGE's two branches one row layout.

use super::*;

impl Planner<'_> {
    // ---- writes ---------------------------------------------------------------------------------

    pub(super) fn plan_write(&mut self, clause: &Clause) -> Result<(String, WriteOp), QueryError> {
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
                // An undirected MERGE matches either way and creates left to right.
                let mut directed = m.pattern.clone();
                for (rel, _) in &mut directed.hops {
                    if rel.direction == RelDirection::Both {
                        rel.direction = RelDirection::Right;
                    }
                }
                self.plan_create_path(&directed, &mut create)?;
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

    pub(super) fn var_slot(&self, v: &str) -> Result<usize, QueryError> {
        self.lookup(v)
            .ok_or_else(|| QueryError::semantic(format!("variable `{v}` is not defined")))
    }

    pub(super) fn plan_set_item(&self, item: &SetItem) -> Result<SetOp, QueryError> {
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

    pub(super) fn plan_create_path(
        &mut self,
        path: &PathPattern,
        create: &mut CreatePattern,
    ) -> Result<(), QueryError> {
        // `CREATE (a)` of a bound `a` would create nothing.
        if let (Some(v), true) = (&path.start.variable, path.hops.is_empty()) {
            if self.lookup(v).is_some() {
                return Err(QueryError::semantic(format!(
                    "variable `{v}` is already bound; CREATE ({v}) would create nothing"
                )));
            }
        }
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
    pub(super) fn plan_create_node(
        &mut self,
        np: &NodePattern,
        create: &mut CreatePattern,
    ) -> Result<usize, QueryError> {
        if let Some(v) = &np.variable {
            if let Some(slot) = self.lookup(v) {
                if !np.labels.is_empty() || !np.properties.is_empty() {
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
