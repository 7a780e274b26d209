//! Expansion along relationships: `Expand` (single and variable-length hops, relationship
//! uniqueness) and `ExpandCount` (a hop's row count without walking it).

use super::*;

pub(super) struct Expand<'p> {
    pub(super) input: BoxOp<'p>,
    pub(super) plan: &'p Op,
    pub(super) pending: Vec<Row>,
}

/// Whether the relationship is already bound in one of `slots` of the row.
pub(super) fn rel_used(row: &[Val], slots: &[usize], edge: EdgeId) -> bool {
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
                        let next = step(node, &path)?;
                        if !next.is_empty() && path.len() as u32 >= cx.limits.max_hops {
                            return Err(QueryError::HopLimit(format!(
                                "paths longer than the budget of {} hops",
                                cx.limits.max_hops
                            )));
                        }
                        for (edge, n) in next.into_iter().rev() {
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

pub(super) struct ExpandCount<'p> {
    pub(super) input: BoxOp<'p>,
    pub(super) from: usize,
    pub(super) hops: &'p [crate::plan::CountHop],
    pub(super) slot: usize,
    pub(super) keep_zero: bool,
}

impl ExpandCount<'_> {
    /// The paths from `node` through `hops` (the far nodes bound in `row` while their hop's
    /// filters run, null again after). Depth: one level per hop (a handful, from the plan).
    fn paths(
        &self,
        cx: &Cx<'_>,
        row: &mut Row,
        hops: &[crate::plan::CountHop],
        node: NodeId,
    ) -> Result<u64, QueryError> {
        let Some((hop, rest)) = hops.split_first() else {
            return Ok(1);
        };
        let types: Vec<Option<&str>> = if hop.types.is_empty() {
            vec![None]
        } else {
            hop.types.iter().map(|t| Some(t.as_str())).collect()
        };
        if rest.is_empty() && hop.filters.is_empty() && hop.to_labels.len() <= 1 {
            // The last hop unfiltered: its degree (a counter read).
            let label = hop.to_labels.first().map(String::as_str);
            let mut n = 0;
            for t in types {
                n += cx.g.count_adjacent(node, hop.direction, t, label)?;
            }
            return Ok(n);
        }
        let mut n = 0u64;
        for t in types {
            for adj in cx.g.adjacent(node, hop.direction, t)? {
                cx.tick()?;
                if !cx.has_labels(adj.neighbour, &hop.to_labels)? {
                    continue;
                }
                row[hop.to] = Val::Node(adj.neighbour);
                let mut pass = true;
                for f in &hop.filters {
                    if eval(f, row, cx)?.truthy()? != Some(true) {
                        pass = false;
                        break;
                    }
                }
                row[hop.to] = Val::Null;
                if pass {
                    n = n.saturating_add(self.paths(cx, row, rest, adj.neighbour)?);
                }
            }
        }
        Ok(n)
    }
}

impl Operator for ExpandCount<'_> {
    fn next(&mut self, cx: &Cx<'_>) -> Result<Option<Row>, QueryError> {
        while let Some(mut row) = self.input.next(cx)? {
            cx.tick()?;
            let n = match &row[self.from] {
                Val::Node(id) => {
                    let id = *id;
                    self.paths(cx, &mut row, self.hops, id)?
                }
                Val::Null => 0,
                other => {
                    return Err(QueryError::type_err(format!(
                        "cannot expand from a {}",
                        other.type_name()
                    )))
                }
            };
            if n > 0 || self.keep_zero {
                row[self.slot] = Val::Int(i64::try_from(n).unwrap_or(i64::MAX));
                return Ok(Some(row));
            }
        }
        Ok(None)
    }
}
