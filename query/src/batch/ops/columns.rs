//! Where a chunk's property values lie in the read model: a label scan's chunk is consecutive
//! rows of one label, so its column is read in place (no lookup per node).

#[allow(unused_imports)]
use super::*;

/// `n.key` of a slot, when the expression is exactly that.
pub(super) fn plain_prop(e: &Option<crate::eval::CExpr>) -> Option<(usize, &str)> {
    match e {
        Some(crate::eval::CExpr::Prop(base, key)) => match base.as_ref() {
            crate::eval::CExpr::Slot(s) => Some((*s, key.as_str())),
            _ => None,
        },
        _ => None,
    }
}

/// A number (or datetime) column's values for a chunk's nodes, read in place.
pub(super) enum InPlace<'a> {
    Ints {
        values: &'a [i64],
        col: ColumnView<'a>,
        /// No row of the column lacks a value.
        full: bool,
        row0: usize,
        datetime: bool,
    },
    Floats(&'a [f64]),
}

/// The column of `key` and the row of `refs[0]` in it, when `refs` are consecutive rows of
/// one label's base (a label scan's chunk, nothing touched): row `i` is then `row0 + i`.
pub(in crate::batch) fn column_in_place<'a>(
    bx: &Bx<'a, '_>,
    refs: &[NodeRef],
    key: &str,
) -> Option<(ColumnView<'a>, usize)> {
    column_in_place_at(bx, refs, key).map(|(_, c, row0)| (c, row0))
}

/// `column_in_place` with the index of the label the column belongs to.
pub(in crate::batch) fn column_in_place_at<'a>(
    bx: &Bx<'a, '_>,
    refs: &[NodeRef],
    key: &str,
) -> Option<(usize, ColumnView<'a>, usize)> {
    if !bx.m.untouched() {
        return None;
    }
    let first = *refs.first()?;
    let (li, col, row0) = match crate::batch::expr::PropReader::new(key).locate(bx, first) {
        crate::batch::expr::Found::Column(li, col, row) => (li, col, row),
        _ => return None,
    };
    let end = row0 + refs.len();
    if bx.label_rows(li).get(row0..end)? != refs {
        return None;
    }
    Some((li, col, row0))
}

/// The label of the first base node of `refs`, its column of `key` and the base's node count,
/// when nothing was touched since the base was taken: a node of that label below the count
/// is then read at its row in the column (a popcount), no label searched per node.
pub(in crate::batch) fn first_label_column<'a>(
    bx: &Bx<'a, '_>,
    refs: &[NodeRef],
    key: &str,
) -> Option<(svc_engine::LabelView<'a>, ColumnView<'a>, NodeRef)> {
    if !bx.m.untouched() {
        return None;
    }
    let n = NodeRef::try_from(bx.m.len()).ok()?;
    let first = *refs.iter().find(|r| **r != NULL && **r < n)?;
    let label = bx.m.label_of(first)?;
    Some((label, label.column(key)?, n))
}

/// The values of a number (or datetime) column for `refs`, when they are consecutive rows of
/// one label's base (a label scan's chunk, nothing touched). None otherwise (the caller
/// evaluates row by row).
pub(super) fn numbers_in_place<'a>(
    bx: &Bx<'a, '_>,
    refs: &[NodeRef],
    key: &str,
) -> Option<InPlace<'a>> {
    let (col, row0) = column_in_place(bx, refs, key)?;
    let end = row0 + refs.len();
    match col {
        ColumnView::Integers {
            values,
            absent,
            datetime,
        } => Some(InPlace::Ints {
            values: values.get(row0..end)?,
            col,
            full: absent.is_empty(),
            row0,
            datetime,
        }),
        ColumnView::Floats(values) => Some(InPlace::Floats(values.get(row0..end)?)),
        _ => None,
    }
}
