//! Typed arithmetic kernels: `+ - * / % ^`, unary minus and the comparisons over whole
//! columns of integers or floats (the model's columns read in place for a label scan's chunk,
//! otherwise each node's value), with the row evaluator's semantics (`eval::binary`): null in,
//! null out; integer with integer stays integer, with overflow, division and modulo by zero
//! errors; any float makes the operation float (`i as f64`); `^` is always float; an ordering
//! comparison with NaN is false, equality of an integer and a float compares them as floats.
//!
//! A chunk whose values are not all integers (or all floats) per operand, nulls aside (a
//! string, a datetime, integers and floats mixed in one column), is left to the row evaluator:
//! the kernels never guess a type.

use crate::ast::BinaryOp;

#[allow(unused_imports)]
use super::*;

mod compare;
pub(super) use compare::{eval_cmp, T_FALSE, T_NULL, T_TRUE};

/// Deepest expression compiled (deeper ones run on the row evaluator; bounds the recursion).
const MAX_DEPTH: usize = 32;

/// A numeric expression over node properties and constants.
#[derive(Clone, Debug)]
pub(super) enum Num {
    Prop(usize, String),
    /// An integer, a float or null.
    Const(Val),
    Neg(Box<Num>),
    /// An arithmetic operator.
    Bin(BinaryOp, Box<Num>, Box<Num>),
}

/// What a typed expression computes: a number, or a comparison of two numbers.
#[derive(Clone, Debug)]
pub(super) enum Typed {
    Num(Num),
    Cmp(BinaryOp, Num, Num),
    /// `a = b` / `a <> b` of two slots: for columns of nodes, their references compared (a
    /// node has one reference; a null node is null).
    Nodes(BinaryOp, usize, usize),
}

fn arith_op(op: BinaryOp) -> bool {
    matches!(
        op,
        BinaryOp::Add
            | BinaryOp::Sub
            | BinaryOp::Mul
            | BinaryOp::Div
            | BinaryOp::Mod
            | BinaryOp::Pow
    )
}

fn cmp_op(op: BinaryOp) -> bool {
    matches!(
        op,
        BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge
    )
}

impl Num {
    fn of(e: &CExpr, depth: usize) -> Option<Num> {
        if depth > MAX_DEPTH {
            return None;
        }
        match e {
            CExpr::Prop(base, key) => match **base {
                CExpr::Slot(s) => Some(Num::Prop(s, key.clone())),
                _ => None,
            },
            CExpr::Const(v @ (Val::Int(_) | Val::Float(_) | Val::Null)) => {
                Some(Num::Const(v.clone()))
            }
            CExpr::Neg(x) => Some(Num::Neg(Box::new(Num::of(x, depth + 1)?))),
            CExpr::Bin(op, a, b) if arith_op(*op) => Some(Num::Bin(
                *op,
                Box::new(Num::of(a, depth + 1)?),
                Box::new(Num::of(b, depth + 1)?),
            )),
            _ => None,
        }
    }

    /// Whether it computes anything (a bare property or constant is served better elsewhere).
    fn computes(&self) -> bool {
        matches!(self, Num::Neg(_) | Num::Bin(..))
    }
}

impl Typed {
    /// The typed form of `e`, when it is arithmetic over node properties and numeric
    /// constants, or a comparison of such that reads a property (a bare `n.score >= 0.8`
    /// too: compared straight off the column, where the per-row path builds a value each).
    pub(super) fn of(e: &CExpr) -> Option<Typed> {
        match e {
            CExpr::Bin(op @ (BinaryOp::Eq | BinaryOp::Ne), a, b)
                if matches!((&**a, &**b), (CExpr::Slot(_), CExpr::Slot(_))) =>
            {
                match (&**a, &**b) {
                    (CExpr::Slot(x), CExpr::Slot(y)) => Some(Typed::Nodes(*op, *x, *y)),
                    _ => None,
                }
            }
            CExpr::Bin(op, a, b) if cmp_op(*op) => {
                let (a, b) = (Num::of(a, 1)?, Num::of(b, 1)?);
                let props = |n: &Num| matches!(n, Num::Prop(..));
                (a.computes() || b.computes() || props(&a) || props(&b))
                    .then_some(Typed::Cmp(*op, a, b))
            }
            _ => Num::of(e, 0).filter(Num::computes).map(Typed::Num),
        }
    }
}

/// A column of numbers of one type, with its nulls.
#[derive(Clone, Debug)]
pub(super) enum TCol {
    Int(Vec<i64>, Vec<bool>),
    Float(Vec<f64>, Vec<bool>),
}

impl TCol {
    fn nulls(&self) -> &[bool] {
        match self {
            TCol::Int(_, n) | TCol::Float(_, n) => n,
        }
    }

    /// The values as floats (`i as f64`, as `Val::as_f64`).
    fn floats(self) -> (Vec<f64>, Vec<bool>) {
        match self {
            TCol::Float(v, n) => (v, n),
            TCol::Int(v, n) => (v.into_iter().map(|i| i as f64).collect(), n),
        }
    }

    fn val(&self, i: usize) -> Val {
        match self {
            TCol::Int(_, n) | TCol::Float(_, n) if n[i] => Val::Null,
            TCol::Int(v, _) => Val::Int(v[i]),
            TCol::Float(v, _) => Val::Float(v[i]),
        }
    }

    fn into_vals(self) -> Vec<Val> {
        (0..self.nulls().len()).map(|i| self.val(i)).collect()
    }
}

fn or_nulls(a: &[bool], b: &[bool]) -> Vec<bool> {
    a.iter().zip(b).map(|(x, y)| *x | *y).collect()
}

/// `a op b` row by row (an arithmetic operator).
pub(super) fn arith(op: BinaryOp, a: TCol, b: TCol) -> Result<TCol, QueryError> {
    match (a, b) {
        (TCol::Int(x, xn), TCol::Int(y, yn)) if op != BinaryOp::Pow => {
            let nulls = or_nulls(&xn, &yn);
            let mut out = Vec::with_capacity(x.len());
            for ((x, y), null) in x.iter().zip(&y).zip(&nulls) {
                if *null {
                    out.push(0);
                    continue;
                }
                let r = match op {
                    BinaryOp::Add => x.checked_add(*y),
                    BinaryOp::Sub => x.checked_sub(*y),
                    BinaryOp::Mul => x.checked_mul(*y),
                    BinaryOp::Div if *y == 0 => {
                        return Err(QueryError::Arithmetic("division by zero".into()))
                    }
                    BinaryOp::Div => x.checked_div(*y),
                    _ if *y == 0 => return Err(QueryError::Arithmetic("modulo by zero".into())),
                    _ => x.checked_rem(*y),
                };
                out.push(r.ok_or_else(|| QueryError::Arithmetic("integer overflow".into()))?);
            }
            Ok(TCol::Int(out, nulls))
        }
        (a, b) => {
            let ((x, xn), (y, yn)) = (a.floats(), b.floats());
            let nulls = or_nulls(&xn, &yn);
            let f: fn(f64, f64) -> f64 = match op {
                BinaryOp::Add => |x, y| x + y,
                BinaryOp::Sub => |x, y| x - y,
                BinaryOp::Mul => |x, y| x * y,
                BinaryOp::Div => |x, y| x / y,
                BinaryOp::Mod => |x, y| x % y,
                _ => f64::powf,
            };
            let out = x.iter().zip(&y).map(|(x, y)| f(*x, *y)).collect();
            Ok(TCol::Float(out, nulls))
        }
    }
}

/// `-a` row by row.
pub(super) fn neg(a: TCol) -> Result<TCol, QueryError> {
    match a {
        TCol::Int(v, n) => {
            let mut out = Vec::with_capacity(v.len());
            for (x, null) in v.iter().zip(&n) {
                out.push(if *null {
                    0
                } else {
                    x.checked_neg()
                        .ok_or_else(|| QueryError::Arithmetic("integer overflow".into()))?
                });
            }
            Ok(TCol::Int(out, n))
        }
        TCol::Float(v, n) => Ok(TCol::Float(v.into_iter().map(|x| -x).collect(), n)),
    }
}

/// One node's number property (no value built for it).
#[derive(Clone, Copy)]
enum One {
    Null,
    Int(i64),
    Float(f64),
}

/// A node property's values for a chunk as one typed column; None when the chunk's values
/// are not all integers or all floats (nulls aside).
fn prop_col(
    bx: &Bx<'_, '_>,
    ch: &Chunk,
    slot: usize,
    key: &str,
) -> Result<Option<TCol>, QueryError> {
    let Some(Col::Nodes(refs)) = ch.cols.get(slot) else {
        return Ok(None);
    };
    if let Some((col, row0)) = crate::batch::ops::column_in_place(bx, refs, key) {
        let end = row0 + refs.len();
        match col {
            ColumnView::Integers {
                values,
                absent,
                datetime: false,
            } => {
                let Some(v) = values.get(row0..end) else {
                    return Ok(None);
                };
                let nulls = if absent.is_empty() {
                    vec![false; v.len()]
                } else {
                    (row0..end).map(|r| col.is_absent(r)).collect()
                };
                return Ok(Some(TCol::Int(v.to_vec(), nulls)));
            }
            ColumnView::Floats(values) => {
                let Some(v) = values.get(row0..end) else {
                    return Ok(None);
                };
                let nulls = v.iter().map(|x| x.is_nan()).collect();
                return Ok(Some(TCol::Float(v.to_vec(), nulls)));
            }
            _ => {}
        }
    }
    // Node by node; the type of the first value decides, another type gives up. A number in
    // a model column is read as it is (no value built), and a node repeated from the row
    // before (the one end of an expansion) is not looked up again.
    let mut reader = PropReader::new(key);
    let mut ints: Option<Vec<i64>> = None;
    let mut floats: Option<Vec<f64>> = None;
    let mut nulls = Vec::with_capacity(refs.len());
    let mut last: Option<(NodeRef, One)> = None;
    for (i, r) in refs.iter().enumerate() {
        let v = match last {
            Some((lr, lv)) if lr == *r => lv,
            _ => {
                let v = match reader.locate(bx, *r) {
                    Found::Column(
                        _,
                        ColumnView::Integers {
                            values,
                            absent,
                            datetime: false,
                        },
                        row,
                    ) => match values.get(row) {
                        Some(x) if absent.is_empty() || !absent.contains(row as u32) => {
                            One::Int(*x)
                        }
                        _ => One::Null,
                    },
                    Found::Column(_, ColumnView::Floats(values), row) => match values.get(row) {
                        Some(x) if !x.is_nan() => One::Float(*x),
                        _ => One::Null,
                    },
                    Found::Absent => One::Null,
                    _ => match reader.get(bx, *r)? {
                        Val::Null => One::Null,
                        Val::Int(x) => One::Int(x),
                        Val::Float(x) => One::Float(x),
                        _ => return Ok(None),
                    },
                };
                last = Some((*r, v));
                v
            }
        };
        match v {
            One::Null => {
                nulls.push(true);
                if let Some(v) = ints.as_mut() {
                    v.push(0);
                }
                if let Some(v) = floats.as_mut() {
                    v.push(0.0);
                }
            }
            One::Int(x) if floats.is_none() => {
                nulls.push(false);
                ints.get_or_insert_with(|| vec![0; i]).push(x);
            }
            One::Float(x) if ints.is_none() => {
                nulls.push(false);
                floats.get_or_insert_with(|| vec![0.0; i]).push(x);
            }
            _ => return Ok(None),
        }
    }
    Ok(Some(match (ints, floats) {
        (_, Some(f)) => TCol::Float(f, nulls),
        (Some(v), _) => TCol::Int(v, nulls),
        (None, None) => TCol::Int(vec![0; refs.len()], nulls),
    }))
}

fn eval_num(bx: &Bx<'_, '_>, ch: &Chunk, n: &Num) -> Result<Option<TCol>, QueryError> {
    let len = ch.len;
    Ok(Some(match n {
        Num::Prop(slot, key) => return prop_col(bx, ch, *slot, key),
        Num::Const(Val::Int(i)) => TCol::Int(vec![*i; len], vec![false; len]),
        Num::Const(Val::Float(f)) => TCol::Float(vec![*f; len], vec![false; len]),
        Num::Const(_) => TCol::Int(vec![0; len], vec![true; len]),
        Num::Neg(x) => match eval_num(bx, ch, x)? {
            Some(x) => neg(x)?,
            None => return Ok(None),
        },
        Num::Bin(op, a, b) => {
            let Some(a) = eval_num(bx, ch, a)? else {
                return Ok(None);
            };
            let Some(b) = eval_num(bx, ch, b)? else {
                return Ok(None);
            };
            arith(*op, a, b)?
        }
    }))
}

/// The typed expression's column for `ch` (a comparison's as codes of `dict`); None: a chunk
/// the kernels leave to the row evaluator.
pub(super) fn eval_typed(
    bx: &Bx<'_, '_>,
    ch: &Chunk,
    t: &Typed,
    dict: &Rc<Dict>,
) -> Result<Option<Col>, QueryError> {
    let codes = || {
        [
            dict.code(Val::Null),
            dict.code(Val::Bool(false)),
            dict.code(Val::Bool(true)),
        ]
    };
    match t {
        Typed::Num(n) => Ok(eval_num(bx, ch, n)?.map(|c| Col::Vals(c.into_vals()))),
        Typed::Nodes(op, a, b) => {
            let (Some(Col::Nodes(x)), Some(Col::Nodes(y))) = (ch.cols.get(*a), ch.cols.get(*b))
            else {
                return Ok(None);
            };
            let codes = codes();
            let ne = usize::from(*op == BinaryOp::Ne);
            let codes = x
                .iter()
                .zip(y)
                .map(|(x, y)| {
                    if *x == NULL || *y == NULL {
                        codes[0]
                    } else {
                        codes[1 + (usize::from(x == y) ^ ne)]
                    }
                })
                .collect();
            Ok(Some(Col::Dict {
                codes,
                dict: Rc::clone(dict),
            }))
        }
        Typed::Cmp(op, a, b) => {
            let Some(t) = eval_cmp(bx, ch, *op, a, b)? else {
                return Ok(None);
            };
            let codes = codes();
            let codes = t.iter().map(|v| codes[usize::from(*v)]).collect();
            Ok(Some(Col::Dict {
                codes,
                dict: Rc::clone(dict),
            }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::compare::{compare, compare_const, compare_one, flip};
    use super::*;

    fn one(v: &Val) -> TCol {
        match v {
            Val::Int(i) => TCol::Int(vec![*i], vec![false]),
            Val::Float(f) => TCol::Float(vec![*f], vec![false]),
            _ => TCol::Int(vec![0], vec![true]),
        }
    }

    use crate::batch::tests::same_result as same;

    fn tri_val(t: u8) -> Val {
        match t {
            T_NULL => Val::Null,
            t => Val::Bool(t == T_TRUE),
        }
    }

    fn values() -> Vec<Val> {
        let mut v: Vec<Val> = [
            0,
            1,
            -1,
            2,
            7,
            -7,
            i64::MAX,
            i64::MIN,
            1 << 53,
            (1 << 53) + 1,
        ]
        .into_iter()
        .map(Val::Int)
        .collect();
        v.extend(
            [
                0.0,
                -0.0,
                0.5,
                -2.5,
                7.0,
                f64::NAN,
                f64::INFINITY,
                f64::NEG_INFINITY,
                9.007_199_254_740_992e15,
            ]
            .into_iter()
            .map(Val::Float),
        );
        v.push(Val::Null);
        v
    }

    /// Every operator over every pair of edge values: the kernels give what `eval::binary`
    /// gives (value, type and error).
    #[test]
    fn kernels_are_the_row_evaluator() {
        use BinaryOp::*;
        let vals = values();
        for op in [Add, Sub, Mul, Div, Mod, Pow] {
            for a in &vals {
                for b in &vals {
                    let theirs = crate::eval::binary(op, a.clone(), b.clone());
                    let ours = arith(op, one(a), one(b)).map(|c| c.val(0));
                    assert!(
                        same(&ours, &theirs),
                        "{a:?} {op:?} {b:?}: {ours:?} vs {theirs:?}"
                    );
                }
            }
        }
        for op in [Eq, Ne, Lt, Le, Gt, Ge] {
            for a in &vals {
                for b in &vals {
                    let theirs = crate::eval::binary(op, a.clone(), b.clone());
                    let ours = Ok(tri_val(compare(op, one(a), one(b))[0]));
                    assert!(
                        same(&ours, &theirs),
                        "{a:?} {op:?} {b:?}: {ours:?} vs {theirs:?}"
                    );
                    // One number against another, row by row.
                    let scalar = |v: &Val| match v {
                        Val::Int(i) => One::Int(*i),
                        Val::Float(f) => One::Float(*f),
                        _ => One::Null,
                    };
                    let ours = Ok(tri_val(compare_one(op, scalar(a), scalar(b))));
                    assert!(same(&ours, &theirs), "{a:?} {op:?} one {b:?}: {ours:?}");
                    // Against a constant, on either side.
                    let ours = Ok(tri_val(compare_const(op, &one(a), b)[0]));
                    assert!(same(&ours, &theirs), "{a:?} {op:?} const {b:?}: {ours:?}");
                    let ours = Ok(tri_val(compare_const(flip(op), &one(b), a)[0]));
                    assert!(same(&ours, &theirs), "const {a:?} {op:?} {b:?}: {ours:?}");
                }
            }
        }
        for a in &vals {
            let theirs = match a {
                Val::Int(i) => i
                    .checked_neg()
                    .map(Val::Int)
                    .ok_or_else(|| QueryError::Arithmetic("integer overflow".into())),
                Val::Float(f) => Ok(Val::Float(-f)),
                _ => Ok(Val::Null),
            };
            assert!(same(&neg(one(a)).map(|c| c.val(0)), &theirs), "-{a:?}");
        }
    }

    /// A null row never fails, whatever its stored bits would give.
    #[test]
    fn null_rows_do_not_fail() {
        let a = TCol::Int(vec![i64::MAX, 4], vec![true, false]);
        let b = TCol::Int(vec![1, 0], vec![false, true]);
        let r = arith(BinaryOp::Add, a.clone(), b.clone()).expect("no overflow on a null row");
        assert!(matches!(r.val(0), Val::Null) && matches!(r.val(1), Val::Null));
        assert!(arith(BinaryOp::Div, a, b).is_ok());
        assert!(neg(TCol::Int(vec![i64::MIN], vec![true])).is_ok());
    }

    #[test]
    fn only_arithmetic_over_properties_is_typed() {
        let prop = |k: &str| CExpr::Prop(Box::new(CExpr::Slot(0)), k.into());
        let c = |v: Val| CExpr::Const(v);
        let mul = CExpr::Bin(BinaryOp::Mul, Box::new(prop("a")), Box::new(prop("b")));
        assert!(Typed::of(&mul).is_some());
        let gt = CExpr::Bin(BinaryOp::Gt, Box::new(mul), Box::new(c(Val::Int(3))));
        assert!(matches!(Typed::of(&gt), Some(Typed::Cmp(..))));
        // A bare property against a number: compared off the column.
        let plain = CExpr::Bin(BinaryOp::Gt, Box::new(prop("a")), Box::new(c(Val::Int(3))));
        assert!(matches!(Typed::of(&plain), Some(Typed::Cmp(..))));
        // Constants alone compute nothing; strings and functions: not here.
        let consts = CExpr::Bin(
            BinaryOp::Gt,
            Box::new(c(Val::Int(4))),
            Box::new(c(Val::Int(3))),
        );
        assert!(Typed::of(&consts).is_none());
        let s = CExpr::Bin(
            BinaryOp::Add,
            Box::new(prop("a")),
            Box::new(c(Val::Str("x".into()))),
        );
        assert!(Typed::of(&s).is_none());
        // Too deep: the row evaluator.
        let mut deep = prop("a");
        for _ in 0..40 {
            deep = CExpr::Neg(Box::new(deep));
        }
        assert!(Typed::of(&deep).is_none());
    }
}
