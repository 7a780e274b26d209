//! Expression compilation for the planner: AST expressions to `CExpr` in the current scope,
//! plan-time constant folding, and the rewrites over them (AND splitting, property-to-slot
//! replacement).

use super::*;
use crate::eval::{SubQuery, SubQueryKind};

impl Planner<'_> {
    /// Compiles an expression in the current scope. `replace` maps whole sub-expressions to
    /// slots (projected items); `aggs` collects aggregate calls where they are allowed.
    pub(super) fn compile(
        &self,
        e: &Expr,
        replace: &[(&Expr, usize)],
        aggs: &mut Option<AggCollector>,
    ) -> Result<CExpr, QueryError> {
        let c = self.compile_inner(e, replace, aggs)?;
        self.fold(c)
    }

    /// Evaluates variable-free expressions once at plan time, so `datetime($since)` or `-5`
    /// reach the planner as constants (and can drive index ranges). A type error here is a
    /// static one (`RETURN 123 AND true`), reported now; any other failure is left for run
    /// time, which reports it only if the expression is reached.
    pub(super) fn fold(&self, c: CExpr) -> Result<CExpr, QueryError> {
        // Children are folded first: one that is not constant now (it reads the row, or failed
        // and was left for run time) keeps its parents from folding too.
        if matches!(
            c,
            CExpr::Const(_) | CExpr::Slot(_) | CExpr::Local(_) | CExpr::SubQuery(_)
        ) || !c.children().iter().all(|x| matches!(x, CExpr::Const(_)))
            || c.has_locals()
            || matches!(c, CExpr::Func(Func::Rand, _))
        {
            return Ok(c);
        }
        // Logical operators on constants: every operand must be a boolean (or null), even one
        // that short-circuiting would never look at.
        if let CExpr::And(..) | CExpr::Or(..) | CExpr::Xor(..) | CExpr::Not(_) = &c {
            for x in c.children() {
                if let CExpr::Const(v) = x {
                    if !matches!(v, Val::Bool(_) | Val::Null) {
                        return Err(QueryError::type_err(format!(
                            "a logical operator needs booleans, got a {}",
                            v.type_name()
                        )));
                    }
                }
            }
        }
        if matches!(c, CExpr::Func(Func::Temporal(_), _)) {
            // `datetime()` and friends read the statement's clock: the folded constant holds
            // only for this run.
            self.assumed.read_clock();
        }
        let far = std::time::Instant::now() + std::time::Duration::from_secs(3600);
        let cx = crate::eval::Cx::new(self.g, self.limits, far, 0, false);
        match crate::eval::eval(&c, &[], &cx) {
            Ok(v) => Ok(CExpr::Const(v)),
            // A function's argument errors are the TCK's runtime ArgumentErrors.
            Err(e @ QueryError::Type(_)) if !matches!(c, CExpr::Func(..)) => Err(e),
            Err(_) => Ok(c),
        }
    }

    pub(super) fn compile_inner(
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
            Expr::Variable(v) if self.locals.borrow().iter().any(|n| n == v) => {
                let level = self.locals.borrow().iter().rposition(|n| n == v);
                CExpr::Local(level.unwrap_or_default())
            }
            Expr::Variable(v) if self.post_aggregate.get() => {
                return Err(QueryError::semantic(format!(
                    "`{v}` is read next to an aggregate but is not a grouping key (return it, \
                     or an expression of it, as an item of its own)"
                )))
            }
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
                        let kind = aggregate_kind(name)
                            .ok_or_else(|| QueryError::UnknownFunction(name.clone()))?;
                        let percentile =
                            matches!(kind, AggKind::PercentileDisc | AggKind::PercentileCont);
                        if args.len() != if percentile { 2 } else { 1 } {
                            return Err(QueryError::semantic(format!(
                                "{name}() does not take {} argument(s)",
                                args.len()
                            )));
                        }
                        // Aggregates do not nest; their arguments read the rows being grouped.
                        let was = self.post_aggregate.replace(false);
                        let arg = (|| -> Result<CExpr, QueryError> {
                            Ok(if percentile {
                                CExpr::List(vec![
                                    self.compile(&args[0], &[], &mut None)?,
                                    self.compile(&args[1], &[], &mut None)?,
                                ])
                            } else {
                                self.compile(&args[0], &[], &mut None)?
                            })
                        })();
                        self.post_aggregate.set(was);
                        let arg = arg?;
                        (kind, *distinct, Some(arg))
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
            Expr::Slice(..)
            | Expr::Comprehension { .. }
            | Expr::Quantified { .. }
            | Expr::Reduce { .. }
            | Expr::Case { .. }
            | Expr::Exists { .. }
            | Expr::Pattern(_)
            | Expr::PatternComprehension { .. } => self.compile_more(e, replace, aggs)?,
            Expr::Call { name, args, .. }
                if name.eq_ignore_ascii_case("exists") && args.len() == 1 =>
            {
                self.compile_more(e, replace, aggs)?
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
}

impl Planner<'_> {
    /// The expression kinds beyond the original subset, compiled in a frame of their own: the
    /// compiler recurses once per tree level, and keeping these arms' temporaries out of
    /// `compile_inner`'s frame keeps the deepest accepted tree within a 2 MiB stack.
    #[inline(never)]
    fn compile_more(
        &self,
        e: &Expr,
        replace: &[(&Expr, usize)],
        aggs: &mut Option<AggCollector>,
    ) -> Result<CExpr, QueryError> {
        let c = |x: &Expr, aggs: &mut Option<AggCollector>| {
            self.compile(x, replace, aggs).map(Box::new)
        };
        Ok(match e {
            Expr::Slice(list, from, to) => {
                let list = c(list, aggs)?;
                let from = from.as_deref().map(|x| c(x, aggs)).transpose()?;
                CExpr::Slice(list, from, to.as_deref().map(|x| c(x, aggs)).transpose()?)
            }
            Expr::Comprehension {
                variable,
                list,
                predicate,
                projection,
            } => {
                let list = c(list, aggs)?;
                let (level, (predicate, projection)) = self.with_locals(&[variable], || {
                    let p = predicate.as_deref().map(|x| c(x, aggs)).transpose()?;
                    Ok((p, projection.as_deref().map(|x| c(x, aggs)).transpose()?))
                })?;
                CExpr::Comprehension {
                    level,
                    list,
                    predicate,
                    projection,
                }
            }
            Expr::Quantified {
                quantifier,
                variable,
                list,
                predicate,
            } => {
                let list = c(list, aggs)?;
                let (level, predicate) = self.with_locals(&[variable], || c(predicate, aggs))?;
                CExpr::Quantified {
                    quantifier: *quantifier,
                    level,
                    list,
                    predicate,
                }
            }
            Expr::Reduce {
                accumulator,
                init,
                variable,
                list,
                expr,
            } => {
                let init = c(init, aggs)?;
                let list = c(list, aggs)?;
                let (level, expr) = self.with_locals(&[accumulator, variable], || c(expr, aggs))?;
                CExpr::Reduce {
                    level,
                    init,
                    list,
                    expr,
                }
            }
            Expr::Case {
                operand,
                whens,
                else_,
            } => CExpr::Case {
                operand: operand.as_deref().map(|x| c(x, aggs)).transpose()?,
                whens: whens
                    .iter()
                    .map(|(w, t)| {
                        Ok((
                            self.compile(w, replace, aggs)?,
                            self.compile(t, replace, aggs)?,
                        ))
                    })
                    .collect::<Result<_, QueryError>>()?,
                else_: else_.as_deref().map(|x| c(x, aggs)).transpose()?,
            },
            Expr::Exists { clauses, .. } => self.exists_subquery(clauses)?,
            Expr::Pattern(p) => {
                if !self.in_predicate.get() {
                    return Err(QueryError::semantic(format!(
                        "a pattern expression ({p}) may only stand in WHERE or exists(); use a \
                         pattern comprehension [{p} | ...] for its matches"
                    )));
                }
                self.subquery(p, None, None)?
            }
            Expr::PatternComprehension {
                pattern,
                predicate,
                projection,
            } => self.subquery(pattern, predicate.as_deref(), Some(projection))?,
            // `exists((a)-->())` tests for a match, `exists(n.key)` for a value.
            Expr::Call { name, args, .. }
                if matches!(args.as_slice(), [Expr::Pattern(_)])
                    && name.eq_ignore_ascii_case("exists") =>
            {
                let Some(Expr::Pattern(p)) = args.first() else {
                    return Err(QueryError::semantic("a pattern was expected"));
                };
                self.subquery(p, None, None)?
            }
            Expr::Call { name, args, .. }
                if name.eq_ignore_ascii_case("exists") && args.len() == 1 =>
            {
                CExpr::IsNull(c(&args[0], aggs)?, true)
            }
            other => {
                return Err(QueryError::semantic(format!(
                    "internal: {other} is not an extended expression"
                )))
            }
        })
    }
}

/// Argument ids of pattern plans start here, above any OPTIONAL MATCH's, and each nesting
/// level adds as much again.
const SUBQUERY_ARGS: usize = 1_000;

impl Planner<'_> {
    /// Compiles a WHERE predicate (where a bare pattern may stand).
    pub(super) fn compile_predicate(&self, e: &Expr) -> Result<CExpr, QueryError> {
        let was = self.in_predicate.replace(true);
        let out = self.compile(e, &[], &mut None);
        self.in_predicate.set(was);
        out
    }

    /// Plans a pattern expression as a plan run per row, starting from an `Argument` holding
    /// the row: a child planner sees the current variables and the local ones (copied into
    /// slots of its own), and numbers its slots from here on (slots the parent allocates later
    /// may reuse those numbers: the plan works on its own copy of the row).
    fn subquery(
        &self,
        pattern: &PathPattern,
        predicate: Option<&Expr>,
        projection: Option<&Expr>,
    ) -> Result<CExpr, QueryError> {
        let mut child = self.child();
        if projection.is_none() {
            // A pattern predicate only tests the variables it is given.
            if let Some(v) = pattern
                .variables()
                .into_iter()
                .find(|v| self.lookup(v).is_none() && !self.locals.borrow().iter().any(|l| l == v))
            {
                return Err(QueryError::semantic(format!(
                    "variable `{v}` is not defined (a pattern predicate cannot introduce variables)"
                )));
            }
        }
        let mut locals = Vec::new();
        for (level, name) in self.locals.borrow().iter().enumerate() {
            let slot = child.new_slot();
            child.scope.push((name.clone(), slot));
            locals.push((level, slot));
        }
        let reads: Vec<usize> = pattern
            .variables()
            .into_iter()
            .filter_map(|v| self.lookup(v))
            .chain(
                pattern
                    .property_exprs()
                    .into_iter()
                    .chain(predicate)
                    .chain(projection)
                    .flat_map(|e| {
                        let mut vars = Vec::new();
                        e.walk(&mut |x| {
                            if let Expr::Variable(v) = x {
                                vars.push(v.clone());
                            }
                        });
                        vars
                    })
                    .filter_map(|v| self.lookup(&v)),
            )
            .collect();
        let arg = child.next_arg;
        child.next_arg += 1;
        let leaf = child.op("", Op::Argument { arg });
        let m = Match {
            optional: false,
            patterns: vec![pattern.clone()],
            where_: predicate.cloned(),
        };
        let plan = child.plan_match(leaf, &m)?;
        let kind = match projection {
            Some(e) => SubQueryKind::Collect(child.compile(e, &[], &mut None)?),
            None => SubQueryKind::Exists,
        };
        Ok(CExpr::SubQuery(std::sync::Arc::new(SubQuery {
            plan,
            arg,
            width: child.next_slot,
            reads,
            locals,
            kind,
        })))
    }

    /// `EXISTS { ... }`: the body's clauses planned by a child planner from an `Argument`
    /// leaf holding the row (its RETURN, if any, does not matter: only whether a row comes).
    fn exists_subquery(&self, clauses: &[Clause]) -> Result<CExpr, QueryError> {
        let mut child = self.child();
        let mut locals = Vec::new();
        for (level, name) in self.locals.borrow().iter().enumerate() {
            let slot = child.new_slot();
            child.scope.push((name.clone(), slot));
            locals.push((level, slot));
        }
        // Every current variable may be read by the body.
        let reads: Vec<usize> = self.scope.iter().map(|(_, s)| *s).collect();
        let arg = child.next_arg;
        child.next_arg += 1;
        let mut plan = child.op("", Op::Argument { arg });
        for c in clauses {
            plan = match c {
                Clause::Return(r) => child.plan_projection(plan, r, false)?.0,
                other => child.plan_read_clause(plan, other)?,
            };
        }
        Ok(CExpr::SubQuery(std::sync::Arc::new(SubQuery {
            plan,
            arg,
            width: child.next_slot,
            reads,
            locals,
            kind: SubQueryKind::Exists,
        })))
    }

    /// A planner for a subquery: the current variables, slots numbered from here on.
    fn child(&self) -> Planner<'_> {
        Planner {
            g: self.g,
            assumed: self.assumed,
            params: self.params,
            limits: self.limits,
            deadline: self.deadline,
            next_slot: self.next_slot,
            next_op: 0,
            next_arg: self.next_arg + SUBQUERY_ARGS,
            scope: self.scope.clone(),
            locals: std::cell::RefCell::new(Vec::new()),
            next_hidden: 0,
            kinds: self.kinds.clone(),
            in_predicate: std::cell::Cell::new(false),
            post_aggregate: std::cell::Cell::new(false),
        }
    }

    /// Compiles with `names` bound as local variables; returns the level of the first.
    fn with_locals<T>(
        &self,
        names: &[&String],
        f: impl FnOnce() -> Result<T, QueryError>,
    ) -> Result<(usize, T), QueryError> {
        let level = self.locals.borrow().len();
        self.locals
            .borrow_mut()
            .extend(names.iter().map(|n| (*n).clone()));
        let out = f();
        self.locals.borrow_mut().truncate(level);
        Ok((level, out?))
    }
}

pub(super) fn split_and(e: &Expr, out: &mut Vec<Expr>) {
    match e {
        Expr::Binary(BinaryOp::And, a, b) => {
            split_and(a, out);
            split_and(b, out);
        }
        other => out.push(other.clone()),
    }
}

/// `e` with every `n.key` of the node in `slot` replaced by a slot of its own (one per key,
/// allocated by `alloc` and listed in `keys`).
pub(super) fn replace_props(
    e: &CExpr,
    slot: usize,
    keys: &mut Vec<(String, usize)>,
    alloc: &mut dyn FnMut() -> usize,
) -> CExpr {
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
        other => other.map_children(&mut |x| replace_props(x, slot, keys, alloc)),
    }
}
