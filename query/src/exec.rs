//! The streaming executor: pull-based operators built from a plan, one row at a time.
//!
//! Operators that must see all their input (sort, aggregation, DISTINCT, top-k) hold at most
//! `Limits::max_buffered_rows`; everything else streams. Scans and expansions tick the time
//! budget as they go, so no query can outlive its deadline by more than a few hundred steps.

use std::collections::{HashMap, HashSet};
use std::ops::Bound;
use std::time::Instant;

use svc_engine::{Direction, EdgeId, IndexKind, NodeId, Value};

use crate::error::QueryError;
use crate::eval::{eval, CExpr, Cx, Row};
use crate::functions::AggKind;
use crate::plan::{AggSpec, Op, Plan, ScanSource};
use crate::result::{ResultNode, ResultRelationship, ResultValue};
use crate::value::{equals, key_of, order, to_property, write_key, Val};

pub(crate) trait Operator {
    fn next(&mut self, cx: &Cx<'_>) -> Result<Option<Row>, QueryError>;
}

type BoxOp<'p> = Box<dyn Operator + 'p>;

/// Builds the operator tree of `plan`; rows are `width` slots wide.
pub(crate) fn build<'p>(plan: &'p Plan, width: usize, profile: bool) -> BoxOp<'p> {
    let b = |p: &'p Plan| build(p, width, profile);
    let op: BoxOp<'p> = match &plan.op {
        Op::Once => Box::new(Once { width, done: false }),
        Op::Argument { arg } => Box::new(Argument {
            arg: *arg,
            done: false,
        }),
        Op::StageInput => Box::new(StageInput { rows: None }),
        Op::Scan {
            input,
            slot,
            source,
            check_labels,
        } => Box::new(Scan {
            input: b(input),
            slot: *slot,
            source,
            check_labels,
            current: None,
            ids: Vec::new().into_iter(),
        }),
        Op::Expand { input, .. } => Box::new(Expand {
            input: b(input),
            plan: &plan.op,
            pending: Vec::new(),
        }),
        Op::Filter {
            input, predicate, ..
        } => Box::new(Filter {
            input: b(input),
            predicate,
        }),
        Op::Project { input, items } => Box::new(Project {
            input: b(input),
            items,
        }),
        Op::Aggregate { input, keys, aggs } => Box::new(Aggregate {
            input: b(input),
            keys,
            aggs,
            width,
            output: None,
        }),
        Op::Distinct { input, slots } => Box::new(Distinct {
            input: b(input),
            slots,
            seen: HashSet::new(),
        }),
        Op::Sort { input, keys } => Box::new(Sort {
            input: b(input),
            keys,
            skip: None,
            limit: None,
            output: None,
        }),
        Op::TopK {
            input,
            keys,
            skip,
            limit,
        } => Box::new(Sort {
            input: b(input),
            keys,
            skip: skip.as_ref(),
            limit: Some(limit),
            output: None,
        }),
        Op::Skip { input, count } => Box::new(Skip {
            input: b(input),
            count,
            remaining: None,
        }),
        Op::Limit { input, count } => Box::new(Limit {
            input: b(input),
            count,
            remaining: None,
        }),
        Op::Unwind { input, expr, slot } => Box::new(Unwind {
            input: b(input),
            expr,
            slot: *slot,
            pending: Vec::new(),
        }),
        Op::Optional { input, inner, arg } => Box::new(Optional {
            input: b(input),
            inner,
            arg: *arg,
            width,
            profile,
            current: None,
        }),
        Op::ScanFilter {
            input,
            slot,
            label,
            check_labels,
            keys,
            key_slots,
            predicates,
        } => Box::new(ScanFilter {
            input: b(input),
            slot: *slot,
            label,
            check_labels,
            keys,
            key_slots,
            predicates,
            current: None,
            ids: Vec::new().into_iter(),
        }),
        Op::ExpandCount {
            input,
            from,
            types,
            direction,
            to_label,
            slot,
        } => Box::new(ExpandCount {
            input: b(input),
            from: *from,
            types,
            direction: *direction,
            to_label: to_label.as_deref(),
            slot: *slot,
        }),
        Op::CountLabel { slot, label } => Box::new(CountLabel {
            width,
            slot: *slot,
            label: label.as_deref(),
            done: false,
        }),
    };
    if profile {
        Box::new(Profiled {
            inner: op,
            id: plan.id,
        })
    } else {
        op
    }
}

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

/// Runs the final pipeline, converting each row's output slots into result values.
pub(crate) fn produce(
    plan: &Plan,
    width: usize,
    out_slots: &[usize],
    cx: &Cx<'_>,
    profile: bool,
) -> Result<Vec<Vec<ResultValue>>, QueryError> {
    let mut op = build(plan, width, profile);
    let mut rows = Vec::new();
    while let Some(row) = op.next(cx)? {
        if out_slots.is_empty() {
            continue;
        }
        if rows.len() >= cx.limits.max_rows {
            return Err(QueryError::RowLimit(cx.limits.max_rows));
        }
        let mut out = Vec::with_capacity(out_slots.len());
        for s in out_slots {
            out.push(to_result(row.get(*s).unwrap_or(&Val::Null), cx)?);
        }
        rows.push(out);
    }
    Ok(rows)
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
        Val::Node(id) => match cx.node(*id)? {
            Some(n) => ResultValue::Node(ResultNode {
                id: n.id.0,
                labels: n.labels.clone(),
                properties: n
                    .properties
                    .iter()
                    .map(|(k, v)| (k.clone(), ResultValue::from(v)))
                    .collect(),
            }),
            None => ResultValue::Null,
        },
        Val::Rel(id) => match cx.edge(*id)? {
            Some(e) => ResultValue::Relationship(ResultRelationship {
                id: e.id.0,
                rel_type: e.rel_type.clone(),
                start: e.start.0,
                end: e.end.0,
                properties: e
                    .properties
                    .iter()
                    .map(|(k, v)| (k.clone(), ResultValue::from(v)))
                    .collect(),
            }),
            None => ResultValue::Null,
        },
    })
}

struct Profiled<'p> {
    inner: BoxOp<'p>,
    id: usize,
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

struct Once {
    width: usize,
    done: bool,
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

struct Argument {
    arg: usize,
    done: bool,
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

struct StageInput {
    rows: Option<std::vec::IntoIter<Row>>,
}

impl Operator for StageInput {
    fn next(&mut self, cx: &Cx<'_>) -> Result<Option<Row>, QueryError> {
        let rows = self
            .rows
            .get_or_insert_with(|| std::mem::take(&mut *cx.stage_input.borrow_mut()).into_iter());
        Ok(rows.next())
    }
}

struct Scan<'p> {
    input: BoxOp<'p>,
    slot: usize,
    source: &'p ScanSource,
    check_labels: &'p [String],
    current: Option<Row>,
    ids: std::vec::IntoIter<NodeId>,
}

fn bound_value(b: &Bound<Val>) -> Result<Bound<Value>, QueryError> {
    Ok(match b {
        Bound::Included(v) => Bound::Included(to_property(v)?),
        Bound::Excluded(v) => Bound::Excluded(to_property(v)?),
        Bound::Unbounded => Bound::Unbounded,
    })
}

fn count_arg(e: &CExpr, cx: &Cx<'_>, what: &str) -> Result<usize, QueryError> {
    match eval(e, &[], cx)? {
        Val::Int(i) if i >= 0 => Ok(usize::try_from(i).unwrap_or(usize::MAX)),
        other => Err(QueryError::type_err(format!(
            "{what} needs a non-negative integer, got {}",
            other.type_name()
        ))),
    }
}

impl Scan<'_> {
    /// Candidate ids for one input row. Index answers are candidates only: the predicate that
    /// chose the index is still applied by a filter above.
    fn candidates(&self, row: &[Val], cx: &Cx<'_>) -> Result<Vec<NodeId>, QueryError> {
        let g = cx.g;
        Ok(match self.source {
            ScanSource::AllNodes => g.all_nodes()?,
            ScanSource::Label(l) => g.label_scan(l)?,
            ScanSource::Seek {
                label,
                key,
                value,
                kind,
            } => {
                let v = eval(value, row, cx)?;
                let found = match &v {
                    Val::Null => Some(Vec::new()),
                    Val::Str(_) | Val::Bool(_) => g.index_seek(label, key, &to_property(&v)?)?,
                    // Numeric equality goes through the ordered index so that 1 finds 1.0 too.
                    Val::Int(_) | Val::Float(_) | Val::DateTime(_)
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

struct Expand<'p> {
    input: BoxOp<'p>,
    plan: &'p Op,
    pending: Vec<Row>,
}

/// Whether the relationship is already bound in one of `slots` of the row.
fn rel_used(row: &[Val], slots: &[usize], edge: EdgeId) -> bool {
    slots.iter().any(|s| match row.get(*s) {
        Some(Val::Rel(r)) => *r == edge,
        Some(Val::List(l)) => l.iter().any(|x| matches!(x, Val::Rel(r) if *r == edge)),
        _ => false,
    })
}

impl Expand<'_> {
    fn expand_row(&self, row: Row, cx: &Cx<'_>) -> Result<Vec<Row>, QueryError> {
        let Op::Expand {
            from,
            rel,
            to,
            types,
            direction,
            to_labels,
            rel_props,
            into,
            hops,
            distinct_from,
            ..
        } = self.plan
        else {
            return Ok(Vec::new());
        };
        let start = match &row[*from] {
            Val::Node(id) => *id,
            Val::Null => return Ok(Vec::new()),
            other => {
                return Err(QueryError::type_err(format!(
                    "cannot expand from a {}",
                    other.type_name()
                )))
            }
        };
        let dirs: &[Direction] = match direction {
            Some(Direction::Outgoing) => &[Direction::Outgoing],
            Some(Direction::Incoming) => &[Direction::Incoming],
            None => &[Direction::Outgoing, Direction::Incoming],
        };
        let type_filter = if types.len() == 1 {
            Some(types[0].as_str())
        } else {
            None
        };
        // One step from `node`: (edge, neighbour) pairs passing the type, uniqueness and
        // relationship-property checks.
        let step = |node: NodeId, path: &[EdgeId]| -> Result<Vec<(EdgeId, NodeId)>, QueryError> {
            let mut out = Vec::new();
            for d in dirs {
                let adjacency = cx.g.adjacent(node, *d, type_filter)?;
                for adj in adjacency {
                    cx.tick()?;
                    if direction.is_none() && *d == Direction::Incoming && adj.neighbour == node {
                        continue; // an undirected self-loop was already seen as outgoing
                    }
                    if types.len() > 1 && !types.contains(&adj.rel_type) {
                        continue;
                    }
                    if path.contains(&adj.edge) || rel_used(&row, distinct_from, adj.edge) {
                        continue;
                    }
                    if !rel_props.is_empty() {
                        let Some(edge) = cx.edge(adj.edge)? else {
                            continue;
                        };
                        let mut ok = true;
                        for (k, v) in rel_props {
                            let want = eval(v, &row, cx)?;
                            let have = edge.properties.get(k).map_or(Val::Null, Val::from);
                            if equals(&have, &want) != Some(true) {
                                ok = false;
                                break;
                            }
                        }
                        if !ok {
                            continue;
                        }
                    }
                    out.push((adj.edge, adj.neighbour));
                }
            }
            Ok(out)
        };
        let end_ok = |n: NodeId| -> Result<bool, QueryError> {
            if *into {
                Ok(matches!(row[*to], Val::Node(t) if t == n))
            } else {
                cx.has_labels(n, to_labels)
            }
        };
        let mut out = Vec::new();
        let emit = |out: &mut Vec<Row>, rel_val: Val, n: NodeId| -> Result<(), QueryError> {
            if out.len() >= cx.limits.max_buffered_rows {
                return Err(QueryError::BufferLimit(cx.limits.max_buffered_rows));
            }
            let mut r = row.clone();
            r[*rel] = rel_val;
            r[*to] = Val::Node(n);
            out.push(r);
            Ok(())
        };
        match hops {
            None => {
                for (edge, n) in step(start, &[])? {
                    if end_ok(n)? {
                        emit(&mut out, Val::Rel(edge), n)?;
                    }
                }
            }
            Some((min, max)) => {
                // Depth-first over simple paths (no relationship twice), up to `max` hops.
                let mut stack: Vec<(NodeId, Vec<EdgeId>)> = vec![(start, Vec::new())];
                while let Some((node, path)) = stack.pop() {
                    cx.tick()?;
                    if path.len() as u32 >= *min && end_ok(node)? {
                        emit(
                            &mut out,
                            Val::List(path.iter().map(|e| Val::Rel(*e)).collect()),
                            node,
                        )?;
                    }
                    if (path.len() as u32) < *max {
                        for (edge, n) in step(node, &path)?.into_iter().rev() {
                            let mut p = path.clone();
                            p.push(edge);
                            stack.push((n, p));
                        }
                    }
                }
            }
        }
        Ok(out)
    }
}

impl Operator for Expand<'_> {
    fn next(&mut self, cx: &Cx<'_>) -> Result<Option<Row>, QueryError> {
        loop {
            if let Some(r) = self.pending.pop() {
                return Ok(Some(r));
            }
            let Some(row) = self.input.next(cx)? else {
                return Ok(None);
            };
            let mut rows = self.expand_row(row, cx)?;
            rows.reverse(); // pop() then yields them in adjacency order
            self.pending = rows;
        }
    }
}

struct Filter<'p> {
    input: BoxOp<'p>,
    predicate: &'p CExpr,
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

struct Project<'p> {
    input: BoxOp<'p>,
    items: &'p [(usize, CExpr)],
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

/// Running state of one aggregate in one group.
enum AggState {
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
}

impl AggState {
    fn new(kind: AggKind) -> Self {
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
        }
    }

    fn add(&mut self, kind: AggKind, v: Val) -> Result<(), QueryError> {
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
        }
        Ok(())
    }

    fn finish(self) -> Val {
        match self {
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

struct Group {
    keys: Vec<Val>,
    states: Vec<AggState>,
    seen: Vec<HashSet<Vec<u8>>>,
}

struct Aggregate<'p> {
    input: BoxOp<'p>,
    keys: &'p [(usize, CExpr)],
    aggs: &'p [AggSpec],
    width: usize,
    output: Option<std::vec::IntoIter<Row>>,
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

struct Distinct<'p> {
    input: BoxOp<'p>,
    slots: &'p [usize],
    seen: HashSet<Vec<u8>>,
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

/// ORDER BY, and with a limit, top-k: keeps only the best `skip + limit` rows while reading.
struct Sort<'p> {
    input: BoxOp<'p>,
    keys: &'p [(CExpr, bool)],
    skip: Option<&'p CExpr>,
    limit: Option<&'p CExpr>,
    output: Option<std::vec::IntoIter<Row>>,
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

struct Skip<'p> {
    input: BoxOp<'p>,
    count: &'p CExpr,
    remaining: Option<usize>,
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

struct Limit<'p> {
    input: BoxOp<'p>,
    count: &'p CExpr,
    remaining: Option<usize>,
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

struct Unwind<'p> {
    input: BoxOp<'p>,
    expr: &'p CExpr,
    slot: usize,
    pending: Vec<Row>,
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

struct Optional<'p> {
    input: BoxOp<'p>,
    inner: &'p Plan,
    arg: usize,
    width: usize,
    profile: bool,
    /// The outer row, its inner pipeline, and whether that pipeline produced anything.
    current: Option<(Row, BoxOp<'p>, bool)>,
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

struct ScanFilter<'p> {
    input: BoxOp<'p>,
    slot: usize,
    label: &'p str,
    check_labels: &'p [String],
    keys: &'p [String],
    key_slots: &'p [usize],
    predicates: &'p [CExpr],
    current: Option<Row>,
    ids: std::vec::IntoIter<NodeId>,
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

struct ExpandCount<'p> {
    input: BoxOp<'p>,
    from: usize,
    types: &'p [String],
    direction: Direction,
    to_label: Option<&'p str>,
    slot: usize,
}

impl Operator for ExpandCount<'_> {
    fn next(&mut self, cx: &Cx<'_>) -> Result<Option<Row>, QueryError> {
        while let Some(mut row) = self.input.next(cx)? {
            cx.tick()?;
            let start = match &row[self.from] {
                Val::Node(id) => *id,
                Val::Null => continue,
                other => {
                    return Err(QueryError::type_err(format!(
                        "cannot expand from a {}",
                        other.type_name()
                    )))
                }
            };
            let mut n = 0u64;
            if self.types.is_empty() {
                n =
                    cx.g.count_adjacent(start, self.direction, None, self.to_label)?;
            } else {
                for t in self.types {
                    n +=
                        cx.g.count_adjacent(start, self.direction, Some(t), self.to_label)?;
                }
            }
            if n > 0 {
                row[self.slot] = Val::Int(i64::try_from(n).unwrap_or(i64::MAX));
                return Ok(Some(row));
            }
        }
        Ok(None)
    }
}

struct CountLabel<'p> {
    width: usize,
    slot: usize,
    label: Option<&'p str>,
    done: bool,
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
