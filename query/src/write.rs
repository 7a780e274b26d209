//! The write path: runs a planned statement stage by stage over a `GraphWrite`.
//!
//! Each read stage runs to completion over the graph as it stands, then the write clause that
//! follows is applied to every row it produced. Only this module calls `GraphWrite` methods,
//! and only `run_write` (which demands a `&mut impl GraphWrite`) reaches it.

use std::time::Instant;

use svc_engine::{Direction, GraphWrite, NodeId, Properties, Value};

use crate::error::QueryError;
use crate::eval::{eval, CExpr, Cx, Row};
use crate::exec::{collect, produce};
use crate::plan::{CreatePattern, Planned, RemoveOp, SetOp, Stage, WriteOp};
use crate::result::{Limits, QueryStats, ResultValue};
use crate::value::{to_property, Val};

pub(crate) struct WriteOutcome {
    pub rows: Vec<Vec<ResultValue>>,
    pub profile: Vec<(u64, u64)>,
}

pub(crate) fn run_stages<G: GraphWrite>(
    planned: &Planned,
    g: &mut G,
    limits: &Limits,
    deadline: Instant,
    profile: bool,
    stats: &mut QueryStats,
) -> Result<WriteOutcome, QueryError> {
    let mut rows: Vec<Row> = Vec::new();
    let mut figures = vec![(0u64, 0u64); planned.operators];
    let mut results = Vec::new();
    let last = planned.stages.len().saturating_sub(1);
    for (i, stage) in planned.stages.iter().enumerate() {
        match stage {
            Stage::Read(plan) => {
                let cx = Cx::new(&*g, limits, deadline, planned.operators, profile);
                *cx.stage_input.borrow_mut() = std::mem::take(&mut rows);
                if i == last {
                    let analysis = crate::exec::analyse(plan, planned.width, &planned.out_slots);
                    results = produce(
                        plan,
                        planned.width,
                        &planned.out_slots,
                        (&analysis, None),
                        &cx,
                        profile,
                        None,
                    )?;
                } else {
                    rows = collect(plan, planned.width, &cx, profile)?;
                }
                if let Some(p) = &cx.profile {
                    for (acc, x) in figures.iter_mut().zip(p.borrow().iter()) {
                        acc.0 += x.0;
                        acc.1 += x.1;
                    }
                }
            }
            Stage::Write { id, op, .. } => {
                let start = Instant::now();
                rows = apply(op, rows, g, limits, deadline, planned, stats, &mut figures)?;
                if let Some(f) = figures.get_mut(*id) {
                    f.0 += rows.len() as u64;
                    f.1 += start.elapsed().as_nanos() as u64;
                }
            }
        }
    }
    Ok(WriteOutcome {
        rows: results,
        profile: figures,
    })
}

/// A short-lived read context over the graph between two mutations.
fn with_cx<G: GraphWrite, T>(
    g: &G,
    limits: &Limits,
    deadline: Instant,
    f: impl FnOnce(&Cx<'_>) -> Result<T, QueryError>,
) -> Result<T, QueryError> {
    let cx = Cx::new(g, limits, deadline, 0, false);
    cx.tick()?;
    if Instant::now() > deadline {
        return Err(QueryError::Timeout(limits.time));
    }
    f(&cx)
}

#[allow(clippy::too_many_arguments)]
fn apply<G: GraphWrite>(
    op: &WriteOp,
    rows: Vec<Row>,
    g: &mut G,
    limits: &Limits,
    deadline: Instant,
    planned: &Planned,
    stats: &mut QueryStats,
    figures: &mut [(u64, u64)],
) -> Result<Vec<Row>, QueryError> {
    let mut out = Vec::with_capacity(rows.len());
    for mut row in rows {
        match op {
            WriteOp::Create(pattern) => {
                create(pattern, &mut row, g, limits, deadline, stats)?;
                out.push(row);
            }
            WriteOp::Merge {
                matcher,
                arg,
                create: pattern,
                on_create,
                on_match,
            } => {
                let matches = with_cx(g, limits, deadline, |cx| {
                    {
                        let mut args = cx.args.borrow_mut();
                        args.resize(*arg + 1, Vec::new());
                        args[*arg] = row.clone();
                    }
                    collect(matcher, planned.width, cx, false)
                })?;
                let _ = &figures;
                if matches.is_empty() {
                    create(pattern, &mut row, g, limits, deadline, stats)?;
                    set_all(on_create, &row, g, limits, deadline, stats)?;
                    out.push(row);
                } else {
                    for m in matches {
                        set_all(on_match, &m, g, limits, deadline, stats)?;
                        out.push(m);
                    }
                }
            }
            WriteOp::Set(items) => {
                set_all(items, &row, g, limits, deadline, stats)?;
                out.push(row);
            }
            WriteOp::Remove(items) => {
                for item in items {
                    remove(item, &row, g, limits, deadline, stats)?;
                }
                out.push(row);
            }
            WriteOp::Delete { detach, exprs } => {
                for e in exprs {
                    let v = with_cx(g, limits, deadline, |cx| eval(e, &row, cx))?;
                    delete(v, *detach, g, stats)?;
                }
                out.push(row);
            }
        }
        if out.len() > limits.max_buffered_rows {
            return Err(QueryError::BufferLimit(limits.max_buffered_rows));
        }
    }
    Ok(out)
}

/// Evaluates a property map; null values are simply not stored.
fn eval_props<G: GraphWrite>(
    props: &[(String, CExpr)],
    row: &[Val],
    g: &G,
    limits: &Limits,
    deadline: Instant,
) -> Result<Properties, QueryError> {
    with_cx(g, limits, deadline, |cx| {
        let mut out = Properties::new();
        for (k, e) in props {
            let v = to_property(&eval(e, row, cx)?)?;
            if !v.is_null() {
                out.insert(k.clone(), v);
            }
        }
        Ok(out)
    })
}

fn create<G: GraphWrite>(
    pattern: &CreatePattern,
    row: &mut Row,
    g: &mut G,
    limits: &Limits,
    deadline: Instant,
    stats: &mut QueryStats,
) -> Result<(), QueryError> {
    for n in &pattern.nodes {
        if n.bound {
            if !matches!(row[n.slot], Val::Node(_)) {
                return Err(QueryError::type_err(format!(
                    "cannot create a relationship to a {}",
                    row[n.slot].type_name()
                )));
            }
            continue;
        }
        let props = eval_props(&n.props, row, g, limits, deadline)?;
        stats.properties_set += props.len() as u64;
        let labels: Vec<&str> = n.labels.iter().map(String::as_str).collect();
        let id = g.create_node(&labels, props)?;
        stats.nodes_created += 1;
        stats.labels_added += labels.len() as u64;
        row[n.slot] = Val::Node(id);
    }
    for r in &pattern.rels {
        let (Val::Node(start), Val::Node(end)) = (&row[r.start], &row[r.end]) else {
            return Err(QueryError::type_err(
                "cannot create a relationship whose end is not a node",
            ));
        };
        let (start, end) = (*start, *end);
        let props = eval_props(&r.props, row, g, limits, deadline)?;
        stats.properties_set += props.len() as u64;
        let id = g.create_edge(start, end, &r.rel_type, props)?;
        stats.relationships_created += 1;
        row[r.slot] = Val::Rel(id);
    }
    Ok(())
}

fn set_all<G: GraphWrite>(
    items: &[SetOp],
    row: &[Val],
    g: &mut G,
    limits: &Limits,
    deadline: Instant,
    stats: &mut QueryStats,
) -> Result<(), QueryError> {
    for item in items {
        set(item, row, g, limits, deadline, stats)?;
    }
    Ok(())
}

/// The properties a SET ... = / += value provides (a map, or another entity's properties).
fn map_value<G: GraphWrite>(
    e: &CExpr,
    row: &[Val],
    g: &G,
    limits: &Limits,
    deadline: Instant,
) -> Result<Option<Properties>, QueryError> {
    with_cx(g, limits, deadline, |cx| {
        let v = eval(e, row, cx)?;
        let map = match v {
            Val::Null => return Ok(None),
            Val::Map(m) => m,
            Val::Node(id) => cx
                .node(id)?
                .map(|n| {
                    n.properties
                        .iter()
                        .map(|(k, v)| (k.clone(), Val::from(v)))
                        .collect()
                })
                .unwrap_or_default(),
            Val::Rel(id) => cx
                .edge(id)?
                .map(|r| {
                    r.properties
                        .iter()
                        .map(|(k, v)| (k.clone(), Val::from(v)))
                        .collect()
                })
                .unwrap_or_default(),
            other => {
                return Err(QueryError::type_err(format!(
                    "SET needs a map, got a {}",
                    other.type_name()
                )))
            }
        };
        let mut out = Properties::new();
        for (k, v) in map {
            out.insert(k, to_property(&v)?);
        }
        Ok(Some(out))
    })
}

fn set<G: GraphWrite>(
    item: &SetOp,
    row: &[Val],
    g: &mut G,
    limits: &Limits,
    deadline: Instant,
    stats: &mut QueryStats,
) -> Result<(), QueryError> {
    let slot = match item {
        SetOp::Prop { slot, .. }
        | SetOp::Replace { slot, .. }
        | SetOp::Merge { slot, .. }
        | SetOp::Labels { slot, .. } => *slot,
    };
    let target = row[slot].clone();
    if target.is_null() {
        return Ok(()); // SET on null (e.g. from OPTIONAL MATCH) does nothing
    }
    match item {
        SetOp::Prop { key, value, .. } => {
            let v = with_cx(g, limits, deadline, |cx| {
                eval(value, row, cx).and_then(|v| to_property(&v))
            })?;
            set_property(&target, key, v, g)?;
            stats.properties_set += 1;
        }
        SetOp::Replace { value, .. } => {
            let props: Properties = map_value(value, row, g, limits, deadline)?
                .unwrap_or_default()
                .into_iter()
                .filter(|(_, v)| !v.is_null())
                .collect();
            stats.properties_set += props.len() as u64;
            match target {
                Val::Node(id) => g.replace_node_properties(id, props)?,
                Val::Rel(id) => g.replace_edge_properties(id, props)?,
                other => {
                    return Err(QueryError::type_err(format!(
                        "cannot set properties on a {}",
                        other.type_name()
                    )))
                }
            }
        }
        SetOp::Merge { value, .. } => {
            for (k, v) in map_value(value, row, g, limits, deadline)?.unwrap_or_default() {
                set_property(&target, &k, v, g)?;
                stats.properties_set += 1;
            }
        }
        SetOp::Labels { labels, .. } => {
            let Val::Node(id) = target else {
                return Err(QueryError::type_err(format!(
                    "cannot add labels to a {}",
                    target.type_name()
                )));
            };
            let existing = g.node(id)?.map(|n| n.labels).unwrap_or_default();
            for l in labels {
                if !existing.contains(l) {
                    g.add_node_label(id, l)?;
                    stats.labels_added += 1;
                }
            }
        }
    }
    Ok(())
}

fn set_property<G: GraphWrite>(
    target: &Val,
    key: &str,
    v: Value,
    g: &mut G,
) -> Result<(), QueryError> {
    match target {
        Val::Node(id) => g.set_node_property(*id, key, v)?,
        Val::Rel(id) => g.set_edge_property(*id, key, v)?,
        other => {
            return Err(QueryError::type_err(format!(
                "cannot set a property on a {}",
                other.type_name()
            )))
        }
    }
    Ok(())
}

fn remove<G: GraphWrite>(
    item: &RemoveOp,
    row: &[Val],
    g: &mut G,
    limits: &Limits,
    deadline: Instant,
    stats: &mut QueryStats,
) -> Result<(), QueryError> {
    let _ = (limits, deadline);
    match item {
        RemoveOp::Prop { slot, key } => match &row[*slot] {
            Val::Null => {}
            Val::Node(id) => {
                if g.node(*id)?.is_some_and(|n| n.properties.contains_key(key)) {
                    g.set_node_property(*id, key, Value::Null)?;
                    stats.properties_set += 1;
                }
            }
            Val::Rel(id) => {
                if g.edge(*id)?.is_some_and(|r| r.properties.contains_key(key)) {
                    g.set_edge_property(*id, key, Value::Null)?;
                    stats.properties_set += 1;
                }
            }
            other => {
                return Err(QueryError::type_err(format!(
                    "cannot remove a property from a {}",
                    other.type_name()
                )))
            }
        },
        RemoveOp::Labels { slot, labels } => match &row[*slot] {
            Val::Null => {}
            Val::Node(id) => {
                let existing = g.node(*id)?.map(|n| n.labels).unwrap_or_default();
                for l in labels {
                    if existing.contains(l) {
                        g.remove_node_label(*id, l)?;
                        stats.labels_removed += 1;
                    }
                }
            }
            other => {
                return Err(QueryError::type_err(format!(
                    "cannot remove labels from a {}",
                    other.type_name()
                )))
            }
        },
    }
    Ok(())
}

fn delete<G: GraphWrite>(
    v: Val,
    detach: bool,
    g: &mut G,
    stats: &mut QueryStats,
) -> Result<(), QueryError> {
    match v {
        Val::Null => {}
        Val::Node(id) => {
            if g.node(id)?.is_none() {
                return Ok(()); // already deleted by an earlier row
            }
            if detach {
                stats.relationships_deleted += incident_edges(g, id)?;
                g.detach_delete_node(id)?;
            } else {
                g.delete_node(id)?;
            }
            stats.nodes_deleted += 1;
        }
        Val::Rel(id) => {
            if g.edge(id)?.is_some() {
                g.delete_edge(id)?;
                stats.relationships_deleted += 1;
            }
        }
        Val::List(items) => {
            for item in items {
                delete(item, detach, g, stats)?;
            }
        }
        Val::Path(nodes, rels) => {
            for r in rels {
                delete(Val::Rel(r), detach, g, stats)?;
            }
            for n in nodes {
                delete(Val::Node(n), detach, g, stats)?;
            }
        }
        other => {
            return Err(QueryError::type_err(format!(
                "cannot delete a {}",
                other.type_name()
            )))
        }
    }
    Ok(())
}

/// Distinct relationships touching a node (a self-loop counts once).
fn incident_edges<G: GraphWrite>(g: &G, id: NodeId) -> Result<u64, QueryError> {
    let mut ids: Vec<_> = g
        .adjacent(id, Direction::Outgoing, None)?
        .into_iter()
        .map(|a| a.edge)
        .collect();
    ids.extend(
        g.adjacent(id, Direction::Incoming, None)?
            .into_iter()
            .map(|a| a.edge),
    );
    ids.sort();
    ids.dedup();
    Ok(ids.len() as u64)
}
