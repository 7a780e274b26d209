//! Typed aggregate kernels: a chunk's number column (the model's integers or floats, read in
//! place) folded into aggregate states straight from the slice, no value built per row. The
//! semantics are `AggState::add`'s: absent rows skipped, sums and averages added in row order
//! (floating-point addition is not associative, so no reordering), integer overflow in
//! `sum()` an error, `min`/`max` keeping the first of equal values (`-0.0` and `0.0` are
//! equal). A state of another kind (a chunk of another column type met earlier) is left to
//! the general path.

#[allow(unused_imports)]
use super::*;

/// The error `sum()` gives on integer overflow (as `AggState::add`).
fn sum_overflow() -> QueryError {
    QueryError::Arithmetic("integer overflow in sum()".into())
}

/// Adds `x` to `s` in row order; `-0.0` (the additive identity, unlike `0.0`) for a skipped row
/// keeps the loop free of branches.
#[inline]
fn add_present(s: f64, x: f64, present: bool) -> f64 {
    s + if present { x } else { -0.0 }
}

/// Lanes for `min` / `max` (independent chains, so the loop is not bound by the latency of
/// one compare-and-select chain).
const LANES: usize = 8;

/// The extreme (`want_max` or min) of the non-NaN floats of `values`, the first of equal
/// values; None when every value is NaN.
fn float_extreme(values: &[f64], want_max: bool) -> Option<f64> {
    let init = if want_max {
        f64::NEG_INFINITY
    } else {
        f64::INFINITY
    };
    let mut lanes = [init; LANES];
    let mut chunks = values.chunks_exact(LANES);
    for c in &mut chunks {
        for (l, x) in lanes.iter_mut().zip(c) {
            // NaN compares false: never taken.
            let better = if want_max { *x > *l } else { *x < *l };
            *l = if better { *x } else { *l };
        }
    }
    let mut best = init;
    for x in lanes.iter().chain(chunks.remainder()) {
        if (want_max && *x > best) || (!want_max && *x < best) {
            best = *x;
        }
    }
    // An infinite extreme or a zero may be one of several equal values with different bits
    // (`-0.0` / `0.0`; the lanes' initial infinity): the first such value of the chunk is
    // the row path's.
    if best == 0.0 || best.is_infinite() {
        return values.iter().copied().find(|x| *x == best);
    }
    Some(best)
}

/// The extreme of integers in row order (equal integers are the same value).
fn int_extreme(values: impl Iterator<Item = i64>, want_max: bool) -> Option<i64> {
    if want_max {
        values.max()
    } else {
        values.min()
    }
}

/// Folds a chunk of a float column (NaN: absent) into one state. Ok(false): the state does
/// not take it here (the caller adds row by row).
pub(super) fn fold_floats(
    state: &mut AggState,
    kind: AggKind,
    values: &[f64],
) -> Result<bool, QueryError> {
    match state {
        AggState::Count(n) => *n += values.iter().filter(|x| !x.is_nan()).count() as i64,
        AggState::Avg { sum, n } => {
            let mut s = *sum;
            let mut k = 0u64;
            for x in values {
                let present = !x.is_nan();
                s = add_present(s, *x, present);
                k += u64::from(present);
            }
            *sum = s;
            *n += k;
        }
        AggState::Sum {
            int,
            float,
            is_float,
        } => {
            // The state turns float at the first float met (none: it stays as it is).
            let Some(first) = values.iter().position(|x| !x.is_nan()) else {
                return Ok(true);
            };
            if !*is_float {
                *is_float = true;
                *float = *int as f64;
            }
            let mut s = *float;
            for x in &values[first..] {
                s = add_present(s, *x, !x.is_nan());
            }
            *float = s;
        }
        AggState::Extreme(best) => {
            let want_max = kind == AggKind::Max;
            if !matches!(best, None | Some(Val::Float(_))) {
                return Ok(false);
            }
            if matches!(best, Some(Val::Float(b)) if b.is_nan()) {
                return Ok(false);
            }
            if let Some(x) = float_extreme(values, want_max) {
                match best {
                    Some(Val::Float(b)) => {
                        if (want_max && x > *b) || (!want_max && x < *b) {
                            *b = x;
                        }
                    }
                    _ => *best = Some(Val::Float(x)),
                }
            }
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// Folds a chunk of an integer (or datetime) column into one state; `present` None: every
/// row has a value. Ok(false): the state does not take it here.
pub(super) fn fold_ints(
    state: &mut AggState,
    kind: AggKind,
    values: &[i64],
    present: Option<&[bool]>,
    datetime: bool,
) -> Result<bool, QueryError> {
    match present {
        None => fold_int_iter(state, kind, values.iter().copied(), datetime),
        Some(p) => fold_int_iter(
            state,
            kind,
            values.iter().zip(p).filter(|(_, p)| **p).map(|(v, _)| *v),
            datetime,
        ),
    }
}

fn fold_int_iter(
    state: &mut AggState,
    kind: AggKind,
    values: impl Iterator<Item = i64> + Clone,
    datetime: bool,
) -> Result<bool, QueryError> {
    match state {
        AggState::Count(n) => *n += values.count() as i64,
        // A datetime has no sum or average (the general path gives the row path's error).
        AggState::Avg { .. } | AggState::Sum { .. } if datetime => return Ok(false),
        AggState::Avg { sum, n } => {
            let mut s = *sum;
            let mut k = 0u64;
            for x in values {
                s += x as f64;
                k += 1;
            }
            *sum = s;
            *n += k;
        }
        AggState::Sum {
            int,
            float,
            is_float,
        } => {
            if *is_float {
                let mut s = *float;
                for x in values {
                    s += x as f64;
                }
                *float = s;
            } else {
                let mut s = *int;
                for x in values {
                    s = s.checked_add(x).ok_or_else(sum_overflow)?;
                }
                *int = s;
            }
        }
        AggState::Extreme(best) => {
            let want_max = kind == AggKind::Max;
            let Some(x) = int_extreme(values, want_max) else {
                return Ok(true);
            };
            let better = |b: i64| (want_max && x > b) || (!want_max && x < b);
            match (best.as_mut(), datetime) {
                (None, _) => {
                    *best = Some(if datetime {
                        Val::DateTime(x)
                    } else {
                        Val::Int(x)
                    })
                }
                (Some(Val::Int(b)), false) | (Some(Val::DateTime(b)), true) => {
                    if better(*b) {
                        *b = x;
                    }
                }
                _ => return Ok(false),
            }
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// Adds one float (not NaN) to a group's state without building a value where the state's
/// kind allows (`AggState::add` otherwise).
#[inline(always)]
pub(super) fn add_float(state: &mut AggState, kind: AggKind, x: f64) -> Result<(), QueryError> {
    match state {
        AggState::Count(n) => *n += 1,
        AggState::Avg { sum, n } => {
            *sum += x;
            *n += 1;
        }
        AggState::Sum {
            float,
            is_float: true,
            ..
        } => *float += x,
        AggState::Extreme(Some(Val::Float(b))) if !b.is_nan() => {
            if (kind == AggKind::Max && x > *b) || (kind == AggKind::Min && x < *b) {
                *b = x;
            }
        }
        _ => state.add(kind, Val::Float(x))?,
    }
    Ok(())
}

/// Adds one integer (or datetime) to a group's state without building a value where the
/// state's kind allows (`AggState::add` otherwise).
#[inline(always)]
pub(super) fn add_int(
    state: &mut AggState,
    kind: AggKind,
    x: i64,
    datetime: bool,
) -> Result<(), QueryError> {
    match (&mut *state, datetime) {
        (AggState::Count(n), _) => *n += 1,
        (AggState::Avg { sum, n }, false) => {
            *sum += x as f64;
            *n += 1;
        }
        (
            AggState::Sum {
                int,
                is_float: false,
                ..
            },
            false,
        ) => *int = int.checked_add(x).ok_or_else(sum_overflow)?,
        (
            AggState::Sum {
                float,
                is_float: true,
                ..
            },
            false,
        ) => *float += x as f64,
        (AggState::Extreme(Some(Val::Int(b))), false)
        | (AggState::Extreme(Some(Val::DateTime(b))), true) => {
            if (kind == AggKind::Max && x > *b) || (kind == AggKind::Min && x < *b) {
                *b = x;
            }
        }
        _ => state.add(
            kind,
            if datetime {
                Val::DateTime(x)
            } else {
                Val::Int(x)
            },
        )?,
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The row path's fold: `AggState::add` per present value.
    fn rows_fold(kind: AggKind, vals: &[Val]) -> Result<Val, QueryError> {
        let mut s = AggState::new(kind);
        for v in vals {
            if !v.is_null() {
                s.add(kind, v.clone())?;
            }
        }
        Ok(s.finish())
    }

    use crate::batch::tests::same_result as same;

    const KINDS: [AggKind; 5] = [
        AggKind::Count,
        AggKind::Sum,
        AggKind::Avg,
        AggKind::Min,
        AggKind::Max,
    ];

    #[test]
    fn float_kernels_are_the_row_fold() {
        let cases: Vec<Vec<f64>> = vec![
            vec![],
            vec![f64::NAN, f64::NAN],
            vec![0.0, -0.0, 1.0, -0.0],
            vec![-0.0, 0.0, -1.0, 0.0, -0.0],
            vec![-0.0, 0.0],
            vec![0.1, 0.2, 0.3, f64::NAN, 1e308, 1e308, -1e308],
            vec![f64::INFINITY, f64::NEG_INFINITY, 3.0],
            (0..100)
                .map(|i| {
                    if i % 7 == 0 {
                        f64::NAN
                    } else {
                        i as f64 * 0.37 - 11.0
                    }
                })
                .collect(),
        ];
        for vals in &cases {
            // Split in two chunks to check the merge with a state already holding a value.
            for split in [0, vals.len() / 2] {
                for kind in KINDS {
                    let mut s = AggState::new(kind);
                    assert!(fold_floats(&mut s, kind, &vals[..split]).expect("fold"));
                    assert!(fold_floats(&mut s, kind, &vals[split..]).expect("fold"));
                    let ours = Ok(s.finish());
                    let as_vals: Vec<Val> = vals
                        .iter()
                        .map(|x| {
                            if x.is_nan() {
                                Val::Null
                            } else {
                                Val::Float(*x)
                            }
                        })
                        .collect();
                    let theirs = rows_fold(kind, &as_vals);
                    assert!(
                        same(&ours, &theirs),
                        "{kind:?} of {vals:?}: {ours:?} vs {theirs:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn int_kernels_are_the_row_fold_with_overflow_and_absent_rows() {
        let cases: Vec<(Vec<i64>, Vec<bool>)> = vec![
            (vec![], vec![]),
            (vec![1, 2, 3], vec![true, false, true]),
            (vec![i64::MAX, 1, -1], vec![true; 3]),
            (vec![i64::MAX, 1, -1], vec![true, false, true]),
            (vec![i64::MIN, -1], vec![true, true]),
            (vec![5, -5, 5, i64::MIN, i64::MAX], vec![true; 5]),
        ];
        for (vals, present) in &cases {
            for datetime in [false, true] {
                for kind in KINDS {
                    let mut s = AggState::new(kind);
                    let folded = fold_ints(&mut s, kind, vals, Some(present), datetime);
                    let ours = match folded {
                        Ok(true) => Ok(s.finish()),
                        Ok(false) => continue, // left to the general path
                        Err(e) => Err(e),
                    };
                    let as_vals: Vec<Val> = vals
                        .iter()
                        .zip(present)
                        .map(|(x, p)| match (p, datetime) {
                            (false, _) => Val::Null,
                            (true, false) => Val::Int(*x),
                            (true, true) => Val::DateTime(*x),
                        })
                        .collect();
                    let theirs = rows_fold(kind, &as_vals);
                    assert!(
                        same(&ours, &theirs),
                        "{kind:?} of {vals:?} {present:?}: {ours:?} vs {theirs:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn mixed_states_are_left_to_the_general_path() {
        let mut s = AggState::Extreme(Some(Val::Int(3)));
        assert!(!fold_floats(&mut s, AggKind::Min, &[1.0]).expect("fold"));
        let mut s = AggState::Extreme(Some(Val::Float(3.0)));
        assert!(!fold_ints(&mut s, AggKind::Max, &[1], None, false).expect("fold"));
        // An int sum turns float at its first float, not before.
        let mut s = AggState::new(AggKind::Sum);
        assert!(fold_ints(&mut s, AggKind::Sum, &[2], None, false).expect("fold"));
        assert!(fold_floats(&mut s, AggKind::Sum, &[f64::NAN]).expect("fold"));
        assert!(matches!(s.finish(), Val::Int(2)));
        // Per row: the same as the row fold.
        let mut s = AggState::new(AggKind::Sum);
        add_int(&mut s, AggKind::Sum, 2, false).expect("add");
        add_float(&mut s, AggKind::Sum, 0.5).expect("add");
        add_int(&mut s, AggKind::Sum, 1, false).expect("add");
        assert!(matches!(s.finish(), Val::Float(x) if x == 3.5));
        let mut s = AggState::new(AggKind::Sum);
        add_int(&mut s, AggKind::Sum, i64::MAX, false).expect("add");
        assert!(add_int(&mut s, AggKind::Sum, 1, false).is_err());
    }
}
