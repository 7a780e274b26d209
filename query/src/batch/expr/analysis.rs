//! What an expression reads and whether it is pure, and its rewriting to read scratch slots.

#[allow(unused_imports)]
use super::*;
use crate::functions::Func;

/// The (slot, key) when `e` reads exactly one node property and no slot otherwise.
pub(super) fn single_prop(e: &CExpr) -> Option<(usize, &str)> {
    fn walk<'e>(e: &'e CExpr, found: &mut Option<(usize, &'e str)>) -> bool {
        match e {
            CExpr::Const(_) => true,
            CExpr::Slot(_) => false,
            CExpr::Prop(base, key) => match &**base {
                CExpr::Slot(s) => match found {
                    Some((fs, fk)) => *fs == *s && *fk == key.as_str(),
                    None => {
                        *found = Some((*s, key.as_str()));
                        true
                    }
                },
                other => walk(other, found),
            },
            CExpr::Not(x) | CExpr::Neg(x) | CExpr::IsNull(x, _) => walk(x, found),
            CExpr::Index(a, b)
            | CExpr::And(a, b)
            | CExpr::Or(a, b)
            | CExpr::Xor(a, b)
            | CExpr::Bin(_, a, b) => walk(a, found) && walk(b, found),
            CExpr::List(items) | CExpr::Func(_, items) => items.iter().all(|x| walk(x, found)),
            CExpr::Map(entries) => entries.iter().all(|(_, x)| walk(x, found)),
            CExpr::Case {
                operand,
                whens,
                else_,
            } => {
                operand.iter().chain(else_).all(|x| walk(x, found))
                    && whens.iter().all(|(w, t)| walk(w, found) && walk(t, found))
            }
            CExpr::Slice(x, from, to) => {
                walk(x, found) && from.iter().chain(to).all(|y| walk(y, found))
            }
            // Label tests and any kind this module does not know: not a pure property function.
            _ => false,
        }
    }
    let mut found = None;
    walk(e, &mut found).then_some(())?;
    found
}

/// Whether `e` gives the same value whenever its inputs are the same (so one evaluation per
/// distinct input serves every row). Only the kinds and functions known here qualify.
pub(in crate::batch) fn pure(e: &CExpr) -> bool {
    match e {
        CExpr::Const(_) | CExpr::Slot(_) => true,
        CExpr::Prop(x, _) | CExpr::Not(x) | CExpr::Neg(x) | CExpr::IsNull(x, _) => pure(x),
        CExpr::Index(a, b)
        | CExpr::And(a, b)
        | CExpr::Or(a, b)
        | CExpr::Xor(a, b)
        | CExpr::Bin(_, a, b) => pure(a) && pure(b),
        CExpr::List(items) => items.iter().all(pure),
        CExpr::Map(entries) => entries.iter().all(|(_, x)| pure(x)),
        CExpr::Case {
            operand,
            whens,
            else_,
        } => {
            operand.iter().chain(else_).all(|x| pure(x))
                && whens.iter().all(|(w, t)| pure(w) && pure(t))
        }
        CExpr::Slice(x, from, to) => pure(x) && from.iter().chain(to).all(|y| pure(y)),
        CExpr::Func(f, items) => {
            // A temporal constructor without arguments reads the clock: not pure.
            let temporal = matches!(f, Func::Temporal(_)) && !items.is_empty();
            (temporal
                || matches!(
                    f,
                    Func::Size
                        | Func::Coalesce
                        | Func::ToLower
                        | Func::ToUpper
                        | Func::Trim
                        | Func::ToString
                        | Func::ToInteger
                        | Func::ToFloat
                        | Func::Abs
                        | Func::Round
                        | Func::Floor
                        | Func::Ceil
                        | Func::Head
                        | Func::Last
                ))
                && items.iter().all(pure)
        }
        _ => false,
    }
}

/// The property reads `n.key` of slots in `e` (kinds this module knows; others are left to
/// the row evaluator), each given a scratch slot from `first` on.
pub(super) fn collect_props<'e>(
    e: &'e CExpr,
    out: &mut Vec<(usize, usize, &'e str)>,
    first: usize,
) {
    match e {
        CExpr::Prop(base, key) => match &**base {
            CExpr::Slot(s) => {
                if !out.iter().any(|(_, ps, pk)| ps == s && *pk == key.as_str()) {
                    out.push((first + out.len(), *s, key.as_str()));
                }
            }
            other => collect_props(other, out, first),
        },
        CExpr::Not(x) | CExpr::Neg(x) | CExpr::IsNull(x, _) | CExpr::HasLabels(x, _) => {
            collect_props(x, out, first)
        }
        CExpr::Index(a, b)
        | CExpr::And(a, b)
        | CExpr::Or(a, b)
        | CExpr::Xor(a, b)
        | CExpr::Bin(_, a, b) => {
            collect_props(a, out, first);
            collect_props(b, out, first);
        }
        CExpr::List(items) | CExpr::Func(_, items) => {
            items.iter().for_each(|x| collect_props(x, out, first))
        }
        CExpr::Map(entries) => entries
            .iter()
            .for_each(|(_, x)| collect_props(x, out, first)),
        CExpr::Case {
            operand,
            whens,
            else_,
        } => {
            for x in operand.iter().chain(else_) {
                collect_props(x, out, first);
            }
            for (w, t) in whens {
                collect_props(w, out, first);
                collect_props(t, out, first);
            }
        }
        CExpr::Slice(x, from, to) => {
            collect_props(x, out, first);
            for y in from.iter().chain(to) {
                collect_props(y, out, first);
            }
        }
        _ => {}
    }
}

/// `e` with each property read `slot.key` for which `to` names a scratch slot replaced by a
/// read of that slot.
pub(super) fn rewrite(e: &CExpr, to: &mut dyn FnMut(usize, &str) -> Option<usize>) -> CExpr {
    replace(e, &mut |x| match x {
        CExpr::Prop(base, key) => match base.as_ref() {
            CExpr::Slot(s) => to(*s, key).map(CExpr::Slot),
            _ => None,
        },
        _ => None,
    })
}

/// `e` with every subexpression for which `f` gives a replacement replaced (outermost first).
/// Kinds this module does not know are kept whole: the row evaluator then reads their
/// properties itself (slower, never different), and they never read a slot the batch
/// executor leaves unset.
pub(in crate::batch) fn replace(e: &CExpr, f: &mut dyn FnMut(&CExpr) -> Option<CExpr>) -> CExpr {
    if let Some(x) = f(e) {
        return x;
    }
    let mut b = |x: &CExpr| Box::new(replace(x, f));
    match e {
        CExpr::Prop(x, k) => CExpr::Prop(b(x), k.clone()),
        CExpr::Not(x) => CExpr::Not(b(x)),
        CExpr::Neg(x) => CExpr::Neg(b(x)),
        CExpr::IsNull(x, n) => CExpr::IsNull(b(x), *n),
        CExpr::HasLabels(x, l) => CExpr::HasLabels(b(x), l.clone()),
        CExpr::Index(x, y) => CExpr::Index(b(x), b(y)),
        CExpr::And(x, y) => CExpr::And(b(x), b(y)),
        CExpr::Or(x, y) => CExpr::Or(b(x), b(y)),
        CExpr::Xor(x, y) => CExpr::Xor(b(x), b(y)),
        CExpr::Bin(op, x, y) => CExpr::Bin(*op, b(x), b(y)),
        CExpr::List(items) => CExpr::List(items.iter().map(|x| replace(x, f)).collect()),
        CExpr::Func(fun, items) => CExpr::Func(*fun, items.iter().map(|x| replace(x, f)).collect()),
        CExpr::Map(entries) => CExpr::Map(
            entries
                .iter()
                .map(|(k, x)| (k.clone(), replace(x, f)))
                .collect(),
        ),
        CExpr::Case {
            operand,
            whens,
            else_,
        } => CExpr::Case {
            operand: operand.as_deref().map(&mut b),
            whens: whens.iter().map(|(w, t)| (*b(w), *b(t))).collect(),
            else_: else_.as_deref().map(&mut b),
        },
        CExpr::Slice(x, from, to) => {
            CExpr::Slice(b(x), from.as_deref().map(&mut b), to.as_deref().map(&mut b))
        }
        other => other.clone(),
    }
}
