//! Aggregation and DISTINCT: per-group aggregate state (`AggState`), `Aggregate` and `Distinct`,
//! each holding at most `max_buffered_rows`.

use super::*;

/// Running state of one aggregate in one group.
pub(crate) enum AggState {
    Count(i64),
    Sum {
        int: i64,
        float: f64,
        is_float: bool,
    },
    Avg {
        sum: f64,
        n: u64,
    },
    Extreme(Option<Val>),
    Collect(Vec<Val>),
    /// The numbers seen, the percentile asked for, and whether it is `percentileDisc`.
    Percentile(Vec<Val>, f64, bool),
}

impl AggState {
    pub(crate) fn new(kind: AggKind) -> Self {
        match kind {
            AggKind::Count => AggState::Count(0),
            AggKind::Sum => AggState::Sum {
                int: 0,
                float: 0.0,
                is_float: false,
            },
            AggKind::Avg => AggState::Avg { sum: 0.0, n: 0 },
            AggKind::Min | AggKind::Max => AggState::Extreme(None),
            AggKind::Collect => AggState::Collect(Vec::new()),
            AggKind::PercentileDisc | AggKind::PercentileCont => {
                AggState::Percentile(Vec::new(), 0.0, kind == AggKind::PercentileDisc)
            }
        }
    }

    pub(crate) fn add(&mut self, kind: AggKind, v: Val) -> Result<(), QueryError> {
        match self {
            AggState::Count(n) => *n += 1,
            AggState::Sum {
                int,
                float,
                is_float,
            } => match v {
                Val::Int(i) if !*is_float => {
                    *int = int
                        .checked_add(i)
                        .ok_or_else(|| QueryError::Arithmetic("integer overflow in sum()".into()))?
                }
                Val::Int(i) => *float += i as f64,
                Val::Float(f) => {
                    if !*is_float {
                        *is_float = true;
                        *float = *int as f64;
                    }
                    *float += f;
                }
                other => {
                    return Err(QueryError::type_err(format!(
                        "sum() cannot add a {}",
                        other.type_name()
                    )))
                }
            },
            AggState::Avg { sum, n } => match v.as_f64() {
                Some(x) => {
                    *sum += x;
                    *n += 1;
                }
                None => {
                    return Err(QueryError::type_err(format!(
                        "avg() cannot average a {}",
                        v.type_name()
                    )))
                }
            },
            AggState::Extreme(best) => {
                let replace = match best {
                    None => true,
                    Some(b) => {
                        let o = order(&v, b);
                        if kind == AggKind::Min {
                            o.is_lt()
                        } else {
                            o.is_gt()
                        }
                    }
                };
                if replace {
                    *best = Some(v);
                }
            }
            AggState::Collect(items) => items.push(v),
            AggState::Percentile(values, p, _) => {
                let Val::List(mut pair) = v else {
                    return Ok(());
                };
                let (Some(q), Some(x)) = (pair.pop(), pair.pop()) else {
                    return Ok(());
                };
                let q = match q.as_f64() {
                    Some(q) if (0.0..=1.0).contains(&q) => q,
                    _ => {
                        return Err(QueryError::Arithmetic(format!(
                            "a percentile must be a number between 0 and 1, got {}",
                            crate::temporal::to_text(&q).unwrap_or_else(|| format!("{q:?}"))
                        )))
                    }
                };
                *p = q;
                match x {
                    Val::Null => {}
                    Val::Int(_) | Val::Float(_) => values.push(x),
                    other => {
                        return Err(QueryError::type_err(format!(
                            "a percentile of a {}",
                            other.type_name()
                        )))
                    }
                }
            }
        }
        Ok(())
    }

    pub(crate) fn finish(self) -> Val {
        match self {
            AggState::Percentile(mut values, p, disc) => {
                if values.is_empty() {
                    return Val::Null;
                }
                values.sort_by(order);
                let n = values.len();
                if disc {
                    let i = ((p * n as f64).ceil() as usize)
                        .saturating_sub(1)
                        .min(n - 1);
                    return values.swap_remove(i);
                }
                let pos = p * (n - 1) as f64;
                let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
                let (a, b) = (
                    values[lo].as_f64().unwrap_or(0.0),
                    values[hi.min(n - 1)].as_f64().unwrap_or(0.0),
                );
                Val::Float(a + (b - a) * (pos - lo as f64))
            }
            AggState::Count(n) => Val::Int(n),
            AggState::Sum {
                int,
                float,
                is_float,
            } => {
                if is_float {
                    Val::Float(float)
                } else {
                    Val::Int(int)
                }
            }
            AggState::Avg { sum, n } => {
                if n == 0 {
                    Val::Null
                } else {
                    Val::Float(sum / n as f64)
                }
            }
            AggState::Extreme(v) => v.unwrap_or(Val::Null),
            AggState::Collect(items) => Val::List(items),
        }
    }
}

pub(super) struct Group {
    pub(super) keys: Vec<Val>,
    pub(super) states: Vec<AggState>,
    pub(super) seen: Vec<HashSet<Vec<u8>>>,
}

pub(super) struct Aggregate<'p> {
    pub(super) input: BoxOp<'p>,
    pub(super) keys: &'p [(usize, CExpr)],
    pub(super) aggs: &'p [AggSpec],
    pub(super) width: usize,
    pub(super) output: Option<std::vec::IntoIter<Row>>,
}

impl Aggregate<'_> {
    fn run(&mut self, cx: &Cx<'_>) -> Result<Vec<Row>, QueryError> {
        let mut index: HashMap<Vec<u8>, usize> = HashMap::new();
        let mut groups: Vec<Group> = Vec::new();
        let new_group = |keys: Vec<Val>| Group {
            keys,
            states: self.aggs.iter().map(|a| AggState::new(a.kind)).collect(),
            seen: self.aggs.iter().map(|_| HashSet::new()).collect(),
        };
        while let Some(row) = self.input.next(cx)? {
            cx.tick()?;
            let keys = self
                .keys
                .iter()
                .map(|(_, e)| eval(e, &row, cx))
                .collect::<Result<Vec<_>, _>>()?;
            let k = key_of(&keys);
            let g = match index.get(&k) {
                Some(g) => *g,
                None => {
                    if groups.len() >= cx.limits.max_buffered_rows {
                        return Err(QueryError::BufferLimit(cx.limits.max_buffered_rows));
                    }
                    groups.push(new_group(keys));
                    index.insert(k, groups.len() - 1);
                    groups.len() - 1
                }
            };
            let group = &mut groups[g];
            for (i, spec) in self.aggs.iter().enumerate() {
                let v = match &spec.arg {
                    None => Val::Bool(true), // count(*) counts rows
                    Some(e) => eval(e, &row, cx)?,
                };
                if v.is_null() {
                    continue; // aggregates skip nulls
                }
                if spec.distinct {
                    let mut key = Vec::new();
                    write_key(&v, &mut key);
                    if !group.seen[i].insert(key) {
                        continue;
                    }
                }
                group.states[i].add(spec.kind, v)?;
            }
        }
        // Without grouping keys there is always exactly one group, even over no rows.
        if groups.is_empty() && self.keys.is_empty() {
            groups.push(new_group(Vec::new()));
        }
        Ok(groups
            .into_iter()
            .map(|g| {
                let mut row = vec![Val::Null; self.width];
                for ((slot, _), v) in self.keys.iter().zip(g.keys) {
                    row[*slot] = v;
                }
                for (spec, state) in self.aggs.iter().zip(g.states) {
                    row[spec.slot] = state.finish();
                }
                row
            })
            .collect())
    }
}

impl Operator for Aggregate<'_> {
    fn next(&mut self, cx: &Cx<'_>) -> Result<Option<Row>, QueryError> {
        if self.output.is_none() {
            self.output = Some(self.run(cx)?.into_iter());
        }
        Ok(self.output.as_mut().and_then(Iterator::next))
    }
}

pub(super) struct Distinct<'p> {
    pub(super) input: BoxOp<'p>,
    pub(super) slots: &'p [usize],
    pub(super) seen: HashSet<Vec<u8>>,
}

impl Operator for Distinct<'_> {
    fn next(&mut self, cx: &Cx<'_>) -> Result<Option<Row>, QueryError> {
        while let Some(row) = self.input.next(cx)? {
            let mut key = Vec::new();
            for s in self.slots {
                write_key(&row[*s], &mut key);
            }
            if self.seen.insert(key) {
                if self.seen.len() > cx.limits.max_buffered_rows {
                    return Err(QueryError::BufferLimit(cx.limits.max_buffered_rows));
                }
                return Ok(Some(row));
            }
        }
        Ok(None)
    }
}
