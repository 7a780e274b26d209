//! Scans: a label's nodes (or every node, or an index's), cross the input rows.

#[allow(unused_imports)]
use super::*;
use crate::eval::CExpr;
use crate::plan::{Op, Plan};

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

/// `n.key = e` over a label scan of `n` that crosses input rows, `e` reading the input row
/// only (pure, so one evaluation per input row stands for one per pair): the plan's
/// `Filter` directly over its `Scan`. Gives (the scan's input, the scan's slot, label and
/// labels to check, the key, `e`).
#[allow(clippy::type_complexity)]
pub(in crate::batch) fn eq_scan_shape<'p>(
    predicate: &'p CExpr,
    input: &'p Plan,
) -> Option<(&'p Plan, usize, &'p str, &'p [String], &'p str, &'p CExpr)> {
    let Op::Scan {
        input: below,
        slot,
        source: ScanSource::Label(label),
        check_labels,
    } = &input.op
    else {
        return None;
    };
    let CExpr::Bin(crate::ast::BinaryOp::Eq, a, b) = predicate else {
        return None;
    };
    let prop = |x: &'p CExpr| match x {
        CExpr::Prop(base, key) if matches!(base.as_ref(), CExpr::Slot(s) if s == slot) => {
            Some(key.as_str())
        }
        _ => None,
    };
    let (key, value) = match (prop(a), prop(b)) {
        (Some(k), _) => (k, b.as_ref()),
        (None, Some(k)) => (k, a.as_ref()),
        _ => return None,
    };
    if value.slot_list().contains(slot) || !super::super::expr::pure(value) {
        return None;
    }
    Some((below, *slot, label, check_labels, key, value))
}

/// A label scan crossing the input rows under `n.key = e` (`eq_scan_shape`): instead of
/// every (row, node) pair through the filter, each row's value is looked up among the
/// label's nodes: a string column grouped by dictionary code once (a counting sort of the
/// column), an integer column by binary search in its rows sorted by value. Per row the
/// nodes come in label order, as the scan and filter give them. Where the model cannot
/// decide a chunk exactly (nodes touched since the model was built, a column of floats,
/// datetimes or mixed values, a float looked up among integers), that chunk runs through
/// the scan and filter themselves (`generic`).
pub(in crate::batch) struct ScanEq<'p> {
    pub(in crate::batch) input: BBox<'p>,
    pub(in crate::batch) slot: usize,
    pub(in crate::batch) label: &'p str,
    pub(in crate::batch) key: &'p str,
    pub(in crate::batch) check_labels: &'p [String],
    /// `e`, over the input chunk.
    pub(in crate::batch) value: BExpr,
    /// The scan and the filter over the chunk in `arg`.
    pub(in crate::batch) generic: BBox<'p>,
    pub(in crate::batch) arg: ArgChunk,
    pub(in crate::batch) generic_on: bool,
    /// A string column grouped by code (built at the first lookup).
    pub(in crate::batch) strings: Option<ByCode>,
    pub(in crate::batch) at: Option<EqAt>,
}

#[cfg(test)]
thread_local! {
    /// (input chunks looked up, input chunks through the scan and filter), for tests that
    /// must know which ran.
    pub(in crate::batch) static EQ_CHUNKS: std::cell::Cell<(u64, u64)> =
        const { std::cell::Cell::new((0, 0)) };
}

/// A string column's rows grouped by dictionary code: the rows of code `c` are
/// `nodes[offsets[c]..offsets[c + 1]]`, ascending; codes found by the string's hash.
pub(in crate::batch) struct ByCode {
    offsets: Vec<u32>,
    nodes: Vec<NodeRef>,
    by_hash: HashMap<u64, u32, Fx>,
    /// Two strings of the dictionary share a hash: a miss is then confirmed by a search.
    collided: bool,
}

/// An input chunk being expanded to its matches: per row the range of matches in the
/// lookup's order, the row and the match reached.
pub(in crate::batch) struct EqAt {
    input: Chunk,
    ranges: Vec<(u32, u32)>,
    row: usize,
    pos: u32,
}

fn str_hash(s: &str) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = Fx::default().build_hasher();
    h.write(s.as_bytes());
    h.finish()
}

impl ByCode {
    fn build(codes: &[u32], dict: &[String], rows: &[NodeRef]) -> ByCode {
        let mut offsets = vec![0u32; dict.len() + 1];
        for &c in codes {
            if let Some(o) = offsets.get_mut(c as usize + 1) {
                *o += 1;
            }
        }
        for i in 1..offsets.len() {
            offsets[i] += offsets[i - 1];
        }
        let mut fill = offsets.clone();
        let mut nodes = vec![NULL; offsets.last().copied().unwrap_or(0) as usize];
        for (row, &c) in codes.iter().enumerate() {
            if let (Some(f), Some(&r)) = (fill.get_mut(c as usize), rows.get(row)) {
                nodes[*f as usize] = r;
                *f += 1;
            }
        }
        let mut by_hash: HashMap<u64, u32, Fx> = HashMap::default();
        let mut collided = false;
        for (c, s) in dict.iter().enumerate() {
            collided |= by_hash.insert(str_hash(s), c as u32).is_some();
        }
        ByCode {
            offsets,
            nodes,
            by_hash,
            collided,
        }
    }

    /// The range of `nodes` holding string `s`.
    fn lookup(&self, dict: &[String], s: &str) -> (u32, u32) {
        let code = match self.by_hash.get(&str_hash(s)) {
            Some(&c) if dict.get(c as usize).is_some_and(|d| d == s) => Some(c),
            _ if self.collided => dict.iter().position(|d| d == s).map(|c| c as u32),
            _ => None,
        };
        code.map_or((0, 0), |c| {
            (self.offsets[c as usize], self.offsets[c as usize + 1])
        })
    }
}

impl ScanEq<'_> {
    /// Per row of `ch`, its matches' range (in `strings`' nodes or the integer column's
    /// sorted rows); None: the model cannot decide this chunk.
    fn ranges(
        &mut self,
        bx: &Bx<'_, '_>,
        ch: &Chunk,
    ) -> Result<Option<Vec<(u32, u32)>>, QueryError> {
        if !bx.m.untouched() {
            return Ok(None);
        }
        let col = self.value.eval(bx, ch)?;
        let Some(view) = bx.label_view(self.label) else {
            return Ok(Some(vec![(0, 0); ch.len])); // no node carries the label
        };
        let column = view.column(self.key);
        let mut out = Vec::with_capacity(ch.len);
        match column {
            None => out.resize(ch.len, (0, 0)), // no node of the label has the key
            Some(ColumnView::Strings { codes, dict }) => {
                let index = self
                    .strings
                    .get_or_insert_with(|| ByCode::build(codes, dict, view.rows()));
                // A dictionary-coded input: one lookup per code.
                let mut memo: HashMap<u32, (u32, u32), Fx> = HashMap::default();
                for i in 0..ch.len {
                    let r = match &col {
                        Col::Dict { codes: c, dict: d } => {
                            *memo.entry(c[i]).or_insert_with(|| match d.get(c[i]) {
                                Val::Str(s) => index.lookup(dict, &s),
                                _ => (0, 0),
                            })
                        }
                        other => match cell(bx, other, i) {
                            // Anything but a string never equals a string.
                            Val::Str(s) => index.lookup(dict, &s),
                            _ => (0, 0),
                        },
                    };
                    out.push(r);
                }
            }
            Some(ColumnView::Integers {
                values,
                datetime: false,
                ..
            }) => {
                let Some(sorted) = view.sorted(self.key) else {
                    return Ok(None);
                };
                for i in 0..ch.len {
                    let r = match cell(bx, &col, i) {
                        Val::Int(j) => {
                            let lo = sorted.partition_point(|r| values[*r as usize] < j);
                            let hi = sorted.partition_point(|r| values[*r as usize] <= j);
                            (lo as u32, hi.max(lo) as u32)
                        }
                        // A float may equal an integer: decided by the filter.
                        Val::Float(_) => return Ok(None),
                        // Null, strings, booleans, lists, ...: never equal to an integer.
                        _ => (0, 0),
                    };
                    out.push(r);
                }
            }
            Some(_) => return Ok(None),
        }
        Ok(Some(out))
    }
}

impl BOp for ScanEq<'_> {
    fn next(&mut self, bx: &Bx<'_, '_>) -> Result<Option<Chunk>, QueryError> {
        loop {
            check_deadline(bx)?;
            if self.generic_on {
                if let Some(c) = self.generic.next(bx)? {
                    return Ok(Some(c));
                }
                self.generic_on = false;
            }
            if self.at.is_none() {
                let Some(ch) = self.input.next(bx)? else {
                    return Ok(None);
                };
                let ranges = self.ranges(bx, &ch)?;
                #[cfg(test)]
                EQ_CHUNKS.with(|c| {
                    let (fast, slow) = c.get();
                    c.set(match ranges {
                        Some(_) => (fast + 1, slow),
                        None => (fast, slow + 1),
                    })
                });
                match ranges {
                    Some(ranges) => {
                        self.at = Some(EqAt {
                            input: ch,
                            pos: ranges.first().map_or(0, |r| r.0),
                            ranges,
                            row: 0,
                        })
                    }
                    None => {
                        *self.arg.borrow_mut() = Some(ch);
                        self.generic_on = true;
                    }
                }
                continue;
            }
            let Some(mut at) = self.at.take() else {
                continue;
            };
            // The matches are runs of the grouped strings, or of the integer column's rows
            // sorted by value.
            let view = bx.label_view(self.label);
            let sorted = view.and_then(|v| v.sorted(self.key)).unwrap_or_default();
            let rows = view.map_or(&[][..], |v| v.rows());
            let mut idx = Vec::new();
            let mut nodes = Vec::new();
            while at.row < at.input.len && idx.len() < CHUNK {
                let (_, end) = at.ranges[at.row];
                let take = (end.saturating_sub(at.pos) as usize).min(CHUNK - idx.len());
                let (from, to) = (at.pos as usize, at.pos as usize + take);
                let before = nodes.len();
                match &self.strings {
                    Some(s) => nodes.extend_from_slice(&s.nodes[from..to]),
                    None => nodes.extend(
                        sorted[from..to]
                            .iter()
                            .map(|r| rows.get(*r as usize).copied().unwrap_or(NULL)),
                    ),
                }
                if !self.check_labels.is_empty() {
                    let mut kept = before;
                    for k in before..nodes.len() {
                        if bx.has_labels(nodes[k], self.check_labels)? {
                            nodes[kept] = nodes[k];
                            kept += 1;
                        }
                    }
                    nodes.truncate(kept);
                }
                idx.extend(std::iter::repeat_n(at.row as u32, nodes.len() - before));
                at.pos += take as u32;
                if at.pos >= end {
                    at.row += 1;
                    at.pos = at.ranges.get(at.row).map_or(0, |r| r.0);
                }
            }
            let mut out = at.input.gather(&idx);
            if at.row < at.input.len {
                self.at = Some(at);
            }
            if out.len == 0 {
                continue;
            }
            out.cols[self.slot] = Col::Nodes(nodes);
            return Ok(Some(out));
        }
    }
}
