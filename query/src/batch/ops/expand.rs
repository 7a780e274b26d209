//! Expansions: one hop over the adjacency, and a hop's relationships counted per row.

#[allow(unused_imports)]
use super::*;

/// One hop. The relationship is bound only when something reads it (`bind`), and compared
/// with the relationships bound earlier in the MATCH (`distinct_from`) only when their types
/// could meet (MATCH's uniqueness).
pub(in crate::batch) struct Expand<'p> {
    pub(in crate::batch) input: BBox<'p>,
    pub(in crate::batch) from: usize,
    pub(in crate::batch) rel: usize,
    pub(in crate::batch) to: usize,
    pub(in crate::batch) types: &'p [String],
    pub(in crate::batch) direction: Option<Direction>,
    pub(in crate::batch) to_labels: &'p [String],
    pub(in crate::batch) into: bool,
    pub(in crate::batch) bind: bool,
    pub(in crate::batch) distinct_from: &'p [usize],
    /// `to_labels` as indices into the base's labels, resolved once (None inside: one of
    /// them is no label of the base).
    pub(in crate::batch) end_labels: std::cell::OnceCell<Option<Vec<usize>>>,
    pub(in crate::batch) at: Option<ExpandAt>,
}

/// An input chunk being expanded: its from-nodes, bound far ends, relationships it must
/// differ from (per row, per slot), and the next row.
pub(in crate::batch) struct ExpandAt {
    input: Chunk,
    from: Vec<NodeRef>,
    bound: Vec<NodeRef>,
    used: Vec<Vec<Val>>,
    /// The same when every relationship to differ from is in a relationship column (no
    /// values built): those columns.
    used_rels: Vec<Vec<u64>>,
    row: usize,
}

/// Whether relationship `edge` is one of `used` (relationships or lists of them).
pub(in crate::batch) fn rel_in(used: &[Val], edge: u64) -> bool {
    used.iter().any(|v| match v {
        Val::Rel(r) => r.0 == edge,
        Val::List(l) => l.iter().any(|x| matches!(x, Val::Rel(r) if r.0 == edge)),
        _ => false,
    })
}

impl Expand<'_> {
    fn dirs(&self) -> &'static [Direction] {
        match self.direction {
            Some(Direction::Outgoing) => &[Direction::Outgoing],
            Some(Direction::Incoming) => &[Direction::Incoming],
            None => &[Direction::Outgoing, Direction::Incoming],
        }
    }

    /// The CSR lists to walk, per direction, in the order the row path meets them.
    pub(in crate::batch) fn lists<'a>(
        &self,
        bx: &Bx<'a, '_>,
    ) -> Vec<(Direction, Vec<CsrView<'a>>)> {
        self.dirs()
            .iter()
            .map(|d| {
                let types: Vec<&str> = if self.types.is_empty() {
                    bx.m.rel_types(*d)
                } else {
                    let mut t: Vec<&str> = self.types.iter().map(String::as_str).collect();
                    t.sort_unstable();
                    t.dedup();
                    t
                };
                let lists = types
                    .into_iter()
                    .filter_map(|t| bx.m.adjacency(t, *d))
                    .collect();
                (*d, lists)
            })
            .collect()
    }

    /// The relationships and far ends of node `r` that `skip` lets through (and, with
    /// `check_end`, that pass the end checks), in the order the row path meets them.
    #[allow(clippy::too_many_arguments)]
    pub(in crate::batch) fn step(
        &self,
        bx: &Bx<'_, '_>,
        lists: &[(Direction, Vec<CsrView<'_>>)],
        r: NodeRef,
        bound: NodeRef,
        check_end: bool,
        skip: &dyn Fn(u64) -> bool,
        out: &mut Vec<NodeRef>,
        rels: &mut Vec<u64>,
    ) -> Result<(), QueryError> {
        let undirected = self.direction.is_none();
        let set = self.end_labels.get_or_init(|| bx.label_set(self.to_labels));
        let end_ok = |bx: &Bx<'_, '_>, n: NodeRef| -> Result<bool, QueryError> {
            if !check_end {
                Ok(true)
            } else if self.into {
                Ok(n == bound)
            } else {
                bx.has_label_set(n, self.to_labels, set.as_deref())
            }
        };
        let one_type = self.types.len() == 1;
        if bx.exact(r) && (one_type || bx.m.type_major()) {
            for (d, csrs) in lists {
                for csr in csrs {
                    for (&n, &e) in csr.neighbours(r).iter().zip(csr.edges(r)) {
                        if undirected && *d == Direction::Incoming && n == r {
                            continue; // an undirected self-loop was already seen as outgoing
                        }
                        if skip(e) {
                            continue;
                        }
                        if end_ok(bx, n)? {
                            out.push(n);
                            rels.push(e);
                        }
                    }
                }
            }
            return Ok(());
        }
        let id = bx.node_id(r);
        let filter = one_type.then(|| self.types[0].as_str());
        for d in self.dirs() {
            for a in bx.cx.g.adjacent(id, *d, filter)? {
                if undirected && *d == Direction::Incoming && a.neighbour == id {
                    continue;
                }
                if self.types.len() > 1 && !self.types.contains(&a.rel_type) {
                    continue;
                }
                if skip(a.edge.0) {
                    continue;
                }
                let n = bx.node_ref(a.neighbour);
                if end_ok(bx, n)? {
                    out.push(n);
                    rels.push(a.edge.0);
                }
            }
        }
        Ok(())
    }
}

impl BOp for Expand<'_> {
    fn next(&mut self, bx: &Bx<'_, '_>) -> Result<Option<Chunk>, QueryError> {
        loop {
            check_deadline(bx)?;
            if self.at.is_none() {
                let Some(ch) = self.input.next(bx)? else {
                    return Ok(None);
                };
                let from = node_refs(bx, &ch.cols[self.from], ch.len)?;
                let bound = if self.into {
                    node_refs(bx, &ch.cols[self.to], ch.len)?
                } else {
                    Vec::new()
                };
                let used_rels: Vec<Vec<u64>> = self
                    .distinct_from
                    .iter()
                    .map_while(|s| match &ch.cols[*s] {
                        Col::Rels(v) => Some(v.clone()),
                        _ => None,
                    })
                    .collect();
                let all_rels = used_rels.len() == self.distinct_from.len();
                let used = if self.distinct_from.is_empty() || all_rels {
                    Vec::new()
                } else {
                    (0..ch.len)
                        .map(|i| {
                            self.distinct_from
                                .iter()
                                .map(|s| cell(bx, &ch.cols[*s], i))
                                .collect()
                        })
                        .collect()
                };
                self.at = Some(ExpandAt {
                    input: ch,
                    from,
                    bound,
                    used,
                    used_rels: if all_rels { used_rels } else { Vec::new() },
                    row: 0,
                });
            }
            let Some(mut at) = self.at.take() else {
                continue;
            };
            let mut idx = Vec::new();
            let mut nodes = Vec::new();
            let mut rels = Vec::new();
            let lists = self.lists(bx);
            while at.row < at.input.len && idx.len() < CHUNK {
                let i = at.row;
                let r = at.from[i];
                if r != NULL {
                    let before = nodes.len();
                    let b = at.bound.get(i).copied().unwrap_or(NULL);
                    let used = at.used.get(i).map_or(&[][..], Vec::as_slice);
                    let rels_used = &at.used_rels;
                    let skip = |e: u64| {
                        (!used.is_empty() && rel_in(used, e)) || rels_used.iter().any(|c| c[i] == e)
                    };
                    self.step(bx, &lists, r, b, true, &skip, &mut nodes, &mut rels)?;
                    idx.extend(std::iter::repeat_n(i as u32, nodes.len() - before));
                }
                at.row += 1;
            }
            let mut out = at.input.gather(&idx);
            if at.row < at.input.len {
                self.at = Some(at);
            }
            if out.len == 0 {
                continue;
            }
            out.cols[self.to] = Col::Nodes(nodes);
            if self.bind {
                out.cols[self.rel] = Col::Rels(rels);
            }
            return Ok(Some(out));
        }
    }
}

/// One hop of a counted chain: the hop's walk (an `Expand` without input), its filters
/// compiled for chunks, and the slots they read besides the far node.
pub(in crate::batch) struct CountStep<'p> {
    pub(in crate::batch) step: Expand<'p>,
    pub(in crate::batch) hop: &'p crate::plan::CountHop,
    pub(in crate::batch) filters: Vec<BExpr>,
    pub(in crate::batch) reads: Vec<usize>,
    /// The far nodes that pass the hop (its labels, its filters), as bits by node reference:
    /// built once over the far label's rows when the filters read only the far node and the
    /// hop meets enough far nodes for the build to pay (`eager`: the input is a whole scan).
    pub(in crate::batch) passing: Option<Vec<u64>>,
    pub(in crate::batch) eager: bool,
    /// Far nodes the filters tested one by one so far.
    pub(in crate::batch) tested: usize,
    /// Per node reference, its paths through this hop and every hop after it, counted from
    /// the far side (`Suffix`), so a row's count is one read however many paths fail or
    /// pass: for a last hop with `passing` bits, and for an earlier hop once the hop after
    /// it has one and the backward walk costs less than the forward walk so far.
    pub(in crate::batch) reverse: Option<Suffix>,
    /// Relationships walked forward from this hop's near nodes so far (what a backward walk
    /// is measured against).
    pub(in crate::batch) walked: usize,
    /// The forward walk a next backward attempt waits for (doubling after each one given up).
    pub(in crate::batch) retry_at: usize,
}

#[cfg(test)]
thread_local! {
    /// Hops before the last counted backwards, for tests that must know it ran.
    pub(in crate::batch) static SUFFIXES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Paths counted per node from the far end of a chain backwards: `per[r]` for node
/// reference `r`; `nonzero` the references with a count. An empty `per`: none made (a type
/// without a reverse list, or a count past `u32`).
pub(in crate::batch) struct Suffix {
    per: Vec<u32>,
    nonzero: Vec<u32>,
}

impl Suffix {
    fn usable(s: &Option<Suffix>) -> Option<&[u32]> {
        s.as_ref()
            .filter(|s| !s.per.is_empty())
            .map(|s| s.per.as_slice())
    }
}

impl CountStep<'_> {
    /// This hop's reverse CSR lists (None: a type without one).
    fn back_lists<'a>(&self, bx: &Bx<'a, '_>) -> Option<Vec<CsrView<'a>>> {
        let back = match self.hop.direction {
            Direction::Outgoing => Direction::Incoming,
            Direction::Incoming => Direction::Outgoing,
        };
        let types: Vec<&str> = if self.hop.types.is_empty() {
            bx.m.rel_types(back)
        } else {
            self.hop.types.iter().map(String::as_str).collect()
        };
        types.iter().map(|t| bx.m.adjacency(t, back)).collect()
    }

    /// `reverse` of a last hop from the `passing` bits.
    fn build_reverse(&self, bx: &Bx<'_, '_>, bits: &[u64]) -> Suffix {
        let none = Suffix {
            per: Vec::new(),
            nonzero: Vec::new(),
        };
        let Some(csrs) = self.back_lists(bx) else {
            return none;
        };
        let mut per = vec![0u32; bx.m.len()];
        let mut nonzero = Vec::new();
        for (w, word) in bits.iter().enumerate() {
            let mut word = *word;
            while word != 0 {
                let p = (w * 64) as u32 + word.trailing_zeros();
                word &= word - 1;
                for csr in &csrs {
                    for &s in csr.neighbours(p) {
                        if let Some(c) = per.get_mut(s as usize) {
                            if *c == 0 {
                                nonzero.push(s);
                            }
                            *c = c.saturating_add(1);
                        }
                    }
                }
            }
        }
        Suffix { per, nonzero }
    }

    /// `reverse` of a hop before `next` (the hop after it, with its own `reverse`): each
    /// node with paths after this hop that passes this hop (its labels, or its `passing`
    /// bits) gives its count to each node a relationship of this hop reaches it from. None:
    /// more than `budget` relationships to walk. An empty suffix: a count past `u32` or a
    /// type without a reverse list.
    fn build_suffix(&self, bx: &Bx<'_, '_>, next: &Suffix, budget: usize) -> Option<Suffix> {
        let none = Suffix {
            per: Vec::new(),
            nonzero: Vec::new(),
        };
        let Some(csrs) = self.back_lists(bx) else {
            return Some(none);
        };
        let views: Option<Vec<svc_engine::LabelView<'_>>> = if self.filters.is_empty() {
            self.hop
                .to_labels
                .iter()
                .map(|t| bx.label_view(t))
                .collect()
        } else {
            None
        };
        let mut per = vec![0u32; bx.m.len()];
        let mut nonzero = Vec::new();
        let mut work = 0usize;
        for &y in &next.nonzero {
            if !passes(&self.passing, &views, y) {
                continue;
            }
            let k = next.per[y as usize];
            for csr in &csrs {
                let from = csr.neighbours(y);
                work += from.len();
                if work > budget {
                    return None;
                }
                for &x in from {
                    let Some(c) = per.get_mut(x as usize) else {
                        continue;
                    };
                    if *c == 0 {
                        nonzero.push(x);
                    }
                    match c.checked_add(k) {
                        Some(v) => *c = v,
                        None => return Some(none),
                    }
                }
            }
        }
        Some(Suffix { per, nonzero })
    }

    /// Whether this hop's far nodes can be tested from the far side: nothing touched, the
    /// filters (if any) read only the far node and their verdicts are bits already.
    fn backward_possible(&self, bx: &Bx<'_, '_>) -> bool {
        bx.m.untouched()
            && self.reads.is_empty()
            && (self.filters.is_empty() || self.passing.is_some())
    }

    /// Whether the far nodes passing the hop can be kept as bits: nothing touched since the
    /// model (every node is a base node), filters that read only the far node, a far label.
    fn bits_possible(&self, bx: &Bx<'_, '_>) -> bool {
        bx.m.untouched() && self.reads.is_empty() && !self.hop.to_labels.is_empty()
    }

    /// The passing far nodes as bits: the filters run over the far label's rows in order
    /// (each on the rows the ones before passed), chunk by chunk, reading columns in place.
    fn build_bits(&mut self, bx: &Bx<'_, '_>) -> Result<Option<Vec<u64>>, QueryError> {
        let labels = &self.hop.to_labels;
        let Some(view) = labels.first().and_then(|l| bx.label_view(l)) else {
            return Ok(None);
        };
        let to = self.hop.to;
        let mut bits = vec![0u64; bx.m.len().div_ceil(64)];
        for piece in view.rows().chunks(CHUNK) {
            check_deadline(bx)?;
            let mut c = Chunk::new(piece.len(), bx.width);
            c.cols[to] = Col::Nodes(piece.to_vec());
            for f in &mut self.filters {
                if c.len == 0 {
                    break;
                }
                let col = f.eval(bx, &c)?;
                let keep = truth(bx, &col, c.len)?;
                c = c.select(&keep);
            }
            if let Col::Nodes(v) = &c.cols[to] {
                for &r in v {
                    if labels.len() == 1 || bx.has_labels(r, labels)? {
                        bits[r as usize / 64] |= 1 << (r % 64);
                    }
                }
            }
        }
        Ok(Some(bits))
    }
}

/// Whether far node `n` passes a hop: its filters' bits, else its labels' bitsets (None:
/// neither known, nothing passes here).
#[inline]
fn passes(
    passing: &Option<Vec<u64>>,
    views: &Option<Vec<svc_engine::LabelView<'_>>>,
    n: NodeRef,
) -> bool {
    match (passing, views) {
        (Some(bits), _) => bit(bits, n),
        (None, Some(v)) => v.iter().all(|v| v.contains(n)),
        _ => false,
    }
}

/// Whether bit `r` is set.
#[inline]
fn bit(bits: &[u64], r: NodeRef) -> bool {
    bits.get(r as usize / 64)
        .is_some_and(|w| w & (1 << (r % 64)) != 0)
}

/// Paths through a chain of hops counted per row (see `Op::ExpandCount`).
pub(in crate::batch) struct ExpandCount<'p> {
    pub(in crate::batch) input: BBox<'p>,
    pub(in crate::batch) from: usize,
    pub(in crate::batch) hops: Vec<CountStep<'p>>,
    pub(in crate::batch) slot: usize,
    pub(in crate::batch) keep_zero: bool,
    /// A filter on the count directly above, fused in: rows whose count fails it are dropped
    /// before any value is made for them.
    pub(in crate::batch) bound: Option<(crate::ast::BinaryOp, i64)>,
}

/// `count <op> k` for a comparison a fused filter makes (integers: never null).
pub(in crate::batch) fn bound_passes(bound: Option<(crate::ast::BinaryOp, i64)>, n: u64) -> bool {
    use crate::ast::BinaryOp::*;
    let Some((op, k)) = bound else {
        return true;
    };
    let n = i64::try_from(n).unwrap_or(i64::MAX);
    match op {
        Eq => n == k,
        Ne => n != k,
        Lt => n < k,
        Le => n <= k,
        Gt => n > k,
        Ge => n >= k,
        _ => true,
    }
}

/// The number of relationships of node `r` in a last hop without filters: the CSR list
/// lengths, or with a far label the neighbours carrying it; a touched node through the
/// snapshot's counters.
fn degree(
    bx: &Bx<'_, '_>,
    hop: &crate::plan::CountHop,
    lists: &[CsrView<'_>],
    view: Option<svc_engine::LabelView<'_>>,
    r: NodeRef,
) -> Result<u64, QueryError> {
    let to_label = hop.to_labels.first();
    if bx.exact(r) {
        let mut n = 0u64;
        for csr in lists {
            let nb = csr.neighbours(r);
            match (to_label, view) {
                (None, _) => n += nb.len() as u64,
                // Nothing touched: every neighbour is a base node, its label in the bitset.
                (Some(_), Some(v)) if bx.m.untouched() => {
                    n += nb.iter().filter(|x| v.contains(**x)).count() as u64
                }
                (Some(l), _) => {
                    for &x in nb {
                        // Untouched base nodes: the label's bitmap; others: the snapshot.
                        let has = match view {
                            Some(v) if bx.exact(x) => v.contains(x),
                            _ => bx.has_labels(x, std::slice::from_ref(l))?,
                        };
                        if has {
                            n += 1;
                        }
                    }
                }
            }
        }
        return Ok(n);
    }
    let id = bx.node_id(r);
    let g = bx.cx.g;
    let label = to_label.map(String::as_str);
    Ok(if hop.types.is_empty() {
        g.count_adjacent(id, hop.direction, None, label)?
    } else {
        let mut n = 0;
        for t in &hop.types {
            n += g.count_adjacent(id, hop.direction, Some(t), label)?;
        }
        n
    })
}

type Lists<'a> = Vec<(Direction, Vec<CsrView<'a>>)>;

/// Adds to `counts` (per row of `ch`) the paths through `hops` from each `(row, node)` of
/// `frontier`. Recursion: one level per hop (at most the plan's few).
fn walk(
    bx: &Bx<'_, '_>,
    ch: &Chunk,
    hops: &mut [CountStep<'_>],
    lists: &[Lists<'_>],
    frontier: &[(u32, NodeRef)],
    counts: &mut [u64],
) -> Result<(), QueryError> {
    let (Some((hop, rest)), Some((l, lrest))) = (hops.split_first_mut(), lists.split_first())
    else {
        for (row, _) in frontier {
            counts[*row as usize] += 1;
        }
        return Ok(());
    };
    if rest.is_empty() && hop.filters.is_empty() && hop.hop.to_labels.len() <= 1 {
        let csrs = l.first().map_or(&[][..], |(_, c)| c.as_slice());
        let view = hop.hop.to_labels.first().and_then(|t| bx.label_view(t));
        for &(row, n) in frontier {
            counts[row as usize] += degree(bx, hop.hop, csrs, view, n)?;
        }
        return Ok(());
    }
    if hop.passing.is_none() && !hop.filters.is_empty() && hop.bits_possible(bx) {
        let rows = hop
            .hop
            .to_labels
            .first()
            .and_then(|t| bx.label_view(t))
            .map_or(0, |v| v.rows().len());
        if hop.eager || hop.tested >= rows / 8 {
            hop.passing = hop.build_bits(bx)?;
        }
    }
    // Far nodes tested by bits (the filters' verdicts, or the labels' own bitsets) straight
    // off the CSR lists.
    let views: Option<Vec<svc_engine::LabelView<'_>>> = if hop.filters.is_empty() {
        hop.hop.to_labels.iter().map(|t| bx.label_view(t)).collect()
    } else {
        None
    };
    if rest.is_empty() && bx.m.untouched() && hop.reverse.is_none() {
        if let Some(bits) = &hop.passing {
            hop.reverse = Some(hop.build_reverse(bx, bits));
        }
    }
    try_backward(bx, hop, rest);
    if let (Some(per), true) = (Suffix::usable(&hop.reverse), bx.m.untouched()) {
        for &(row, r) in frontier {
            counts[row as usize] += u64::from(per.get(r as usize).copied().unwrap_or(0));
        }
        return Ok(());
    }
    if bx.m.untouched() && (hop.passing.is_some() || views.is_some()) {
        let last = rest.is_empty();
        let mut next: Vec<(u32, NodeRef)> = Vec::new();
        let mut slow: Vec<(u32, NodeRef)> = Vec::new();
        for (i, &(row, r)) in frontier.iter().enumerate() {
            if !bx.exact(r) {
                slow.push((row, r));
                continue;
            }
            let mut k = 0u64;
            for (_, csrs) in l {
                for csr in csrs {
                    hop.walked += csr.neighbours(r).len();
                    for &n in csr.neighbours(r) {
                        if passes(&hop.passing, &views, n) {
                            if last {
                                k += 1;
                            } else {
                                next.push((row, n));
                            }
                        }
                    }
                }
            }
            counts[row as usize] += k;
            if next.len() >= CHUNK {
                check_deadline(bx)?;
                walk(bx, ch, rest, lrest, &next, counts)?;
                next.clear();
                // The rows left may count backwards now (nothing touched: all exact).
                try_backward(bx, hop, rest);
                if let Some(per) = Suffix::usable(&hop.reverse) {
                    for &(row, r) in &frontier[i + 1..] {
                        counts[row as usize] +=
                            u64::from(per.get(r as usize).copied().unwrap_or(0));
                    }
                    break;
                }
            }
        }
        walk(bx, ch, rest, lrest, &next, counts)?;
        if slow.is_empty() {
            return Ok(());
        }
        return walk_by_step(bx, ch, hop, rest, lists, &slow, counts);
    }
    walk_by_step(bx, ch, hop, rest, lists, frontier, counts)
}

/// Counts an earlier hop backwards from the next hop's counts (`CountStep::reverse`) once
/// the forward walk has cost more than the backward one would; tried again at twice the
/// walk when it would not.
fn try_backward(bx: &Bx<'_, '_>, hop: &mut CountStep<'_>, rest: &[CountStep<'_>]) {
    let Some(next) = rest.first().and_then(|n| n.reverse.as_ref()) else {
        return;
    };
    if hop.reverse.is_some()
        || next.per.is_empty()
        || !hop.backward_possible(bx)
        || hop.walked < hop.retry_at
    {
        return;
    }
    let budget = hop.walked.max(CHUNK);
    match hop.build_suffix(bx, next, budget) {
        Some(s) => {
            #[cfg(test)]
            SUFFIXES.with(|c| c.set(c.get() + 1));
            hop.reverse = Some(s);
        }
        None => hop.retry_at = budget * 2,
    }
}

/// `walk`'s general form for one hop: the hop's expansion (touched nodes through the
/// snapshot), its filters evaluated per far node.
fn walk_by_step(
    bx: &Bx<'_, '_>,
    ch: &Chunk,
    hop: &mut CountStep<'_>,
    rest: &mut [CountStep<'_>],
    lists: &[Lists<'_>],
    frontier: &[(u32, NodeRef)],
    counts: &mut [u64],
) -> Result<(), QueryError> {
    let (Some(l), lrest) = (lists.first(), lists.get(1..).unwrap_or(&[])) else {
        return Ok(());
    };
    let mut next: Vec<(u32, NodeRef)> = Vec::new();
    let (mut nodes, mut rels) = (Vec::new(), Vec::new());
    for &(row, n) in frontier {
        nodes.clear();
        rels.clear();
        hop.step
            .step(bx, l, n, NULL, true, &|_| false, &mut nodes, &mut rels)?;
        next.extend(nodes.iter().map(|x| (row, *x)));
        if next.len() >= CHUNK {
            flush(bx, ch, hop, rest, lrest, &mut next, counts)?;
        }
    }
    flush(bx, ch, hop, rest, lrest, &mut next, counts)
}

/// The far nodes `next` of one hop through its filters (one after another, each on the rows
/// the ones before passed, as filter operators would), then on through the rest of the chain.
fn flush(
    bx: &Bx<'_, '_>,
    ch: &Chunk,
    hop: &mut CountStep<'_>,
    rest: &mut [CountStep<'_>],
    lists: &[Lists<'_>],
    next: &mut Vec<(u32, NodeRef)>,
    counts: &mut [u64],
) -> Result<(), QueryError> {
    check_deadline(bx)?;
    if next.is_empty() {
        return Ok(());
    }
    if !hop.filters.is_empty() {
        hop.tested += next.len();
        let rows: Vec<u32> = next.iter().map(|x| x.0).collect();
        let mut c = Chunk::new(next.len(), bx.width);
        for s in &hop.reads {
            c.cols[*s] = ch.cols[*s].gather(&rows);
        }
        c.cols[hop.hop.to] = Col::Nodes(next.iter().map(|x| x.1).collect());
        let mut pos: Vec<u32> = (0..next.len() as u32).collect();
        for f in &mut hop.filters {
            if c.len == 0 {
                break;
            }
            let col = f.eval(bx, &c)?;
            let keep = truth(bx, &col, c.len)?;
            pos = pos
                .iter()
                .zip(&keep)
                .filter(|(_, k)| **k)
                .map(|(p, _)| *p)
                .collect();
            c = c.select(&keep);
        }
        let kept: Vec<(u32, NodeRef)> = pos.iter().map(|p| next[*p as usize]).collect();
        *next = kept;
    }
    walk(bx, ch, rest, lists, next, counts)?;
    next.clear();
    Ok(())
}

impl BOp for ExpandCount<'_> {
    fn next(&mut self, bx: &Bx<'_, '_>) -> Result<Option<Chunk>, QueryError> {
        while let Some(ch) = self.input.next(bx)? {
            check_deadline(bx)?;
            let from = node_refs(bx, &ch.cols[self.from], ch.len)?;
            let lists: Vec<Lists<'_>> = self.hops.iter().map(|h| h.step.lists(bx)).collect();
            let frontier: Vec<(u32, NodeRef)> = from
                .iter()
                .enumerate()
                .filter(|(_, r)| **r != NULL)
                .map(|(i, r)| (i as u32, *r))
                .collect();
            let mut counts = vec![0u64; ch.len];
            walk(bx, &ch, &mut self.hops, &lists, &frontier, &mut counts)?;
            let mut idx = Vec::new();
            let mut vals = Vec::new();
            for (i, n) in counts.iter().enumerate() {
                if (*n > 0 || self.keep_zero) && bound_passes(self.bound, *n) {
                    idx.push(i as u32);
                    vals.push(Val::Int(i64::try_from(*n).unwrap_or(i64::MAX)));
                }
            }
            if idx.is_empty() {
                continue;
            }
            let mut out = if idx.len() == ch.len {
                ch
            } else {
                ch.gather(&idx)
            };
            out.cols[self.slot] = Col::Vals(vals);
            return Ok(Some(out));
        }
        Ok(None)
    }
}
