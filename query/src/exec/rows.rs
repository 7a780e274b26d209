//! Row sources and per-row operators: `Once`, `Argument`, `StageInput`, `Filter`, `Project`,
//! `Unwind` and `Optional`.

use super::*;

pub(super) struct Once {
    pub(super) width: usize,
    pub(super) done: bool,
}

impl Operator for Once {
    fn next(&mut self, _cx: &Cx<'_>) -> Result<Option<Row>, QueryError> {
        if self.done {
            return Ok(None);
        }
        self.done = true;
        Ok(Some(vec![Val::Null; self.width]))
    }
}

pub(super) struct Argument {
    pub(super) arg: usize,
    pub(super) done: bool,
}

impl Operator for Argument {
    fn next(&mut self, cx: &Cx<'_>) -> Result<Option<Row>, QueryError> {
        if self.done {
            return Ok(None);
        }
        self.done = true;
        Ok(cx.args.borrow().get(self.arg).cloned())
    }
}

pub(super) struct StageInput {
    pub(super) rows: Option<std::vec::IntoIter<Row>>,
}

impl Operator for StageInput {
    fn next(&mut self, cx: &Cx<'_>) -> Result<Option<Row>, QueryError> {
        let rows = self
            .rows
            .get_or_insert_with(|| std::mem::take(&mut *cx.stage_input.borrow_mut()).into_iter());
        Ok(rows.next())
    }
}

pub(super) struct Filter<'p> {
    pub(super) input: BoxOp<'p>,
    pub(super) predicate: &'p CExpr,
}

impl Operator for Filter<'_> {
    fn next(&mut self, cx: &Cx<'_>) -> Result<Option<Row>, QueryError> {
        while let Some(row) = self.input.next(cx)? {
            cx.tick()?;
            if eval(self.predicate, &row, cx)?.truthy()? == Some(true) {
                return Ok(Some(row));
            }
        }
        Ok(None)
    }
}

pub(super) struct Project<'p> {
    pub(super) input: BoxOp<'p>,
    pub(super) items: &'p [(usize, CExpr)],
}

impl Operator for Project<'_> {
    fn next(&mut self, cx: &Cx<'_>) -> Result<Option<Row>, QueryError> {
        let Some(mut row) = self.input.next(cx)? else {
            return Ok(None);
        };
        let values = self
            .items
            .iter()
            .map(|(_, e)| eval(e, &row, cx))
            .collect::<Result<Vec<_>, _>>()?;
        for ((slot, _), v) in self.items.iter().zip(values) {
            row[*slot] = v;
        }
        Ok(Some(row))
    }
}

pub(super) struct Unwind<'p> {
    pub(super) input: BoxOp<'p>,
    pub(super) expr: &'p CExpr,
    pub(super) slot: usize,
    pub(super) pending: Vec<Row>,
}

impl Operator for Unwind<'_> {
    fn next(&mut self, cx: &Cx<'_>) -> Result<Option<Row>, QueryError> {
        loop {
            if let Some(r) = self.pending.pop() {
                return Ok(Some(r));
            }
            let Some(row) = self.input.next(cx)? else {
                return Ok(None);
            };
            let items = match eval(self.expr, &row, cx)? {
                Val::List(items) => items,
                Val::Null => Vec::new(),
                other => vec![other],
            };
            if items.len() > cx.limits.max_buffered_rows {
                return Err(QueryError::BufferLimit(cx.limits.max_buffered_rows));
            }
            self.pending = items
                .into_iter()
                .rev()
                .map(|v| {
                    let mut r = row.clone();
                    r[self.slot] = v;
                    r
                })
                .collect();
        }
    }
}

pub(super) struct Optional<'p> {
    pub(super) input: BoxOp<'p>,
    pub(super) inner: &'p Plan,
    pub(super) arg: usize,
    pub(super) width: usize,
    pub(super) profile: bool,
    /// The outer row, its inner pipeline, and whether that pipeline produced anything.
    pub(super) current: Option<(Row, BoxOp<'p>, bool)>,
}

impl Operator for Optional<'_> {
    fn next(&mut self, cx: &Cx<'_>) -> Result<Option<Row>, QueryError> {
        loop {
            if let Some((row, inner, found)) = &mut self.current {
                if let Some(r) = inner.next(cx)? {
                    *found = true;
                    return Ok(Some(r));
                }
                let (row, _, found) = (std::mem::take(row), (), *found);
                self.current = None;
                if !found {
                    return Ok(Some(row)); // no match: the new variables stay null
                }
            }
            let Some(row) = self.input.next(cx)? else {
                return Ok(None);
            };
            {
                let mut args = cx.args.borrow_mut();
                if args.len() <= self.arg {
                    args.resize(self.arg + 1, Vec::new());
                }
                args[self.arg] = row.clone();
            }
            let inner = build(self.inner, self.width, self.profile);
            self.current = Some((row, inner, false));
        }
    }
}

/// UNION: the rows of each input in turn, the input's output slots copied into `out`.
pub(super) struct Union<'p> {
    pub(super) inputs: Vec<(BoxOp<'p>, &'p [usize])>,
    pub(super) out: &'p [usize],
    pub(super) width: usize,
}

impl Operator for Union<'_> {
    fn next(&mut self, cx: &Cx<'_>) -> Result<Option<Row>, QueryError> {
        while let Some((input, slots)) = self.inputs.first_mut() {
            if let Some(row) = input.next(cx)? {
                let mut r = vec![Val::Null; self.width];
                for (o, s) in self.out.iter().zip(slots.iter()) {
                    r[*o] = row.get(*s).cloned().unwrap_or(Val::Null);
                }
                return Ok(Some(r));
            }
            self.inputs.remove(0);
        }
        Ok(None)
    }
}
