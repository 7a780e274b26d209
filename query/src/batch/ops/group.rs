//! Grouping operators: hash aggregation and DISTINCT, keyed by dictionary codes where they can be.

#[allow(unused_imports)]
use super::*;

use super::fold::{add_val, fold_in_place};

/// Every group's keys and aggregate states, flat (group `g`'s are at `g * width`): no
/// allocation per group, one load to reach a state.
pub(super) struct Groups {
    n_keys: usize,
    kinds: Vec<AggKind>,
    len: usize,
    keys: Vec<Val>,
    states: Vec<AggState>,
    /// Per group and aggregate, the values a DISTINCT aggregate has met (empty when none is
    /// DISTINCT).
    seen: Vec<Seen>,
    distinct: bool,
    /// Per aggregate, what its groups' `Seen::codes` hold (see `Coded`).
    coded: Vec<Coded>,
    /// Bytes the groups' DISTINCT node sets may still spend on bits early (see `seen_ref`).
    bits_left: usize,
}

/// Bytes of bits DISTINCT node sets of one aggregation may take before they must grow large
/// to turn into bits (a set of a few hundred nodes turns into bits while this lasts).
const DISTINCT_BITS_BUDGET: usize = 16 << 20;

/// What the dictionary codes a DISTINCT aggregate's groups have met refer to.
#[derive(Clone)]
pub(super) enum Coded {
    /// No code met yet.
    Unset,
    /// Codes of this dictionary (values equal for grouping share a code, so a code met
    /// before is a value met before).
    Codes(Rc<crate::batch::chunk::Dict>),
    /// The argument gave something other than that dictionary's codes: every value met is
    /// in `refs`/`bits`/`keys`, as the general path keeps them.
    General,
}

impl Groups {
    fn new(n_keys: usize, aggs: &[(&AggSpec, Option<BExpr>)]) -> Self {
        Groups {
            n_keys,
            kinds: aggs.iter().map(|(a, _)| a.kind).collect(),
            len: 0,
            keys: Vec::new(),
            states: Vec::new(),
            seen: Vec::new(),
            distinct: aggs.iter().any(|(a, _)| a.distinct),
            coded: vec![Coded::Unset; aggs.len()],
            bits_left: DISTINCT_BITS_BUDGET,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// A new group: its keys and a fresh state per aggregate.
    fn push(&mut self, keys: impl IntoIterator<Item = Val>) {
        self.keys.extend(keys);
        self.states
            .extend(self.kinds.iter().map(|k| AggState::new(*k)));
        if self.distinct {
            self.seen.extend(self.kinds.iter().map(|_| Seen::default()));
        }
        self.len += 1;
    }

    fn keys(&self, g: usize) -> &[Val] {
        &self.keys[g * self.n_keys..(g + 1) * self.n_keys]
    }

    #[inline(always)]
    pub(super) fn state(&mut self, g: usize, a: usize) -> &mut AggState {
        &mut self.states[g * self.kinds.len() + a]
    }

    /// Whether node `r` is new to group `g`'s DISTINCT aggregate `a` (then it is
    /// remembered); `bitmap` for the one group of an aggregate without keys; `nodes`: how
    /// many nodes the model has. A group's set turns into bits (a bit per node of the model)
    /// past a few hundred nodes while the aggregation's budget lasts, else past the count
    /// where bits take no more memory than the set.
    #[inline]
    fn seen_ref(&mut self, g: usize, a: usize, r: NodeRef, bitmap: bool, nodes: usize) -> bool {
        let seen = &mut self.seen[g * self.kinds.len() + a];
        if bitmap || !seen.bits.is_empty() {
            return Seen::set_bit(&mut seen.bits, r);
        }
        let bytes = nodes / 8 + 8;
        let limit = if self.bits_left >= bytes {
            REFS_BEFORE_BITS
        } else {
            REFS_BEFORE_BITS.max(nodes / 64)
        };
        if seen.refs.len() < limit {
            return seen.refs.insert(r);
        }
        self.bits_left = self.bits_left.saturating_sub(bytes);
        seen.bits.reserve(nodes / 64 + 1);
        for x in std::mem::take(&mut seen.refs) {
            Seen::set_bit(&mut seen.bits, x);
        }
        Seen::set_bit(&mut seen.bits, r)
    }

    /// Group `g`'s state of aggregate `a` and what it has met (DISTINCT aggregates only).
    #[inline]
    fn seen_state(&mut self, g: usize, a: usize) -> (&mut Seen, &mut AggState) {
        let i = g * self.kinds.len() + a;
        (&mut self.seen[i], &mut self.states[i])
    }
}

/// Values a DISTINCT aggregate has met: nodes by reference, dictionary codes by code,
/// anything else by its key bytes.
#[derive(Default)]
pub(super) struct Seen {
    refs: HashSet<u32, Fx>,
    /// Node references as bits: for the one group of an aggregate without keys, and for a
    /// group whose references grew past the count where bits take no more memory than the
    /// set (a bit per node of the model at most).
    bits: Vec<u64>,
    keys: HashSet<Vec<u8>, Fx>,
    /// Dictionary codes (`Coded::Codes`): those below 64 as bits, the rest in `more`.
    low: u64,
    more: HashSet<u32, Fx>,
}

/// Fewest references a group's set holds before it may turn into bits.
const REFS_BEFORE_BITS: usize = 256;

impl Seen {
    /// Whether node reference `r` is new (then it is remembered); `bitmap` for the one group
    /// of an aggregate without keys; `nodes`: how many nodes the model has.
    #[inline]
    fn insert_ref(&mut self, r: NodeRef, bitmap: bool, nodes: usize) -> bool {
        if !bitmap && self.bits.is_empty() {
            // A hash set spends about 8 bytes per entry, bits 1/8 byte per node: past
            // nodes/64 entries the bits are the smaller (and need no hashing).
            if self.refs.len() < REFS_BEFORE_BITS.max(nodes / 64) {
                return self.refs.insert(r);
            }
            for x in std::mem::take(&mut self.refs) {
                Self::set_bit(&mut self.bits, x);
            }
        }
        Self::set_bit(&mut self.bits, r)
    }

    /// Sets bit `r`; whether it was clear.
    #[inline]
    fn set_bit(bits: &mut Vec<u64>, r: NodeRef) -> bool {
        let (w, b) = ((r / 64) as usize, 1u64 << (r % 64));
        if bits.len() <= w {
            bits.resize(w + 1, 0);
        }
        let new = bits[w] & b == 0;
        bits[w] |= b;
        new
    }

    /// Whether dictionary code `c` is new (then it is remembered).
    #[inline]
    fn insert_code(&mut self, c: u32) -> bool {
        if c < 64 {
            let b = 1u64 << c;
            let new = self.low & b == 0;
            self.low |= b;
            return new;
        }
        self.more.insert(c)
    }

    /// The codes met (and forgets them).
    fn take_codes(&mut self) -> Vec<u32> {
        let low = std::mem::take(&mut self.low);
        let mut codes: Vec<u32> = (0..64).filter(|b| low & (1u64 << b) != 0).collect();
        codes.extend(std::mem::take(&mut self.more));
        codes
    }

    /// Whether `v` is new (then it is remembered).
    fn insert(&mut self, bx: &Bx<'_, '_>, v: &Val, bitmap: bool) -> bool {
        match v {
            Val::Node(id) => self.insert_ref(bx.node_ref(*id), bitmap, bx.m.len()),
            other => {
                let mut key = Vec::new();
                write_key(other, &mut key);
                self.keys.insert(key)
            }
        }
    }
}

impl Groups {
    /// Aggregate `a` turns `Coded::General`: the codes its groups met move into the general
    /// sets as the values they stand for.
    fn uncode(&mut self, bx: &Bx<'_, '_>, a: usize, bitmap: bool) {
        let Coded::Codes(dict) = std::mem::replace(&mut self.coded[a], Coded::General) else {
            return;
        };
        let vals = dict.vals();
        for g in 0..self.len {
            let (seen, _) = self.seen_state(g, a);
            for c in seen.take_codes() {
                if let Some(v) = vals.get(c as usize).filter(|v| !v.is_null()) {
                    seen.insert(bx, v, bitmap);
                }
            }
        }
    }

    /// Folds one chunk's dictionary codes into DISTINCT aggregate `a` by code (no value
    /// built, no key bytes); false: the aggregate holds other values (nothing done).
    fn fold_distinct_codes(
        &mut self,
        bx: &Bx<'_, '_>,
        kind: AggKind,
        a: usize,
        (codes, dict): (&[u32], &Rc<crate::batch::chunk::Dict>),
        group_of: &[usize],
        bitmap: bool,
    ) -> Result<bool, QueryError> {
        match &self.coded[a] {
            Coded::Unset => self.coded[a] = Coded::Codes(Rc::clone(dict)),
            Coded::Codes(d) if Rc::ptr_eq(d, dict) => {}
            Coded::Codes(_) => {
                self.uncode(bx, a, bitmap);
                return Ok(false);
            }
            Coded::General => return Ok(false),
        }
        let vals = dict.vals();
        for (c, g) in codes.iter().zip(group_of) {
            let (seen, state) = self.seen_state(*g, a);
            if !seen.insert_code(*c) {
                continue;
            }
            // Null is met (so skipped at once next time) but never aggregated.
            match vals.get(*c as usize) {
                None | Some(Val::Null) => {}
                Some(_) if matches!(state, AggState::Count(_)) => {
                    if let AggState::Count(n) = state {
                        *n += 1;
                    }
                }
                Some(v) => state.add(kind, v.clone())?,
            }
        }
        Ok(true)
    }
}

/// What assigning rows to groups works on (one aggregation's run).
pub(super) struct AssignState<'s> {
    fast: &'s mut FastIndex,
    index: &'s mut HashMap<Vec<u8>, usize, Fx>,
    pub(super) groups: &'s mut Groups,
    /// Whether `index` holds every group's byte key.
    index_complete: bool,
    /// Per key, the codes of its numbers (kept across chunks, never moved: their addresses
    /// identify them).
    coders: &'s mut [NumCoder],
}

pub(in crate::batch) struct Aggregate<'p> {
    pub(in crate::batch) input: BBox<'p>,
    pub(in crate::batch) keys: Vec<(usize, BExpr)>,
    pub(in crate::batch) aggs: Vec<(&'p AggSpec, Option<BExpr>)>,
    pub(in crate::batch) output: Option<std::vec::IntoIter<Chunk>>,
}

impl Aggregate<'_> {
    fn run(&mut self, bx: &Bx<'_, '_>) -> Result<Vec<Chunk>, QueryError> {
        let mut index: HashMap<Vec<u8>, usize, Fx> = HashMap::default();
        let mut fast = FastIndex::default();
        let mut groups = Groups::new(self.keys.len(), &self.aggs);
        let mut group_of = Vec::new();
        // Groups made through the fast index only are missing from `index` until a row
        // needs it (then it is rebuilt from the groups' keys once).
        let mut index_complete = true;
        // Without keys there is one group, made before the first row: no key per row.
        let ungrouped = self.keys.is_empty();
        if ungrouped {
            groups.push(Vec::new());
        }
        let mut memo = NodeMemo::new(&self.keys);
        let mut coders: Vec<NumCoder> = self.keys.iter().map(|_| NumCoder::default()).collect();
        while let Some(ch) = self.input.next(bx)? {
            check_deadline(bx)?;
            group_of.clear();
            if ungrouped {
                group_of.resize(ch.len, 0);
            } else {
                let mut st = AssignState {
                    fast: &mut fast,
                    index: &mut index,
                    groups: &mut groups,
                    index_complete,
                    coders: &mut coders,
                };
                let done = match &mut memo {
                    Some(m) => m.assign(self, bx, &ch, &mut st, &mut group_of)?,
                    None => false,
                };
                if !done {
                    self.assign(bx, &ch, &mut st, &mut group_of)?;
                }
                index_complete = st.index_complete;
            }
            self.fold(bx, &ch, ungrouped, &mut groups, &group_of)?;
        }
        if groups.len() == 0 && self.keys.is_empty() {
            groups.push(Vec::new());
        }
        Ok(self.output_chunks(bx, groups))
    }

    /// Each row's group (made when new) into `group_of`.
    pub(super) fn assign(
        &mut self,
        bx: &Bx<'_, '_>,
        ch: &Chunk,
        st: &mut AssignState<'_>,
        group_of: &mut Vec<usize>,
    ) -> Result<(), QueryError> {
        let max = bx.cx.limits.max_buffered_rows;
        let AssignState {
            fast,
            index,
            groups,
            index_complete,
            coders,
        } = st;
        {
            let mut key_cols = Vec::with_capacity(self.keys.len());
            for ((_, e), coder) in self.keys.iter_mut().zip(coders.iter_mut()) {
                let model = match e.plain_prop() {
                    Some((slot, key)) => match ch.cols.get(slot) {
                        Some(Col::Nodes(refs)) => KeyCol::model(bx, refs, key),
                        _ => None,
                    },
                    None => None,
                };
                if let Some(k) = model {
                    key_cols.push(k);
                    continue;
                }
                let c = e.eval(bx, ch)?;
                let codes = match &c {
                    Col::Vals(v) => coder.codes(v).map(|cs| (cs, coder.id())),
                    _ => None,
                };
                key_cols.push(KeyCol::Col(c, codes));
            }
            let fk = key_codes(&key_cols, ch.len);
            if let Some((_, dicts)) = &fk {
                fast.reset_if_changed(dicts);
            }
            group_of.clear();
            // The fast index alone decides when it has seen every group so far (it was never
            // reset), so new groups need no byte key.
            let fast_only = fk.is_some() && fast.complete(groups.len());
            for i in 0..ch.len {
                if let Some((codes, _)) = &fk {
                    if let Some(g) = fast.get(&fast_key(codes, i)) {
                        group_of.push(g);
                        continue;
                    }
                }
                let vals: Vec<Val> = key_cols.iter().map(|c| c.val(bx, i)).collect();
                if fast_only {
                    if groups.len() >= max {
                        return Err(QueryError::BufferLimit(max));
                    }
                    groups.push(vals);
                    *index_complete = false;
                    let g = groups.len() - 1;
                    if let Some((codes, _)) = &fk {
                        fast.insert(fast_key(codes, i), g);
                    }
                    group_of.push(g);
                    continue;
                }
                if !*index_complete {
                    index.clear();
                    for g in 0..groups.len() {
                        let mut k = Vec::new();
                        groups.keys(g).iter().for_each(|v| write_key(v, &mut k));
                        index.insert(k, g);
                    }
                    *index_complete = true;
                }
                let mut k = Vec::new();
                vals.iter().for_each(|v| write_key(v, &mut k));
                let g = match index.get(&k) {
                    Some(g) => *g,
                    None => {
                        if groups.len() >= max {
                            return Err(QueryError::BufferLimit(max));
                        }
                        groups.push(vals);
                        index.insert(k, groups.len() - 1);
                        groups.len() - 1
                    }
                };
                if let Some((codes, _)) = &fk {
                    fast.insert(fast_key(codes, i), g);
                }
                group_of.push(g);
            }
        }
        Ok(())
    }

    /// Adds one chunk's rows to their groups' aggregate states.
    fn fold(
        &mut self,
        bx: &Bx<'_, '_>,
        ch: &Chunk,
        ungrouped: bool,
        groups: &mut Groups,
        group_of: &[usize],
    ) -> Result<(), QueryError> {
        for (a, (spec, arg)) in self.aggs.iter_mut().enumerate() {
            let Some(arg) = arg else {
                // count(*): every row counts.
                if ungrouped {
                    if let AggState::Count(n) = groups.state(0, a) {
                        *n += ch.len as i64;
                    }
                    continue;
                }
                if groups.len() <= 4 * CHUNK {
                    // Few groups: a dense tally per chunk, then one add per group.
                    let mut tally = vec![0i64; groups.len()];
                    for g in group_of {
                        tally[*g] += 1;
                    }
                    for (g, t) in tally.iter().enumerate() {
                        if let (true, AggState::Count(n)) = (*t > 0, groups.state(g, a)) {
                            *n += t;
                        }
                    }
                    continue;
                }
                for g in group_of {
                    if let AggState::Count(n) = groups.state(*g, a) {
                        *n += 1;
                    }
                }
                continue;
            };
            // A number column read in place: typed kernels, no values built, no evaluator.
            if !spec.distinct && fold_in_place(bx, ch, spec, a, ungrouped, groups, group_of)? {
                continue;
            }
            let c = arg.eval(bx, ch)?;
            if spec.distinct {
                if let Col::Dict { codes, dict } = &c {
                    if groups.fold_distinct_codes(
                        bx,
                        spec.kind,
                        a,
                        (codes, dict),
                        group_of,
                        ungrouped,
                    )? {
                        continue;
                    }
                } else if !matches!(c, Col::Null) {
                    groups.uncode(bx, a, ungrouped);
                }
            }
            if let (true, Col::Nodes(refs)) = (spec.distinct, &c) {
                // Distinct nodes by reference: no value built for a node met before.
                let nodes = bx.m.len();
                for (r, g) in refs.iter().zip(group_of) {
                    if *r != NULL && groups.seen_ref(*g, a, *r, ungrouped, nodes) {
                        groups.state(*g, a).add(spec.kind, bx.node_val(*r))?;
                    }
                }
                continue;
            }
            if let (false, AggKind::Count, Col::Nodes(refs)) = (spec.distinct, spec.kind, &c) {
                // count(node): the rows with a node, no value built.
                for (r, g) in refs.iter().zip(group_of) {
                    if let (true, AggState::Count(n)) = (*r != NULL, groups.state(*g, a)) {
                        *n += 1;
                    }
                }
                continue;
            }
            if let (false, Col::Vals(vals)) = (spec.distinct, &c) {
                // Computed values (`o.amount * s.progress`): numbers added typed, no clone.
                for (v, g) in vals.iter().zip(group_of) {
                    add_val(groups.state(*g, a), spec.kind, v)?;
                }
                continue;
            }
            if let (false, Col::Dict { codes, dict }) = (spec.distinct, &c) {
                // Codes (a CASE's constant results, `sum(CASE ... THEN 1 ELSE 0 END)`): the
                // same, each code's value borrowed from the dictionary.
                let vals = dict.vals();
                for (code, g) in codes.iter().zip(group_of) {
                    let v = vals.get(*code as usize).unwrap_or(&Val::Null);
                    add_val(groups.state(*g, a), spec.kind, v)?;
                }
                continue;
            }
            for (i, g) in group_of.iter().enumerate() {
                let v = cell(bx, &c, i);
                if v.is_null() {
                    continue;
                }
                if spec.distinct {
                    let (seen, state) = groups.seen_state(*g, a);
                    if seen.insert(bx, &v, ungrouped) {
                        state.add(spec.kind, v)?;
                    }
                    continue;
                }
                groups.state(*g, a).add(spec.kind, v)?;
            }
        }
        Ok(())
    }

    /// The groups as chunks: keys and finished aggregates.
    fn output_chunks(&self, bx: &Bx<'_, '_>, groups: Groups) -> Vec<Chunk> {
        let mut out = Vec::new();
        let (n_keys, n_aggs) = (groups.n_keys, groups.kinds.len());
        let mut keys = groups.keys.into_iter();
        let mut states = groups.states.into_iter();
        let mut left = groups.len;
        while left > 0 {
            let n = left.min(CHUNK);
            left -= n;
            let mut ch = Chunk::new(n, bx.width);
            let mut key_vals: Vec<Vec<Val>> = vec![Vec::with_capacity(n); n_keys];
            let mut agg_vals: Vec<Vec<Val>> = vec![Vec::with_capacity(n); n_aggs];
            for _ in 0..n {
                for (kv, v) in key_vals.iter_mut().zip(keys.by_ref().take(n_keys)) {
                    kv.push(v);
                }
                for (av, s) in agg_vals.iter_mut().zip(states.by_ref().take(n_aggs)) {
                    av.push(s.finish());
                }
            }
            for ((slot, _), vals) in self.keys.iter().zip(key_vals) {
                ch.cols[*slot] = col_from_vals(bx, vals);
            }
            for ((spec, _), vals) in self.aggs.iter().zip(agg_vals) {
                ch.cols[spec.slot] = col_from_vals(bx, vals);
            }
            out.push(ch);
        }
        out
    }
}

impl BOp for Aggregate<'_> {
    fn next(&mut self, bx: &Bx<'_, '_>) -> Result<Option<Chunk>, QueryError> {
        if self.output.is_none() {
            self.output = Some(self.run(bx)?.into_iter());
        }
        Ok(self.output.as_mut().and_then(Iterator::next))
    }
}

pub(in crate::batch) struct Distinct<'p> {
    pub(in crate::batch) input: BBox<'p>,
    pub(in crate::batch) slots: &'p [usize],
    pub(in crate::batch) seen: HashSet<Vec<u8>, Fx>,
    pub(in crate::batch) fast: FastIndex,
}

impl BOp for Distinct<'_> {
    fn next(&mut self, bx: &Bx<'_, '_>) -> Result<Option<Chunk>, QueryError> {
        let max = bx.cx.limits.max_buffered_rows;
        while let Some(ch) = self.input.next(bx)? {
            let cols: Vec<&Col> = self.slots.iter().map(|s| &ch.cols[*s]).collect();
            let fk = fast_codes(&cols, ch.len);
            if let Some((_, dicts)) = &fk {
                self.fast.reset_if_changed(dicts);
            }
            let mut keep = vec![false; ch.len];
            for (i, k) in keep.iter_mut().enumerate() {
                if let Some((codes, _)) = &fk {
                    let k = fast_key(codes, i);
                    if self.fast.get(&k).is_some() {
                        continue;
                    }
                    self.fast.insert(k, 0);
                }
                let mut key = Vec::new();
                for c in &cols {
                    write_key(&cell(bx, c, i), &mut key);
                }
                if self.seen.insert(key) {
                    if self.seen.len() > max {
                        return Err(QueryError::BufferLimit(max));
                    }
                    *k = true;
                }
            }
            let out = ch.select(&keep);
            if out.len > 0 {
                return Ok(Some(out));
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use crate::batch::ops::topk::tests::{made_by, same_as_rows};

    #[test]
    fn grouping_on_codes_and_located_values_is_the_row_paths() {
        // Deals at stages (an expansion's nodes are no label scan's consecutive rows), keys
        // with nulls, numbers with absent rows, a property of mixed types, NaN computed.
        let g = made_by(
            "UNWIND range(0, 5) AS s CREATE (:S {name: CASE WHEN s = 5 THEN null \
               ELSE 'st' + toString(s % 4) END, w: toFloat(s) / 4}) \
             WITH count(*) AS made \
             MATCH (s:S) WITH collect(s) AS stages \
             UNWIND range(0, 4999) AS i \
             WITH stages[i % 6] AS s, i \
             CREATE (o:O {i: i, \
               k: CASE WHEN i % 9 = 0 THEN null ELSE 'k' + toString(i % 5) END, \
               j: CASE WHEN i % 4 = 0 THEN null ELSE 'j' + toString(i % 7) END, \
               amount: CASE WHEN i % 10 = 0 THEN null ELSE (i * 37) % 1000 END, \
               score: CASE WHEN i % 6 = 0 THEN null ELSE toFloat(i % 17) / 16 END, \
               m: CASE i % 3 WHEN 0 THEN i WHEN 1 THEN toFloat(i) / 3 ELSE null END}) \
             CREATE (o)-[:AT]->(s)",
        );
        same_as_rows(
            &g,
            &[
                "MATCH (o:O) RETURN o.k AS k, o.j AS j, count(*) AS n, max(o.amount) AS a",
                "MATCH (o:O) WHERE o.j IN ['j1', 'j2', 'j5'] RETURN o.j, o.k, count(*), min(o.score)",
                "MATCH (o:O)-[:AT]->(s:S) RETURN s.name AS st, count(o), sum(o.amount), \
                 avg(o.score), min(o.m), max(o.m) ORDER BY st",
                "MATCH (o:O)-[:AT]->(s:S) RETURN s.name AS st, sum(o.amount * s.w) AS w, \
                 max(o.score / s.w) AS r, sum(o.m) ORDER BY w DESC, st",
                "MATCH (o:O)-[:AT]->(s:S) WHERE o.score > 0.5 RETURN s.name, o.k, count(o), \
                 max(o.amount), min(o.amount)",
                "MATCH (o:O)-[:AT]->(s:S) RETURN count(*), sum(o.score), max(o.amount)",
                "MATCH (o:O)-[:AT]->(s:S) RETURN o.k, count(DISTINCT s), count(DISTINCT o.j), \
                 collect(DISTINCT s.name) ORDER BY o.k",
                "MATCH (o:O)-[:AT]->(s:S) RETURN count(DISTINCT s), sum(DISTINCT o.amount)",
            ],
        );
    }
}
