//! Binary operators other than AND/OR/XOR: comparisons with Cypher's null and NaN rules,
//! arithmetic with overflow checks, string and list operators.

#[allow(unused_imports)]
use super::*;

pub(super) fn is_nan(v: &Val) -> bool {
    matches!(v, Val::Float(f) if f.is_nan())
}

pub(super) fn overflow() -> QueryError {
    QueryError::Arithmetic("integer overflow".into())
}

/// Binary operators other than AND/OR/XOR.
pub(crate) fn binary(op: BinaryOp, a: Val, b: Val) -> Result<Val, QueryError> {
    use std::cmp::Ordering::*;
    Ok(match op {
        BinaryOp::Eq => equals(&a, &b).map_or(Val::Null, Val::Bool),
        BinaryOp::Ne => equals(&a, &b).map_or(Val::Null, |x| Val::Bool(!x)),
        // Every ordering comparison with NaN is false.
        BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge
            if is_nan(&a) && b.as_f64().is_some() || is_nan(&b) && a.as_f64().is_some() =>
        {
            Val::Bool(false)
        }
        BinaryOp::Lt => compare(&a, &b).map_or(Val::Null, |o| Val::Bool(o == Less)),
        BinaryOp::Le => compare(&a, &b).map_or(Val::Null, |o| Val::Bool(o != Greater)),
        BinaryOp::Gt => compare(&a, &b).map_or(Val::Null, |o| Val::Bool(o == Greater)),
        BinaryOp::Ge => compare(&a, &b).map_or(Val::Null, |o| Val::Bool(o != Less)),
        BinaryOp::In => match b {
            Val::Null => Val::Null,
            Val::List(items) => {
                // true if any element is equal; otherwise null if any comparison was unknown.
                let mut unknown = false;
                for item in &items {
                    match equals(&a, item) {
                        Some(true) => return Ok(Val::Bool(true)),
                        None => unknown = true,
                        Some(false) => {}
                    }
                }
                if unknown {
                    Val::Null
                } else {
                    Val::Bool(false)
                }
            }
            other => {
                return Err(QueryError::type_err(format!(
                    "IN needs a list on its right, got a {}",
                    other.type_name()
                )))
            }
        },
        BinaryOp::StartsWith | BinaryOp::EndsWith | BinaryOp::Contains => match (&a, &b) {
            (Val::Str(x), Val::Str(y)) => Val::Bool(match op {
                BinaryOp::StartsWith => x.starts_with(y.as_str()),
                BinaryOp::EndsWith => x.ends_with(y.as_str()),
                _ => x.contains(y.as_str()),
            }),
            _ => Val::Null,
        },
        BinaryOp::Add | BinaryOp::Sub if crate::temporal::add(&a, &b, 1).is_some() => {
            let sign = if op == BinaryOp::Add { 1 } else { -1 };
            crate::temporal::add(&a, &b, sign).unwrap_or(Ok(Val::Null))?
        }
        BinaryOp::Mul | BinaryOp::Div
            if crate::temporal::scale(&a, &b, op == BinaryOp::Div).is_some() =>
        {
            crate::temporal::scale(&a, &b, op == BinaryOp::Div).unwrap_or(Ok(Val::Null))?
        }
        BinaryOp::Add => match (a, b) {
            (Val::Null, _) | (_, Val::Null) => Val::Null,
            (Val::Int(x), Val::Int(y)) => Val::Int(x.checked_add(y).ok_or_else(overflow)?),
            (Val::Str(x), Val::Str(y)) => Val::Str(x + &y),
            (Val::List(mut x), Val::List(y)) => {
                x.extend(y);
                Val::List(x)
            }
            (Val::List(mut x), y) => {
                x.push(y);
                Val::List(x)
            }
            (x, Val::List(mut y)) => {
                y.insert(0, x);
                Val::List(y)
            }
            (x, y) => float_op(op, &x, &y)?,
        },
        BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div | BinaryOp::Mod => match (a, b) {
            (Val::Null, _) | (_, Val::Null) => Val::Null,
            (Val::Int(x), Val::Int(y)) => Val::Int(
                match op {
                    BinaryOp::Sub => x.checked_sub(y),
                    BinaryOp::Mul => x.checked_mul(y),
                    BinaryOp::Div if y == 0 => {
                        return Err(QueryError::Arithmetic("division by zero".into()))
                    }
                    BinaryOp::Div => x.checked_div(y),
                    _ if y == 0 => return Err(QueryError::Arithmetic("modulo by zero".into())),
                    _ => x.checked_rem(y),
                }
                .ok_or_else(overflow)?,
            ),
            (x, y) => float_op(op, &x, &y)?,
        },
        BinaryOp::Pow => match (a, b) {
            (Val::Null, _) | (_, Val::Null) => Val::Null,
            (x, y) => float_op(op, &x, &y)?,
        },
        BinaryOp::And | BinaryOp::Or | BinaryOp::Xor => {
            return Err(QueryError::type_err(
                "logical operator evaluated as arithmetic",
            ))
        }
    })
}

pub(super) fn float_op(op: BinaryOp, a: &Val, b: &Val) -> Result<Val, QueryError> {
    let (Some(x), Some(y)) = (a.as_f64(), b.as_f64()) else {
        return Err(QueryError::type_err(format!(
            "cannot apply {} to a {} and a {}",
            op.symbol(),
            a.type_name(),
            b.type_name()
        )));
    };
    Ok(Val::Float(match op {
        BinaryOp::Add => x + y,
        BinaryOp::Sub => x - y,
        BinaryOp::Mul => x * y,
        BinaryOp::Div => x / y,
        BinaryOp::Mod => x % y,
        _ => x.powf(y),
    }))
}
