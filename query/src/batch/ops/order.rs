//! Ordering operators: ORDER BY (top-k with a limit), SKIP and LIMIT.

#[allow(unused_imports)]
use super::*;

/// ORDER BY, and with a limit top-k (`topk`): keeps the best `skip + limit` rows while reading.
pub(in crate::batch) struct Sort<'p> {
    pub(in crate::batch) input: BBox<'p>,
    pub(in crate::batch) keys: Vec<(BExpr, bool)>,
    pub(in crate::batch) skip: Option<&'p crate::eval::CExpr>,
    pub(in crate::batch) limit: Option<&'p crate::eval::CExpr>,
    pub(in crate::batch) output: Option<std::vec::IntoIter<Chunk>>,
    /// Slots a projection deferred above this top-k reads properties of (see `top_k`).
    pub(in crate::batch) readable: Vec<usize>,
}

/// Sort keys of the held rows, one column per key.
pub(super) struct Held {
    rows: Chunk,
    keys: Vec<Col>,
}

impl Sort<'_> {
    /// The order of `held`'s rows (input order breaks ties: the sort is stable).
    fn order(&self, bx: &Bx<'_, '_>, held: &Held) -> Vec<u32> {
        // Per key: a rank per row (dictionary codes ranked once), or values.
        enum K {
            Rank(Vec<u32>),
            Vals(Vec<Val>),
        }
        let node = |r: NodeRef| bx.node_val(r);
        let keys: Vec<K> = held
            .keys
            .iter()
            .map(|c| match c {
                Col::Dict { codes, dict } => {
                    // Rank the codes the held rows use (the dictionary may be far larger).
                    let rank = dict.ranks(codes);
                    K::Rank(codes.iter().map(|c| rank[*c as usize]).collect())
                }
                other => K::Vals(other.to_vals_with(held.rows.len, &node)),
            })
            .collect();
        let mut idx: Vec<u32> = (0..held.rows.len as u32).collect();
        idx.sort_by(|a, b| {
            for (k, (_, desc)) in keys.iter().zip(&self.keys) {
                let o = match k {
                    K::Rank(r) => r[*a as usize].cmp(&r[*b as usize]),
                    K::Vals(v) => order(&v[*a as usize], &v[*b as usize]),
                };
                let o = if *desc { o.reverse() } else { o };
                if o.is_ne() {
                    return o;
                }
            }
            std::cmp::Ordering::Equal
        });
        idx
    }

    fn run(&mut self, bx: &Bx<'_, '_>) -> Result<Vec<Chunk>, QueryError> {
        if let Some(l) = self.limit {
            let skip = self
                .skip
                .map(|s| count_arg(s, bx.cx, "SKIP"))
                .transpose()?
                .unwrap_or(0);
            let keep = skip.saturating_add(count_arg(l, bx.cx, "LIMIT")?);
            return super::topk::top_k(bx, &mut self.input, &mut self.keys, keep, &self.readable);
        }
        let node = |r: NodeRef| bx.node_val(r);
        let mut held: Option<Held> = None;
        while let Some(ch) = self.input.next(bx)? {
            check_deadline(bx)?;
            let mut keys = Vec::with_capacity(self.keys.len());
            for (e, _) in &mut self.keys {
                keys.push(e.eval(bx, &ch)?);
            }
            let len = ch.len;
            match &mut held {
                None => held = Some(Held { rows: ch, keys }),
                Some(h) => {
                    let before = h.rows.len;
                    h.rows.append(ch, &node);
                    for (hk, k) in h.keys.iter_mut().zip(keys) {
                        hk.append(k, before, len, &node);
                    }
                }
            }
            if held
                .as_ref()
                .is_some_and(|h| h.rows.len > bx.cx.limits.max_buffered_rows)
            {
                return Err(QueryError::BufferLimit(bx.cx.limits.max_buffered_rows));
            }
        }
        let Some(h) = held else {
            return Ok(Vec::new());
        };
        let idx = self.order(bx, &h);
        Ok(idx.chunks(CHUNK).map(|part| h.rows.gather(part)).collect())
    }
}

impl BOp for Sort<'_> {
    fn next(&mut self, bx: &Bx<'_, '_>) -> Result<Option<Chunk>, QueryError> {
        if self.output.is_none() {
            self.output = Some(self.run(bx)?.into_iter());
        }
        Ok(self.output.as_mut().and_then(Iterator::next))
    }
}

pub(in crate::batch) struct Skip<'p> {
    pub(in crate::batch) input: BBox<'p>,
    pub(in crate::batch) count: &'p crate::eval::CExpr,
    pub(in crate::batch) remaining: Option<usize>,
}

impl BOp for Skip<'_> {
    fn next(&mut self, bx: &Bx<'_, '_>) -> Result<Option<Chunk>, QueryError> {
        if self.remaining.is_none() {
            self.remaining = Some(count_arg(self.count, bx.cx, "SKIP")?);
        }
        while let Some(ch) = self.input.next(bx)? {
            let n = self.remaining.unwrap_or(0);
            if n == 0 {
                return Ok(Some(ch));
            }
            if n >= ch.len {
                self.remaining = Some(n - ch.len);
                continue;
            }
            self.remaining = Some(0);
            let idx: Vec<u32> = (n as u32..ch.len as u32).collect();
            return Ok(Some(ch.gather(&idx)));
        }
        Ok(None)
    }
}

pub(in crate::batch) struct Limit<'p> {
    pub(in crate::batch) input: BBox<'p>,
    pub(in crate::batch) count: &'p crate::eval::CExpr,
    pub(in crate::batch) remaining: Option<usize>,
}

impl BOp for Limit<'_> {
    fn next(&mut self, bx: &Bx<'_, '_>) -> Result<Option<Chunk>, QueryError> {
        if self.remaining.is_none() {
            self.remaining = Some(count_arg(self.count, bx.cx, "LIMIT")?);
        }
        let n = self.remaining.unwrap_or(0);
        if n == 0 {
            return Ok(None);
        }
        let Some(ch) = self.input.next(bx)? else {
            return Ok(None);
        };
        if ch.len <= n {
            self.remaining = Some(n - ch.len);
            return Ok(Some(ch));
        }
        self.remaining = Some(0);
        let idx: Vec<u32> = (0..n as u32).collect();
        Ok(Some(ch.gather(&idx)))
    }
}

/// Whether `kind` is one this module aggregates (all of today's).
pub(in crate::batch) fn known_aggregate(kind: AggKind) -> bool {
    matches!(
        kind,
        AggKind::Count
            | AggKind::Sum
            | AggKind::Avg
            | AggKind::Min
            | AggKind::Max
            | AggKind::Collect
    )
}
