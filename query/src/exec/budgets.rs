//! Driving a pipeline under its budgets: `collect` (the buffered-row cap), `produce` (the
//! result-row cap and conversion to result values), and `Profiled`, which times each operator for
//! PROFILE.

use super::*;

/// Runs a read pipeline to completion, holding at most `max_buffered_rows`.
pub(crate) fn collect(
    plan: &Plan,
    width: usize,
    cx: &Cx<'_>,
    profile: bool,
) -> Result<Vec<Row>, QueryError> {
    let mut op = build(plan, width, profile);
    let mut rows = Vec::new();
    while let Some(row) = op.next(cx)? {
        if rows.len() >= cx.limits.max_buffered_rows {
            return Err(QueryError::BufferLimit(cx.limits.max_buffered_rows));
        }
        rows.push(row);
    }
    Ok(rows)
}

/// What the batch executor needs to know of a final pipeline: made once per plan, so a
/// cached plan keeps it.
pub(crate) fn analyse(plan: &Plan, width: usize, out_slots: &[usize]) -> Analysis {
    Analysis::new(plan, width, Some(out_slots))
}

/// Runs the final pipeline (analysed by `analyse`), converting each row's output slots into
/// result values; `tree`, when given, is the pipeline's batch tree, compiled before.
pub(crate) fn produce<'p>(
    plan: &'p Plan,
    width: usize,
    out_slots: &[usize],
    (analysis, memo): (&'p Analysis, Option<&'p BatchMemo>),
    cx: &Cx<'_>,
    profile: bool,
    tree: Option<&mut crate::batch::Tree<'p>>,
) -> Result<Vec<Vec<ResultValue>>, QueryError> {
    let mut built;
    let op: &mut (dyn Operator + 'p) = match tree {
        Some(t) => t,
        None => {
            built = build_memo(plan, width, profile, Some(analysis), memo);
            &mut *built
        }
    };
    let mut rows = Vec::new();
    // A slot's value moves into the result at its last use (no copy of each string).
    let last: Vec<bool> = (0..out_slots.len())
        .map(|i| !out_slots[i + 1..].contains(&out_slots[i]))
        .collect();
    while let Some(mut row) = op.next(cx)? {
        if out_slots.is_empty() {
            continue;
        }
        if rows.len() >= cx.limits.max_rows {
            return Err(QueryError::RowLimit(cx.limits.max_rows));
        }
        let mut out = Vec::with_capacity(out_slots.len());
        for (s, last) in out_slots.iter().zip(&last) {
            out.push(match row.get_mut(*s) {
                Some(v) if *last => into_result(std::mem::replace(v, Val::Null), cx)?,
                Some(v) => to_result(v, cx)?,
                None => ResultValue::Null,
            });
        }
        rows.push(out);
    }
    Ok(rows)
}

/// `to_result` of a value the caller no longer needs: strings, lists and maps move.
fn into_result(v: Val, cx: &Cx<'_>) -> Result<ResultValue, QueryError> {
    Ok(match v {
        Val::Str(s) => ResultValue::String(s),
        Val::List(l) => ResultValue::List(
            l.into_iter()
                .map(|x| into_result(x, cx))
                .collect::<Result<_, _>>()?,
        ),
        Val::Map(m) => ResultValue::Map(
            m.into_iter()
                .map(|(k, x)| Ok((k, into_result(x, cx)?)))
                .collect::<Result<_, QueryError>>()?,
        ),
        other => to_result(&other, cx)?,
    })
}

/// Converts a run-time value to a result value, loading nodes and relationships.
pub(crate) fn to_result(v: &Val, cx: &Cx<'_>) -> Result<ResultValue, QueryError> {
    Ok(match v {
        Val::Null => ResultValue::Null,
        Val::Bool(b) => ResultValue::Bool(*b),
        Val::Int(i) => ResultValue::Int(*i),
        Val::Float(f) => ResultValue::Float(*f),
        Val::Str(s) => ResultValue::String(s.clone()),
        Val::DateTime(t) => ResultValue::DateTime(*t),
        Val::List(l) => ResultValue::List(
            l.iter()
                .map(|x| to_result(x, cx))
                .collect::<Result<_, _>>()?,
        ),
        Val::Map(m) => ResultValue::Map(
            m.iter()
                .map(|(k, x)| Ok((k.clone(), to_result(x, cx)?)))
                .collect::<Result<_, QueryError>>()?,
        ),
        Val::Node(id) => match result_node(*id, cx)? {
            Some(n) => ResultValue::Node(n),
            None => ResultValue::Null,
        },
        Val::Rel(id) => match result_rel(*id, cx)? {
            Some(r) => ResultValue::Relationship(r),
            None => ResultValue::Null,
        },
        Val::Date(_)
        | Val::LocalTime(_)
        | Val::Time(..)
        | Val::LocalDateTime(_)
        | Val::Zoned(_)
        | Val::Duration(_) => ResultValue::Temporal(crate::result::ResultTemporal {
            type_name: v.type_name(),
            text: crate::temporal::to_text(v).unwrap_or_default(),
        }),
        Val::Path(nodes, rels) => {
            let mut path = ResultPath {
                nodes: Vec::with_capacity(nodes.len()),
                relationships: Vec::with_capacity(rels.len()),
            };
            for id in nodes {
                match result_node(*id, cx)? {
                    Some(n) => path.nodes.push(n),
                    None => return Ok(ResultValue::Null),
                }
            }
            for id in rels {
                match result_rel(*id, cx)? {
                    Some(r) => path.relationships.push(r),
                    None => return Ok(ResultValue::Null),
                }
            }
            ResultValue::Path(path)
        }
    })
}

fn result_node(id: NodeId, cx: &Cx<'_>) -> Result<Option<ResultNode>, QueryError> {
    // Shown ids stay below 2^63 for every id a store hands out; `as` keeps the rest a bijection.
    Ok(cx.node(id)?.map(|n| ResultNode {
        id: cx.limits.ids.node(n.id) as u64,
        labels: n.labels.clone(),
        properties: n
            .properties
            .iter()
            .map(|(k, v)| (k.clone(), ResultValue::from(v)))
            .collect(),
    }))
}

fn result_rel(id: EdgeId, cx: &Cx<'_>) -> Result<Option<ResultRelationship>, QueryError> {
    Ok(cx.edge(id)?.map(|e| ResultRelationship {
        id: cx.limits.ids.relationship(e.id) as u64,
        rel_type: e.rel_type.clone(),
        start: cx.limits.ids.node(e.start) as u64,
        end: cx.limits.ids.node(e.end) as u64,
        properties: e
            .properties
            .iter()
            .map(|(k, v)| (k.clone(), ResultValue::from(v)))
            .collect(),
    }))
}

pub(super) struct Profiled<'p> {
    pub(super) inner: BoxOp<'p>,
    pub(super) id: usize,
}

impl Operator for Profiled<'_> {
    fn next(&mut self, cx: &Cx<'_>) -> Result<Option<Row>, QueryError> {
        let start = Instant::now();
        let r = self.inner.next(cx);
        let nanos = start.elapsed().as_nanos() as u64;
        if let Some(p) = &cx.profile {
            if let Some(entry) = p.borrow_mut().get_mut(self.id) {
                entry.1 += nanos;
                if matches!(r, Ok(Some(_))) {
                    entry.0 += 1;
                }
            }
        }
        r
    }
}
