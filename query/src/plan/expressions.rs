//! Expression compilation for the planner: AST expressions to `CExpr` in the current scope,
//! plan-time constant folding, and the rewrites over them (AND splitting, property-to-slot
//! replacement).

use super::*;

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
        Ok(self.fold(c))
    }

    /// Evaluates variable-free expressions once at plan time, so `datetime($since)` or `-5`
    /// reach the planner as constants (and can drive index ranges). An expression that fails
    /// here is left for run time, which reports the error only if it is reached.
    pub(super) fn fold(&self, c: CExpr) -> CExpr {
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
