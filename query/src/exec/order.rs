//! Ordering and limits: `Sort` (ORDER BY, top-k with a limit), `Skip`, `Limit`, and the evaluation
//! of SKIP / LIMIT counts.

use super::*;

pub(crate) fn count_arg(e: &CExpr, cx: &Cx<'_>, what: &str) -> Result<usize, QueryError> {
    match eval(e, &[], cx)? {
        Val::Int(i) if i >= 0 => Ok(usize::try_from(i).unwrap_or(usize::MAX)),
        other => Err(QueryError::type_err(format!(
            "{what} needs a non-negative integer, got {}",
            other.type_name()
        ))),
    }
}

/// ORDER BY, and with a limit, top-k: keeps only the best `skip + limit` rows while reading.
pub(super) struct Sort<'p> {
    pub(super) input: BoxOp<'p>,
    pub(super) keys: &'p [(CExpr, bool)],
    pub(super) skip: Option<&'p CExpr>,
    pub(super) limit: Option<&'p CExpr>,
    pub(super) output: Option<std::vec::IntoIter<Row>>,
}

impl Sort<'_> {
    fn run(&mut self, cx: &Cx<'_>) -> Result<Vec<Row>, QueryError> {
        let keep = match self.limit {
            Some(l) => {
                let skip = self
                    .skip
                    .map(|s| count_arg(s, cx, "SKIP"))
                    .transpose()?
                    .unwrap_or(0);
                Some(skip.saturating_add(count_arg(l, cx, "LIMIT")?))
            }
            None => None,
        };
        let compare = |a: &(Vec<Val>, usize, Row), b: &(Vec<Val>, usize, Row)| {
            for ((x, y), (_, desc)) in a.0.iter().zip(&b.0).zip(self.keys) {
                let o = order(x, y);
                let o = if *desc { o.reverse() } else { o };
                if o.is_ne() {
                    return o;
                }
            }
            a.1.cmp(&b.1) // stable: input order breaks ties
        };
        let mut rows: Vec<(Vec<Val>, usize, Row)> = Vec::new();
        let mut seq = 0;
        while let Some(row) = self.input.next(cx)? {
            cx.tick()?;
            let k = self
                .keys
                .iter()
                .map(|(e, _)| eval(e, &row, cx))
                .collect::<Result<Vec<_>, _>>()?;
            rows.push((k, seq, row));
            seq += 1;
            match keep {
                Some(k) if rows.len() > k.saturating_mul(2).max(1024) => {
                    rows.sort_by(compare);
                    rows.truncate(k);
                }
                None if rows.len() > cx.limits.max_buffered_rows => {
                    return Err(QueryError::BufferLimit(cx.limits.max_buffered_rows));
                }
                _ => {}
            }
        }
        rows.sort_by(compare);
        if let Some(k) = keep {
            rows.truncate(k);
        }
        Ok(rows.into_iter().map(|(_, _, r)| r).collect())
    }
}

impl Operator for Sort<'_> {
    fn next(&mut self, cx: &Cx<'_>) -> Result<Option<Row>, QueryError> {
        if self.output.is_none() {
            self.output = Some(self.run(cx)?.into_iter());
        }
        Ok(self.output.as_mut().and_then(Iterator::next))
    }
}

pub(super) struct Skip<'p> {
    pub(super) input: BoxOp<'p>,
    pub(super) count: &'p CExpr,
    pub(super) remaining: Option<usize>,
}

impl Operator for Skip<'_> {
    fn next(&mut self, cx: &Cx<'_>) -> Result<Option<Row>, QueryError> {
        if self.remaining.is_none() {
            self.remaining = Some(count_arg(self.count, cx, "SKIP")?);
        }
        while let Some(row) = self.input.next(cx)? {
            match &mut self.remaining {
                Some(n) if *n > 0 => *n -= 1,
                _ => return Ok(Some(row)),
            }
        }
        Ok(None)
    }
}

pub(super) struct Limit<'p> {
    pub(super) input: BoxOp<'p>,
    pub(super) count: &'p CExpr,
    pub(super) remaining: Option<usize>,
}

impl Operator for Limit<'_> {
    fn next(&mut self, cx: &Cx<'_>) -> Result<Option<Row>, QueryError> {
        if self.remaining.is_none() {
            self.remaining = Some(count_arg(self.count, cx, "LIMIT")?);
        }
        match &mut self.remaining {
            Some(0) | None => Ok(None),
            Some(n) => {
                *n -= 1;
                self.input.next(cx)
            }
        }
    }
}
