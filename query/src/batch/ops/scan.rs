//! Scans: a label's nodes (or every node, or an index's), cross the input rows.

#[allow(unused_imports)]
use super::*;

/// A label scan (or of every node), cross the input rows.
pub(in crate::batch) struct Scan<'p> {
    pub(in crate::batch) input: BBox<'p>,
    pub(in crate::batch) slot: usize,
    pub(in crate::batch) source: &'p ScanSource,
    pub(in crate::batch) label: Option<&'p str>,
    pub(in crate::batch) check_labels: &'p [String],
    pub(in crate::batch) candidates: Option<Candidates>,
    /// The input chunk being crossed, its row and the candidate reached.
    pub(in crate::batch) at: Option<(Chunk, usize, usize)>,
}

/// A scan's nodes: the label's rows of the base as they are (nothing touched, no other
/// label to check), or a list.
pub(in crate::batch) enum Candidates {
    LabelRows,
    List(Vec<NodeRef>),
}

impl Scan<'_> {
    /// The scanned nodes in id order: untouched base rows, and the touched nodes that carry
    /// the label at the snapshot.
    fn candidates(&self, bx: &Bx<'_, '_>) -> Result<Vec<NodeRef>, QueryError> {
        if let Some(rows) = range_by_column(bx, self.source) {
            let mut out = Vec::with_capacity(rows.len());
            for r in rows {
                if bx.has_labels(r, self.check_labels)? {
                    out.push(r);
                }
            }
            return Ok(out);
        }
        if matches!(
            self.source,
            ScanSource::Seek { .. } | ScanSource::ById { .. } | ScanSource::Range { .. }
        ) {
            // An index's candidates, in its order (the source reads no slot: checked when
            // compiled), exactly as the row path finds them.
            let ids = crate::exec::candidates(self.source, &[], bx.cx)?;
            let mut out = Vec::with_capacity(ids.len());
            for id in ids {
                let r = bx.node_ref(id);
                if bx.has_labels(r, self.check_labels)? {
                    out.push(r);
                }
            }
            return Ok(out);
        }
        let g = bx.cx.g;
        let mut touched: Vec<NodeRef> = Vec::new();
        for id in bx.m.touched_ids() {
            let id = NodeId(*id);
            let there = match self.label {
                Some(l) => g.has_label(id, l)?,
                None => g.node_exists(id)?,
            };
            if there {
                touched.push(bx.node_ref(id));
            }
        }
        let mut out = Vec::new();
        let mut merge = |base: &mut dyn Iterator<Item = NodeRef>| {
            let mut t = touched.iter().peekable();
            for d in base {
                if bx.m.is_touched(d) {
                    continue;
                }
                let id = bx.m.id(d);
                while let Some(&&x) = t.peek() {
                    if bx.node_id(x) < id {
                        out.push(x);
                        t.next();
                    } else {
                        break;
                    }
                }
                out.push(d);
            }
            out.extend(t.copied());
        };
        match self.label {
            Some(l) => match bx.m.label(l) {
                Some(view) => merge(&mut view.rows().iter().copied()),
                None => merge(&mut std::iter::empty()),
            },
            None => merge(&mut (0..bx.m.len() as u32)),
        }
        if !self.check_labels.is_empty() {
            let mut kept = Vec::with_capacity(out.len());
            for r in out {
                if bx.has_labels(r, self.check_labels)? {
                    kept.push(r);
                }
            }
            out = kept;
        }
        Ok(out)
    }
}

/// The nodes of an index range scan read from the model's column instead: every untouched
/// base node of the label whose integer, datetime or float value lies in the range, in the
/// index's order (value, then id): the slice of the column's rows sorted by value, found by
/// two binary searches (the index would read each match from RocksDB). None: use the index.
fn range_by_column(bx: &Bx<'_, '_>, source: &ScanSource) -> Option<Vec<NodeRef>> {
    use std::ops::Bound;
    let ScanSource::Range {
        label,
        key,
        lower,
        upper,
        limit: None,
        order: svc_engine::Order::Ascending,
    } = source
    else {
        return None;
    };
    if !bx.m.untouched() {
        return None;
    }
    let view = bx.m.label(label)?;
    let rows = view.rows();
    // The bounds in the column's own kind (another kind: the index decides).
    fn bound<T>(b: &Bound<Val>, v: impl Fn(&Val) -> Option<T>) -> Option<Bound<T>> {
        Some(match b {
            Bound::Included(x) => Bound::Included(v(x)?),
            Bound::Excluded(x) => Bound::Excluded(v(x)?),
            Bound::Unbounded => Bound::Unbounded,
        })
    }
    match view.column(key)? {
        ColumnView::Integers {
            values,
            absent: _,
            datetime,
        } => {
            let v = |x: &Val| match (x, datetime) {
                (Val::Int(i), false) | (Val::DateTime(i), true) => Some(*i),
                _ => None,
            };
            let range = (bound(lower, v)?, bound(upper, v)?);
            let sorted = view.sorted(key)?;
            Some(sorted_slice(sorted, rows, |r| values[r], &range))
        }
        ColumnView::Floats(values) => {
            // Float bounds, and integers a float holds exactly (numbers compare by value).
            let v = |x: &Val| match x {
                Val::Float(f) if !f.is_nan() => Some(*f),
                Val::Int(i) if i.unsigned_abs() <= 1 << 53 => Some(*i as f64),
                _ => None,
            };
            let range = (bound(lower, v)?, bound(upper, v)?);
            let sorted = view.sorted(key)?;
            Some(sorted_slice(sorted, rows, |r| values[r], &range))
        }
        _ => None,
    }
}

/// The rows of `sorted` (present rows by value, then row) whose value lies in `range`, as
/// node references: two binary searches and one copy.
fn sorted_slice<T: PartialOrd>(
    sorted: &[u32],
    rows: &[NodeRef],
    value: impl Fn(usize) -> T,
    range: &(std::ops::Bound<T>, std::ops::Bound<T>),
) -> Vec<NodeRef> {
    use std::ops::Bound;
    let from = sorted.partition_point(|r| match &range.0 {
        Bound::Included(lo) => value(*r as usize) < *lo,
        Bound::Excluded(lo) => value(*r as usize) <= *lo,
        Bound::Unbounded => false,
    });
    let to = sorted.partition_point(|r| match &range.1 {
        Bound::Included(hi) => value(*r as usize) <= *hi,
        Bound::Excluded(hi) => value(*r as usize) < *hi,
        Bound::Unbounded => true,
    });
    sorted
        .get(from..to.max(from))
        .unwrap_or_default()
        .iter()
        .filter_map(|r| rows.get(*r as usize).copied())
        .collect()
}

impl BOp for Scan<'_> {
    fn next(&mut self, bx: &Bx<'_, '_>) -> Result<Option<Chunk>, QueryError> {
        if self.candidates.is_none() {
            let plain = bx.m.untouched()
                && self.check_labels.is_empty()
                && !matches!(
                    self.source,
                    ScanSource::Seek { .. } | ScanSource::ById { .. } | ScanSource::Range { .. }
                )
                && self.label.is_some();
            self.candidates = Some(if plain {
                Candidates::LabelRows
            } else {
                Candidates::List(self.candidates(bx)?)
            });
        }
        let cands: &[NodeRef] = match (&self.candidates, self.label) {
            (Some(Candidates::List(v)), _) => v,
            (Some(Candidates::LabelRows), Some(l)) => bx.m.label(l).map_or(&[], |v| v.rows()),
            _ => &[],
        };
        loop {
            check_deadline(bx)?;
            if self.at.is_none() {
                match self.input.next(bx)? {
                    Some(ch) => self.at = Some((ch, 0, 0)),
                    None => return Ok(None),
                }
            }
            let Some((input, row, pos)) = &mut self.at else {
                continue;
            };
            let mut idx = Vec::new();
            let mut nodes = Vec::new();
            while *row < input.len && idx.len() < CHUNK && !cands.is_empty() {
                let take = (CHUNK - idx.len()).min(cands.len() - *pos);
                idx.extend(std::iter::repeat_n(*row as u32, take));
                nodes.extend_from_slice(&cands[*pos..*pos + take]);
                *pos += take;
                if *pos == cands.len() {
                    *row += 1;
                    *pos = 0;
                }
            }
            let mut out = input.gather(&idx);
            if *row >= input.len || cands.is_empty() {
                self.at = None;
            }
            if out.len == 0 {
                continue;
            }
            out.cols[self.slot] = Col::Nodes(nodes);
            return Ok(Some(out));
        }
    }
}
