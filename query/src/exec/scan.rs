//! Node scans: `Scan` over a label, index seek, range or top-k source, `ScanFilter` (a label scan
//! with fused property filters), and `CountLabel`.

use super::order::count_arg;
use super::*;

pub(super) struct Scan<'p> {
    pub(super) input: BoxOp<'p>,
    pub(super) slot: usize,
    pub(super) source: &'p ScanSource,
    pub(super) check_labels: &'p [String],
    pub(super) current: Option<Row>,
    pub(super) ids: std::vec::IntoIter<NodeId>,
}

pub(super) fn bound_value(b: &Bound<Val>) -> Result<Bound<Value>, QueryError> {
    Ok(match b {
        Bound::Included(v) => Bound::Included(to_property(v)?),
        Bound::Excluded(v) => Bound::Excluded(to_property(v)?),
        Bound::Unbounded => Bound::Unbounded,
    })
}

impl Scan<'_> {
    fn candidates(&self, row: &[Val], cx: &Cx<'_>) -> Result<Vec<NodeId>, QueryError> {
        candidates(self.source, row, cx)
    }
}

/// Candidate ids of a scan source for one input row. Index answers are candidates only: the
/// predicate that chose the index is still applied by a filter above.
pub(crate) fn candidates(
    source: &ScanSource,
    row: &[Val],
    cx: &Cx<'_>,
) -> Result<Vec<NodeId>, QueryError> {
    {
        let g = cx.g;
        Ok(match source {
            ScanSource::AllNodes => g.all_nodes()?,
            ScanSource::Label(l) => g.label_scan(l)?,
            ScanSource::ById { value } => {
                // Ids are integers; `id(n) = 2.0` equals too. Anything else finds nothing.
                let shown = match eval(value, row, cx)? {
                    Val::Int(i) => Some(i),
                    Val::Float(f) if f.fract() == 0.0 && f.abs() < 9.0e18 => Some(f as i64),
                    _ => None,
                };
                // The snapshot reads its own workspace only: another's node is absent here.
                match shown.map(|i| cx.limits.ids.node_id(i)) {
                    Some(id) if g.node_exists(id)? => vec![id],
                    _ => Vec::new(),
                }
            }
            ScanSource::Seek {
                label,
                key,
                value,
                kind,
            } => {
                let v = eval(value, row, cx)?;
                let found = match &v {
                    Val::Null => Some(Vec::new()),
                    // Durations too: their keys are exact, and they have no range.
                    Val::Str(_) | Val::Bool(_) | Val::Duration(_) => {
                        g.index_seek(label, key, &to_property(&v)?)?
                    }
                    // An equality index keys temporals exactly (datetimes re-checked).
                    Val::Date(_)
                    | Val::LocalTime(_)
                    | Val::Time(..)
                    | Val::LocalDateTime(_)
                    | Val::Zoned(_)
                        if *kind == IndexKind::Equality =>
                    {
                        g.index_seek(label, key, &to_property(&v)?)?
                    }
                    // Numeric equality goes through the ordered index so that 1 finds 1.0 too;
                    // temporals there as a one-value range (the filter above checks zones).
                    Val::Int(_)
                    | Val::Float(_)
                    | Val::DateTime(_)
                    | Val::Date(_)
                    | Val::LocalTime(_)
                    | Val::Time(..)
                    | Val::LocalDateTime(_)
                    | Val::Zoned(_)
                        if *kind == IndexKind::Ordered =>
                    {
                        let pv = to_property(&v)?;
                        g.index_range(
                            label,
                            key,
                            Bound::Included(&pv),
                            Bound::Included(&pv),
                            svc_engine::Order::Ascending,
                            None,
                        )?
                    }
                    _ => None,
                };
                match found {
                    Some(ids) => ids,
                    None => g.label_scan(label)?,
                }
            }
            ScanSource::Range {
                label,
                key,
                lower,
                upper,
                order,
                limit,
            } => {
                let limit = limit
                    .as_ref()
                    .map(|l| count_arg(l, cx, "LIMIT"))
                    .transpose()?;
                let (lo, hi) = (bound_value(lower)?, bound_value(upper)?);
                match g.index_range(label, key, lo.as_ref(), hi.as_ref(), *order, limit)? {
                    Some(ids) => ids,
                    None => g.label_scan(label)?,
                }
            }
        })
    }
}

impl Operator for Scan<'_> {
    fn next(&mut self, cx: &Cx<'_>) -> Result<Option<Row>, QueryError> {
        loop {
            if let Some(row) = &self.current {
                for id in self.ids.by_ref() {
                    cx.tick()?;
                    if cx.has_labels(id, self.check_labels)? {
                        let mut out = row.clone();
                        out[self.slot] = Val::Node(id);
                        return Ok(Some(out));
                    }
                }
                self.current = None;
            }
            let Some(row) = self.input.next(cx)? else {
                return Ok(None);
            };
            self.ids = self.candidates(&row, cx)?.into_iter();
            self.current = Some(row);
        }
    }
}

pub(super) struct ScanFilter<'p> {
    pub(super) input: BoxOp<'p>,
    pub(super) slot: usize,
    pub(super) label: &'p str,
    pub(super) check_labels: &'p [String],
    pub(super) keys: &'p [String],
    pub(super) key_slots: &'p [usize],
    pub(super) predicates: &'p [CExpr],
    pub(super) current: Option<Row>,
    pub(super) ids: std::vec::IntoIter<NodeId>,
}

impl ScanFilter<'_> {
    /// The ids of the label's nodes passing every predicate, from one sequential scan.
    fn matching(&self, row: &[Val], cx: &Cx<'_>) -> Result<Vec<NodeId>, QueryError> {
        let keys: Vec<&str> = self.keys.iter().map(String::as_str).collect();
        let mut scratch = row.to_vec();
        let mut out = Vec::new();
        let mut failure = None;
        cx.g.scan_label_values(self.label, &keys, &mut |id, values| {
            let pass = (|| -> Result<bool, QueryError> {
                cx.tick()?;
                if !cx.has_labels(id, self.check_labels)? {
                    return Ok(false);
                }
                scratch[self.slot] = Val::Node(id);
                for (slot, v) in self.key_slots.iter().zip(values) {
                    scratch[*slot] = v.as_ref().map_or(Val::Null, Val::from);
                }
                for p in self.predicates {
                    if eval(p, &scratch, cx)?.truthy()? != Some(true) {
                        return Ok(false);
                    }
                }
                Ok(true)
            })();
            match pass {
                Ok(true) => out.push(id),
                Ok(false) => {}
                Err(e) => failure = Some(e),
            }
            failure.is_none()
        })?;
        match failure {
            Some(e) => Err(e),
            None => Ok(out),
        }
    }
}

impl Operator for ScanFilter<'_> {
    fn next(&mut self, cx: &Cx<'_>) -> Result<Option<Row>, QueryError> {
        loop {
            if let Some(row) = &self.current {
                if let Some(id) = self.ids.next() {
                    let mut out = row.clone();
                    out[self.slot] = Val::Node(id);
                    return Ok(Some(out));
                }
                self.current = None;
            }
            let Some(row) = self.input.next(cx)? else {
                return Ok(None);
            };
            self.ids = self.matching(&row, cx)?.into_iter();
            self.current = Some(row);
        }
    }
}

pub(super) struct CountLabel<'p> {
    pub(super) width: usize,
    pub(super) slot: usize,
    pub(super) label: Option<&'p str>,
    pub(super) done: bool,
}

impl Operator for CountLabel<'_> {
    fn next(&mut self, cx: &Cx<'_>) -> Result<Option<Row>, QueryError> {
        if self.done {
            return Ok(None);
        }
        self.done = true;
        let n = match self.label {
            Some(l) => cx.g.label_count(l)?,
            None => cx.g.node_count()?,
        };
        let mut row = vec![Val::Null; self.width];
        row[self.slot] = Val::Int(i64::try_from(n).unwrap_or(i64::MAX));
        Ok(Some(row))
    }
}
