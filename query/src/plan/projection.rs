//! WITH / RETURN planning: projection and aggregation (including the degree-count shortcut), ORDER
//! BY, SKIP and LIMIT.

use super::*;

impl Planner<'_> {
    // ---- WITH / RETURN --------------------------------------------------------------------------

    /// Plans a projection; returns the plan and the new scope (column names -> slots).
    pub(super) fn plan_projection(
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
            // `WITH *` over no variables keeps the rows; `RETURN *` would return nothing.
            if names.is_empty() && !is_with {
                return Err(QueryError::semantic("RETURN * with no variables in scope"));
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
                (None, _) => item.column_name(),
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
                    // Outside its aggregates, the item may only read the grouping keys.
                    let was = self.post_aggregate.replace(true);
                    let c = self.compile(e, &replace, &mut collector);
                    self.post_aggregate.set(was);
                    outer.push((name.clone(), c?));
                }
                let mut specs = collector.map(|c| c.specs).unwrap_or_default();
                // compile() numbered the aggregate slots from next_slot; reserve them now.
                self.next_slot += specs.len();
                self.count_chain(&mut plan, &keys, &mut specs);
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
                self.unique_aggregate(&mut plan);
                self.try_read_model_aggregate(&mut plan);
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
            if !aggregating {
                if let Op::Project { input, items } = &mut plan.op {
                    let reads: Vec<usize> = items.iter().flat_map(|(_, e)| e.slot_list()).collect();
                    self.semi_chain(input, &reads);
                }
            }
            let slots: Vec<usize> = new_scope.iter().map(|(_, s)| *s).collect();
            // Rows unique in one of the projected slots (a scanned node carried through)
            // are distinct already.
            let unique = pipeline::unique_slots(&plan);
            if !slots.iter().any(|s| unique.contains(s)) {
                plan = self.op(
                    "",
                    Op::Distinct {
                        input: Box::new(plan),
                        slots,
                    },
                );
            }
        }
        let saved = std::mem::replace(&mut self.scope, order_scope);
        let result = self.plan_order_skip_limit(plan, p, &replace_exprs);
        self.scope = saved;
        Ok((result?, new_scope))
    }

    pub(super) fn plan_order_skip_limit(
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
            let c = planner.compile(e, &saved_empty, &mut None)?;
            // A count written in the query is checked now; one from a parameter when it runs.
            let mut has_param = false;
            e.walk(&mut |x| has_param |= matches!(x, Expr::Param(_)));
            match &c {
                CExpr::Const(Val::Int(i)) if *i < 0 && !has_param => Err(QueryError::semantic(
                    format!("{what} must be a non-negative integer, not {i}"),
                )),
                CExpr::Const(v) if !matches!(v, Val::Int(_)) && !has_param => {
                    Err(QueryError::semantic(format!(
                        "{what} must be a non-negative integer, not a {}",
                        v.type_name()
                    )))
                }
                _ => Ok(c),
            }
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
                self.push_topk_into_index(&mut plan, &keys, skip.as_ref(), &limit);
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
}
