//! Variable-length expansion (`-[:T*min..max]->`) over the model's adjacency: the row path's
//! depth-first walk of simple paths (no relationship twice, none bound earlier in the MATCH),
//! emitting each path's end in the same order, with the relationship list built only when
//! something reads it.

#[allow(unused_imports)]
use super::*;

pub(in crate::batch) struct VarExpand<'p> {
    /// One hop's settings (its input is this operator's input; its end checks apply to a
    /// path's end only).
    pub(in crate::batch) hop: Expand<'p>,
    pub(in crate::batch) min: u32,
    pub(in crate::batch) max: u32,
    pub(in crate::batch) at: Option<(Chunk, usize)>,
}

/// One DFS frame: the node reached, the relationship it was reached by, and its depth.
type Frame = (NodeRef, u64, u32);

impl VarExpand<'_> {
    /// Every path end of one input row: (row, end, relationships) appended to the outputs.
    #[allow(clippy::too_many_arguments)]
    fn walk(
        &self,
        bx: &Bx<'_, '_>,
        lists: &[(Direction, Vec<CsrView<'_>>)],
        start: NodeRef,
        bound: NodeRef,
        used: &[Val],
        ends: &mut Vec<NodeRef>,
        rels: &mut Vec<Val>,
    ) -> Result<usize, QueryError> {
        let max_rows = bx.cx.limits.max_buffered_rows;
        let max_hops = bx.cx.limits.max_hops;
        let mut emitted = 0usize;
        let mut stack: Vec<Frame> = vec![(start, 0, 0)];
        let mut path: Vec<u64> = Vec::new();
        let (mut next, mut next_rels) = (Vec::new(), Vec::new());
        let mut pops = 0u32;
        while let Some((node, edge, depth)) = stack.pop() {
            pops = pops.wrapping_add(1);
            if pops % 4096 == 0 {
                check_deadline(bx)?;
            }
            // The path to this frame: its parent's path and the relationship it came by.
            if depth > 0 {
                path.truncate(depth as usize - 1);
                path.push(edge);
            } else {
                path.clear();
            }
            if depth >= self.min {
                let ok = if self.hop.into {
                    node == bound
                } else {
                    bx.has_labels(node, self.hop.to_labels)?
                };
                if ok {
                    if emitted >= max_rows {
                        return Err(QueryError::BufferLimit(max_rows));
                    }
                    emitted += 1;
                    ends.push(node);
                    if self.hop.bind {
                        rels.push(Val::List(
                            path.iter()
                                .map(|e| Val::Rel(svc_engine::EdgeId(*e)))
                                .collect(),
                        ));
                    }
                }
            }
            if depth < self.max {
                next.clear();
                next_rels.clear();
                let on_path = &path;
                let skip = |e: u64| on_path.contains(&e) || (!used.is_empty() && rel_in(used, e));
                let hop = &self.hop;
                hop.step(
                    bx,
                    lists,
                    node,
                    NULL,
                    false,
                    &skip,
                    &mut next,
                    &mut next_rels,
                )?;
                if !next.is_empty() && depth >= max_hops {
                    return Err(QueryError::HopLimit(format!(
                        "paths longer than the budget of {max_hops} hops"
                    )));
                }
                for (n, e) in next.iter().zip(&next_rels).rev() {
                    stack.push((*n, *e, depth + 1));
                }
            }
        }
        Ok(emitted)
    }
}

impl BOp for VarExpand<'_> {
    fn next(&mut self, bx: &Bx<'_, '_>) -> Result<Option<Chunk>, QueryError> {
        loop {
            check_deadline(bx)?;
            if self.at.is_none() {
                let Some(ch) = self.hop.input.next(bx)? else {
                    return Ok(None);
                };
                self.at = Some((ch, 0));
            }
            let Some((input, mut row)) = self.at.take() else {
                continue;
            };
            let hop = &self.hop;
            let from = node_refs(bx, &input.cols[hop.from], input.len)?;
            let bound = if hop.into {
                node_refs(bx, &input.cols[hop.to], input.len)?
            } else {
                Vec::new()
            };
            let lists = hop.lists(bx);
            let mut idx = Vec::new();
            let mut ends = Vec::new();
            let mut rels = Vec::new();
            while row < input.len && idx.len() < CHUNK {
                let r = from[row];
                if r != NULL {
                    let used: Vec<Val> = hop
                        .distinct_from
                        .iter()
                        .map(|s| cell(bx, &input.cols[*s], row))
                        .collect();
                    let b = bound.get(row).copied().unwrap_or(NULL);
                    let n = self.walk(bx, &lists, r, b, &used, &mut ends, &mut rels)?;
                    idx.extend(std::iter::repeat_n(row as u32, n));
                }
                row += 1;
            }
            let mut out = input.gather(&idx);
            if row < input.len {
                self.at = Some((input, row));
            }
            if out.len == 0 {
                continue;
            }
            out.cols[self.hop.to] = Col::Nodes(ends);
            if self.hop.bind {
                out.cols[self.hop.rel] = Col::Vals(rels);
            }
            return Ok(Some(out));
        }
    }
}
