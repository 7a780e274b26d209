//! Typed comparisons (`=`, `<>`, `<`, `<=`, `>`, `>=`) of the arithmetic kernels' columns:
//! per row a verdict (null, false or true); a constant side compared as a scalar, with the
//! model's column read in place for a label scan's chunk and each number read where it lies
//! for nodes located one by one.

#[allow(unused_imports)]
use super::*;

/// A comparison's verdict for one row: null, false or true.
pub(in crate::batch::expr) const T_NULL: u8 = 0;
pub(in crate::batch::expr) const T_FALSE: u8 = 1;
pub(in crate::batch::expr) const T_TRUE: u8 = 2;

/// `op` with its operands swapped (`c < x` is `x > c`).
pub(super) fn flip(op: BinaryOp) -> BinaryOp {
    match op {
        BinaryOp::Lt => BinaryOp::Gt,
        BinaryOp::Le => BinaryOp::Ge,
        BinaryOp::Gt => BinaryOp::Lt,
        BinaryOp::Ge => BinaryOp::Le,
        other => other,
    }
}

/// `conv(x) op conv(y)` for every pair (`T_FALSE` / `T_TRUE`; nulls are the caller's), one
/// loop per operator so that each compiles to a branch-free vector loop. `PartialOrd` on
/// floats is the evaluator's rule for NaN: every ordering comparison and `=` false, `<>` true.
#[inline(always)]
fn by_op<X: Copy, Y: Copy, T: PartialOrd + Copy>(
    op: BinaryOp,
    xs: &[X],
    ys: impl Iterator<Item = Y>,
    cx: impl Fn(X) -> T,
    cy: impl Fn(Y) -> T,
) -> Vec<u8> {
    macro_rules! run {
        ($f:expr) => {
            xs.iter()
                .zip(ys)
                .map(|(x, y)| T_FALSE + u8::from($f(cx(*x), cy(y))))
                .collect()
        };
    }
    match op {
        BinaryOp::Eq => run!(|a: T, b: T| a == b),
        BinaryOp::Ne => run!(|a: T, b: T| a != b),
        BinaryOp::Lt => run!(|a: T, b: T| a < b),
        BinaryOp::Le => run!(|a: T, b: T| a <= b),
        BinaryOp::Gt => run!(|a: T, b: T| a > b),
        _ => run!(|a: T, b: T| a >= b),
    }
}

/// Rows whose `nulls` is set become `T_NULL`.
fn null_out(out: &mut [u8], nulls: &[bool]) {
    for (o, n) in out.iter_mut().zip(nulls) {
        *o = if *n { T_NULL } else { *o };
    }
}

/// `a op b` row by row (a comparison).
pub(in crate::batch::expr) fn compare(op: BinaryOp, a: TCol, b: TCol) -> Vec<u8> {
    let mut out = match (&a, &b) {
        (TCol::Int(x, _), TCol::Int(y, _)) => by_op(op, x, y.iter().copied(), |v| v, |v| v),
        (TCol::Int(x, _), TCol::Float(y, _)) => {
            by_op(op, x, y.iter().copied(), |v| v as f64, |v| v)
        }
        (TCol::Float(x, _), TCol::Int(y, _)) => {
            by_op(op, x, y.iter().copied(), |v| v, |v| v as f64)
        }
        (TCol::Float(x, _), TCol::Float(y, _)) => by_op(op, x, y.iter().copied(), |v| v, |v| v),
    };
    null_out(&mut out, a.nulls());
    null_out(&mut out, b.nulls());
    out
}

/// `x op c` for every value of `x` (`c` an integer or a float), nulls aside.
pub(super) fn compare_const(op: BinaryOp, x: &TCol, c: &Val) -> Vec<u8> {
    let rep = |n: usize| std::iter::repeat_n((), n);
    let mut out = match (x, c) {
        (TCol::Int(v, _), Val::Int(c)) => by_op(op, v, rep(v.len()), |v| v, |_| *c),
        (TCol::Int(v, _), Val::Float(c)) => by_op(op, v, rep(v.len()), |v| v as f64, |_| *c),
        (TCol::Float(v, _), Val::Int(c)) => by_op(op, v, rep(v.len()), |v| v, |_| *c as f64),
        (TCol::Float(v, _), Val::Float(c)) => by_op(op, v, rep(v.len()), |v| v, |_| *c),
        _ => vec![T_NULL; x.nulls().len()],
    };
    null_out(&mut out, x.nulls());
    out
}

/// `x op c` (`c` a number or null constant) over a number property of a label scan's chunk,
/// read in place: no copy of the column, no value per row. None: not such a chunk.
fn compare_in_place(
    bx: &Bx<'_, '_>,
    ch: &Chunk,
    op: BinaryOp,
    slot: usize,
    key: &str,
    c: &Val,
) -> Option<Vec<u8>> {
    let Some(Col::Nodes(refs)) = ch.cols.get(slot) else {
        return None;
    };
    let (col, row0) = crate::batch::ops::column_in_place(bx, refs, key)?;
    let end = row0 + refs.len();
    let rep = std::iter::repeat_n((), refs.len());
    match col {
        ColumnView::Integers {
            values,
            absent,
            datetime: false,
        } => {
            let v = values.get(row0..end)?;
            let mut out = match c {
                Val::Int(c) => by_op(op, v, rep, |v| v, |_| *c),
                Val::Float(c) => by_op(op, v, rep, |v| v as f64, |_| *c),
                _ => vec![T_NULL; v.len()],
            };
            if !absent.is_empty() {
                for r in absent.range(row0 as u32..end as u32) {
                    if let Some(o) = out.get_mut(r as usize - row0) {
                        *o = T_NULL;
                    }
                }
            }
            Some(out)
        }
        ColumnView::Floats(values) => {
            let v = values.get(row0..end)?;
            let mut out = match c {
                Val::Int(c) => by_op(op, v, rep, |v| v, |_| *c as f64),
                Val::Float(c) => by_op(op, v, rep, |v| v, |_| *c),
                _ => vec![T_NULL; v.len()],
            };
            // NaN marks an absent value in a model column.
            for (o, x) in out.iter_mut().zip(v) {
                *o = if x.is_nan() { T_NULL } else { *o };
            }
            Some(out)
        }
        _ => None,
    }
}

/// `x op c` for one number (`by_op`'s rules: both integers compare as integers, else as
/// floats, NaN unordered).
#[inline]
pub(super) fn compare_one(op: BinaryOp, x: One, c: One) -> u8 {
    #[inline(always)]
    fn by<T: PartialOrd>(op: BinaryOp, a: T, b: T) -> u8 {
        T_FALSE
            + u8::from(match op {
                BinaryOp::Eq => a == b,
                BinaryOp::Ne => a != b,
                BinaryOp::Lt => a < b,
                BinaryOp::Le => a <= b,
                BinaryOp::Gt => a > b,
                _ => a >= b,
            })
    }
    match (x, c) {
        (One::Null, _) | (_, One::Null) => T_NULL,
        (One::Int(a), One::Int(b)) => by(op, a, b),
        (One::Int(a), One::Float(b)) => by(op, a as f64, b),
        (One::Float(a), One::Int(b)) => by(op, a, b as f64),
        (One::Float(a), One::Float(b)) => by(op, a, b),
    }
}

/// `x op c` (`c` a number or null constant) over a number property of nodes located one by
/// one (an index range's or an expansion's nodes): each node's number read where it is, no
/// column of values built, integers and floats compared row by row as the evaluator does.
/// None: a value that is not a number (a datetime, a string: the row evaluator decides).
fn compare_located(
    bx: &Bx<'_, '_>,
    ch: &Chunk,
    op: BinaryOp,
    slot: usize,
    key: &str,
    c: &Val,
) -> Result<Option<Vec<u8>>, QueryError> {
    let Some(Col::Nodes(refs)) = ch.cols.get(slot) else {
        return Ok(None);
    };
    let c = match c {
        Val::Int(i) => One::Int(*i),
        Val::Float(f) => One::Float(*f),
        _ => One::Null,
    };
    let mut reader = PropReader::new(key);
    // The label and number column of the first node located: its other nodes are a rank
    // away (nothing touched), without locating each.
    let first = match bx.m.untouched() {
        true => refs.iter().find_map(|r| match reader.locate(bx, *r) {
            Found::Column(li, col, _) => Some((bx.labels[li], col)),
            _ => None,
        }),
        false => None,
    };
    let number = |col: &ColumnView<'_>, row: usize| -> Option<One> {
        match col {
            ColumnView::Integers {
                values,
                absent,
                datetime: false,
            } => Some(match values.get(row) {
                Some(x) if absent.is_empty() || !absent.contains(row as u32) => One::Int(*x),
                _ => One::Null,
            }),
            ColumnView::Floats(values) => Some(match values.get(row) {
                Some(x) if !x.is_nan() => One::Float(*x),
                _ => One::Null,
            }),
            _ => None,
        }
    };
    let mut out = Vec::with_capacity(refs.len());
    for r in refs {
        if let Some((label, col)) = &first {
            if let Some(row) = (*r < bx.n).then(|| label.row_of(*r)).flatten() {
                match number(col, row) {
                    Some(x) => {
                        out.push(compare_one(op, x, c));
                        continue;
                    }
                    None => return Ok(None),
                }
            }
        }
        let x = match reader.locate(bx, *r) {
            Found::Column(_, col, row) => match number(&col, row) {
                Some(x) => x,
                None => return Ok(None),
            },
            Found::Absent => One::Null,
            _ => match reader.get(bx, *r)? {
                Val::Null => One::Null,
                Val::Int(x) => One::Int(x),
                Val::Float(x) => One::Float(x),
                _ => return Ok(None),
            },
        };
        out.push(compare_one(op, x, c));
    }
    Ok(Some(out))
}

/// A comparison's verdict per row (`T_NULL`, `T_FALSE`, `T_TRUE`); None: a chunk the kernels
/// leave to the row evaluator.
pub(in crate::batch::expr) fn eval_cmp(
    bx: &Bx<'_, '_>,
    ch: &Chunk,
    op: BinaryOp,
    a: &Num,
    b: &Num,
) -> Result<Option<Vec<u8>>, QueryError> {
    // A constant side: the other compared with it as a scalar (read in place when it can be).
    let constant = match (a, b) {
        (x, Num::Const(c)) => Some((op, x, c)),
        (Num::Const(c), x) => Some((flip(op), x, c)),
        _ => None,
    };
    if let Some((op, x, c)) = constant {
        if let Num::Prop(slot, key) = x {
            if let Some(out) = compare_in_place(bx, ch, op, *slot, key, c) {
                return Ok(Some(out));
            }
            if let Some(out) = compare_located(bx, ch, op, *slot, key, c)? {
                return Ok(Some(out));
            }
        }
        // (A computed side is still computed against a null constant: its errors stand.)
        return Ok(eval_num(bx, ch, x)?.map(|x| compare_const(op, &x, c)));
    }
    let Some(a) = eval_num(bx, ch, a)? else {
        return Ok(None);
    };
    let Some(b) = eval_num(bx, ch, b)? else {
        return Ok(None);
    };
    Ok(Some(compare(op, a, b)))
}
