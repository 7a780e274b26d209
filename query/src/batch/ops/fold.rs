//! Typed folds of an aggregate's argument into its groups' states (not DISTINCT): numbers
//! read from the model's column in place, at each located node's row, or gathered first for an
//! expansion's far nodes; nothing cloned for a number.

#[allow(unused_imports)]
use super::*;

/// Adds one value (not DISTINCT) to a group's state: numbers typed, nothing cloned for them.
#[inline]
pub(super) fn add_val(state: &mut AggState, kind: AggKind, v: &Val) -> Result<(), QueryError> {
    match v {
        Val::Null => Ok(()),
        Val::Int(x) => add_int(state, kind, *x, false),
        Val::DateTime(x) => add_int(state, kind, *x, true),
        Val::Float(x) if !x.is_nan() => add_float(state, kind, *x),
        other => state.add(kind, other.clone()),
    }
}

/// Aggregate `a` (`spec`, not DISTINCT) of one chunk folded from its number column read in
/// place, when its argument is `n.key` of a label scan's chunk; false: nothing done.
pub(super) fn fold_in_place(
    bx: &Bx<'_, '_>,
    ch: &Chunk,
    spec: &AggSpec,
    a: usize,
    ungrouped: bool,
    groups: &mut Groups,
    group_of: &[usize],
) -> Result<bool, QueryError> {
    let Some((s, key)) = plain_prop(&spec.arg) else {
        return Ok(false);
    };
    let Some(Col::Nodes(refs)) = ch.cols.get(s) else {
        return Ok(false);
    };
    match numbers_in_place(bx, refs, key) {
        Some(InPlace::Ints {
            values,
            col,
            full,
            row0,
            datetime,
        }) => {
            let present: Option<Vec<bool>> = (!full).then(|| {
                (0..values.len())
                    .map(|i| !col.is_absent(row0 + i))
                    .collect()
            });
            if ungrouped
                && fold_ints(
                    groups.state(0, a),
                    spec.kind,
                    values,
                    present.as_deref(),
                    datetime,
                )?
            {
                return Ok(true);
            }
            for (i, (g, v)) in group_of.iter().zip(values).enumerate() {
                if present.as_ref().is_some_and(|p| !p[i]) {
                    continue;
                }
                add_int(groups.state(*g, a), spec.kind, *v, datetime)?;
            }
            Ok(true)
        }
        Some(InPlace::Floats(values)) => {
            if ungrouped && fold_floats(groups.state(0, a), spec.kind, values)? {
                return Ok(true);
            }
            for (g, v) in group_of.iter().zip(values) {
                if !v.is_nan() {
                    add_float(groups.state(*g, a), spec.kind, *v)?;
                }
            }
            Ok(true)
        }
        None => fold_located(bx, refs, key, spec, a, groups, group_of),
    }
}

/// Aggregate `a` of `n.key` over nodes that are not a label scan's consecutive rows (after
/// an expansion, an index seek, a filter): each node's value located in its label's column
/// and added typed, no value built for numbers; anything else as the general path adds it.
pub(super) fn fold_located(
    bx: &Bx<'_, '_>,
    refs: &[NodeRef],
    key: &str,
    spec: &AggSpec,
    a: usize,
    groups: &mut Groups,
    group_of: &[usize],
) -> Result<bool, QueryError> {
    if fold_gathered(bx, refs, key, spec, a, groups, group_of)? {
        return Ok(true);
    }
    let mut reader = crate::batch::expr::PropReader::new(key);
    for (r, g) in refs.iter().zip(group_of) {
        if *r == NULL {
            continue;
        }
        let state = groups.state(*g, a);
        match reader.locate(bx, *r) {
            crate::batch::expr::Found::Column(
                _,
                ColumnView::Integers {
                    values,
                    absent,
                    datetime,
                },
                row,
            ) => {
                if let Some(v) = values.get(row) {
                    if absent.is_empty() || !absent.contains(row as u32) {
                        add_int(state, spec.kind, *v, datetime)?;
                    }
                }
            }
            crate::batch::expr::Found::Column(_, ColumnView::Floats(values), row) => {
                if let Some(v) = values.get(row).filter(|v| !v.is_nan()) {
                    add_float(state, spec.kind, *v)?;
                }
            }
            crate::batch::expr::Found::Absent => {}
            _ => {
                let v = reader.get(bx, *r)?;
                if !v.is_null() {
                    state.add(spec.kind, v)?;
                }
            }
        }
    }
    Ok(true)
}

/// `fold_located` when every node with a value has it in one number column (the nodes of
/// one label): the rows located first, the values gathered in a loop of independent loads
/// (an expansion's nodes are scattered over the column: the cache misses overlap), then
/// folded. False: nothing done (nodes in several columns, or read through the snapshot).
pub(super) fn fold_gathered(
    bx: &Bx<'_, '_>,
    refs: &[NodeRef],
    key: &str,
    spec: &AggSpec,
    a: usize,
    groups: &mut Groups,
    group_of: &[usize],
) -> Result<bool, QueryError> {
    use crate::batch::expr::Found;
    const SKIP: u32 = u32::MAX;
    let mut reader = crate::batch::expr::PropReader::new(key);
    let mut rows: Vec<u32> = Vec::with_capacity(refs.len());
    let mut column: Option<ColumnView<'_>> = None;
    // Nodes of the first one's label are found at their row by a popcount, the others
    // located one by one.
    let fast = first_label_column(bx, refs, key)
        .filter(|(_, c, _)| matches!(c, ColumnView::Integers { .. } | ColumnView::Floats(_)));
    if let Some((_, c, _)) = fast {
        column = Some(c);
    }
    for r in refs {
        if *r == NULL {
            rows.push(SKIP);
            continue;
        }
        if let Some((label, _, n)) = &fast {
            if let Some(row) = label.row_of(*r).filter(|_| *r < *n) {
                rows.push(u32::try_from(row).unwrap_or(SKIP));
                continue;
            }
        }
        match reader.locate(bx, *r) {
            Found::Column(_, c @ (ColumnView::Integers { .. } | ColumnView::Floats(_)), row) => {
                let same = match (column, c) {
                    (None, _) => true,
                    (
                        Some(ColumnView::Integers { values: v0, .. }),
                        ColumnView::Integers { values, .. },
                    ) => std::ptr::eq(v0, values),
                    (Some(ColumnView::Floats(v0)), ColumnView::Floats(values)) => {
                        std::ptr::eq(v0, values)
                    }
                    _ => false,
                };
                if !same {
                    return Ok(false);
                }
                column = Some(c);
                rows.push(u32::try_from(row).unwrap_or(SKIP));
            }
            Found::Absent => rows.push(SKIP),
            _ => return Ok(false),
        }
    }
    match column {
        Some(ColumnView::Integers {
            values,
            absent,
            datetime,
        }) => {
            let xs: Vec<i64> = rows
                .iter()
                .map(|r| values.get(*r as usize).copied().unwrap_or(0))
                .collect();
            for ((r, x), g) in rows.iter().zip(&xs).zip(group_of) {
                if *r as usize >= values.len() || (!absent.is_empty() && absent.contains(*r)) {
                    continue;
                }
                add_int(groups.state(*g, a), spec.kind, *x, datetime)?;
            }
        }
        Some(ColumnView::Floats(values)) => {
            let xs: Vec<f64> = rows
                .iter()
                .map(|r| values.get(*r as usize).copied().unwrap_or(f64::NAN))
                .collect();
            for (x, g) in xs.iter().zip(group_of) {
                if !x.is_nan() {
                    add_float(groups.state(*g, a), spec.kind, *x)?;
                }
            }
        }
        // No node has a value (or none is of a number column: not taken above).
        _ => {}
    }
    Ok(true)
}
