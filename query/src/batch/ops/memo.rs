//! The node memo of hash aggregation: group keys that read only node slots, looked up by the
//! nodes' references and evaluated once per distinct combination.

#[allow(unused_imports)]
use super::*;

/// Grouping keys that read nothing but node slots (`k.campaignId`, `s.progress`,
/// `c.name + c.city`) are a function of those nodes: a row's group is looked up by the nodes'
/// references, and the keys are evaluated once per distinct combination (the first row that
/// has it), not once per row.
pub(super) struct NodeMemo {
    /// The node slots the keys read (at most four: a fast key).
    slots: Vec<usize>,
    /// Node references to group.
    index: FastIndex,
    rows: usize,
    misses: usize,
    /// Given up for good: the first rows it saw brought new nodes mostly.
    off: bool,
}

/// Rows a memo sees before it judges whether it pays.
const MEMO_TRIAL: usize = 4 * CHUNK;

/// The first rows a memo sees, judged on their own: when most of them bring new nodes (the
/// keys read both ends of each row's relationship, or a side that never repeats) the memo
/// is dropped before it spends a lookup and an insert per row of a whole chunk.
const MEMO_PROBE: usize = 256;

/// Marks a memo entry whose group is being made (the index of its first row among this
/// chunk's new ones below it): groups are fewer than `max_buffered_rows`, far below it.
const PENDING: usize = 1 << 30;

impl NodeMemo {
    /// A memo for `keys`, when they read only slots (at most four) and are pure (so the same
    /// nodes give the same keys), and are not the slots themselves (the fast index keys
    /// those by reference already).
    pub(super) fn new(keys: &[(usize, BExpr)]) -> Option<NodeMemo> {
        if keys.is_empty()
            || keys
                .iter()
                .all(|(_, e)| matches!(e.expr(), crate::eval::CExpr::Slot(_)))
        {
            return None;
        }
        let mut slots = Vec::new();
        for (_, e) in keys {
            if !crate::batch::expr::pure(e.expr()) {
                return None;
            }
            slots.extend(e.expr().slot_list());
        }
        slots.sort_unstable();
        slots.dedup();
        (!slots.is_empty() && slots.len() <= 4).then(|| NodeMemo {
            slots,
            index: FastIndex::default(),
            rows: 0,
            misses: 0,
            off: false,
        })
    }

    /// Assigns the rows of `ch` to groups through the memo; false: not done (a key slot of
    /// this chunk holds something other than nodes, or the memo does not pay: most rows
    /// bring new nodes).
    pub(super) fn assign(
        &mut self,
        agg: &mut Aggregate<'_>,
        bx: &Bx<'_, '_>,
        ch: &Chunk,
        st: &mut AssignState<'_>,
        group_of: &mut Vec<usize>,
    ) -> Result<bool, QueryError> {
        if self.off
            || (self.rows >= MEMO_TRIAL && self.misses * 2 > self.rows)
            || st.groups.len() + ch.len >= PENDING
        {
            return Ok(false);
        }
        let cols: Vec<&Col> = self.slots.iter().filter_map(|s| ch.cols.get(*s)).collect();
        if cols.len() != self.slots.len() {
            return Ok(false);
        }
        let Some((codes, dicts)) = fast_codes(&cols, ch.len) else {
            return Ok(false);
        };
        if dicts.iter().any(|d| *d != 0) {
            return Ok(false); // dictionary codes: not nodes
        }
        // References of one slot that start ascending are most likely a label scan's chunk,
        // whose nodes never repeat: the memo would only add a lookup per row.
        if codes.len() == 1 && codes[0].iter().take(33).is_sorted_by(|a, b| a < b) {
            return Ok(false);
        }
        self.index.reset_if_changed(&dicts);
        group_of.clear();
        // The first row of each combination not met before, in row order; the memo holds
        // `PENDING | j` for the `j`-th of them until its group is known.
        let mut first: Vec<u32> = Vec::new();
        // The row of this chunk at which the memo has seen `MEMO_PROBE` rows, if any.
        let probe_at = MEMO_PROBE.checked_sub(self.rows).unwrap_or(usize::MAX);
        for i in 0..ch.len {
            if i == probe_at && (self.misses + first.len()) * 4 > MEMO_PROBE * 3 {
                // Nothing was assigned yet: the chunk goes the plain way, the memo is dropped.
                self.off = true;
                self.index = FastIndex::default();
                return Ok(false);
            }
            // The near side of an expansion repeats its node over a run of rows: the row
            // before's group, no lookup.
            if i > 0 && codes.iter().all(|c| c[i] == c[i - 1]) {
                group_of.push(group_of[i - 1]);
                continue;
            }
            let k = fast_key(&codes, i);
            let g = match self.index.get(&k) {
                Some(g) => g,
                None => {
                    let p = PENDING | first.len();
                    self.index.insert(k, p);
                    first.push(i as u32);
                    p
                }
            };
            group_of.push(g);
        }
        self.rows += ch.len;
        self.misses += first.len();
        if first.is_empty() {
            return Ok(true);
        }
        // The keys of those rows alone, in a chunk of just the slots they read.
        let mut sub = Chunk::new(first.len(), ch.cols.len());
        for s in &self.slots {
            sub.cols[*s] = ch.cols[*s].gather(&first);
        }
        let mut sub_groups = Vec::with_capacity(first.len());
        agg.assign(bx, &sub, st, &mut sub_groups)?;
        for (i, g) in first.iter().zip(&sub_groups) {
            self.index.insert(fast_key(&codes, *i as usize), *g);
        }
        for g in group_of.iter_mut() {
            if *g & PENDING != 0 {
                *g = sub_groups
                    .get(*g & !PENDING)
                    .copied()
                    .ok_or_else(|| QueryError::semantic("a group key was not assigned"))?;
            }
        }
        Ok(true)
    }
}
