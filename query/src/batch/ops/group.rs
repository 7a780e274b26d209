//! Grouping operators: hash aggregation and DISTINCT, keyed by dictionary codes where they can be.

#[allow(unused_imports)]
use super::*;

/// Up to four key columns' codes (dictionary codes or node references): a row's group or
/// DISTINCT key without building its values, valid while the dictionaries stay the same.
pub(super) type FastKey = [u32; 4];

/// Per row, the fast key of `cols`, when every column has codes (None otherwise).
pub(super) fn fast_keys(cols: &[&Col], len: usize) -> Option<(Vec<FastKey>, Vec<usize>)> {
    if cols.len() > 4 {
        return None;
    }
    let mut dicts = Vec::new();
    for c in cols {
        match c {
            Col::Dict { dict, .. } => dicts.push(Rc::as_ptr(dict) as usize),
            Col::Nodes(_) | Col::Null => dicts.push(0),
            Col::Vals(_) | Col::Rels(_) => return None,
        }
    }
    let mut keys = vec![[0u32; 4]; len];
    for (k, c) in cols.iter().enumerate() {
        match c {
            Col::Dict { codes, .. } => keys.iter_mut().zip(codes).for_each(|(x, c)| x[k] = *c),
            Col::Nodes(v) => keys.iter_mut().zip(v).for_each(|(x, r)| x[k] = *r),
            // The null node reference: a column of nulls must not meet node 0's key.
            Col::Null => keys.iter_mut().for_each(|x| x[k] = NULL),
            Col::Vals(_) | Col::Rels(_) => {}
        }
    }
    Some((keys, dicts))
}

/// A cache from fast keys to an index (a group, a seen flag), dropped when the key columns'
/// dictionaries change. One key: a table indexed by its code (codes and node references are
/// small dense integers); several: a hash map with a cheap hash.
#[derive(Default)]
pub(in crate::batch) struct FastIndex {
    dicts: Vec<usize>,
    one: Vec<u32>,
    map: HashMap<FastKey, usize, Fx>,
    /// Entries inserted since the last reset, and whether it was ever reset after one.
    entries: usize,
    lost: bool,
}

/// Hash maps keyed by the executor's own keys use `FxHasher`.
pub(in crate::batch) type Fx = std::hash::BuildHasherDefault<FxHasher>;

/// Most entries of the one-key table (beyond, the hash map serves).
pub(super) const TABLE_MAX: u32 = 1 << 24;

impl FastIndex {
    fn reset_if_changed(&mut self, dicts: &[usize]) {
        if self.dicts != dicts {
            self.dicts = dicts.to_vec();
            self.one.clear();
            self.map.clear();
            self.lost |= self.entries > 0;
            self.entries = 0;
        }
    }

    /// Whether it holds an entry for each of the `groups` made so far (each group was
    /// inserted once, and nothing was dropped): a key it lacks is then a new group.
    fn complete(&self, groups: usize) -> bool {
        !self.lost && self.entries == groups
    }

    #[inline]
    fn get(&self, k: &FastKey) -> Option<usize> {
        if self.dicts.len() == 1 && k[0] < TABLE_MAX {
            return match self.one.get(k[0] as usize) {
                Some(0) | None => None,
                Some(g) => Some(*g as usize - 1),
            };
        }
        self.map.get(k).copied()
    }

    #[inline]
    fn insert(&mut self, k: FastKey, v: usize) {
        self.entries += 1;
        if self.dicts.len() == 1 && k[0] < TABLE_MAX {
            let i = k[0] as usize;
            if self.one.len() <= i {
                self.one.resize((i + 1).max(self.one.len() * 2), 0);
            }
            self.one[i] = v as u32 + 1;
            return;
        }
        self.map.insert(k, v);
    }
}

/// A multiply-rotate hasher (as rustc's FxHash) for the fast keys: a few `u32`s, no
/// untrusted input, so no need for SipHash's flooding resistance.
#[derive(Default)]
pub(in crate::batch) struct FxHasher(u64);

impl std::hash::Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.write_u64(u64::from_le_bytes(w));
        }
        for b in chunks.remainder() {
            self.write_u64(u64::from(*b));
        }
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.write_u64(u64::from(i));
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// `n.key` of a slot, when the expression is exactly that.
pub(super) fn plain_prop(e: &Option<crate::eval::CExpr>) -> Option<(usize, &str)> {
    match e {
        Some(crate::eval::CExpr::Prop(base, key)) => match base.as_ref() {
            crate::eval::CExpr::Slot(s) => Some((*s, key.as_str())),
            _ => None,
        },
        _ => None,
    }
}

/// A number (or datetime) column's values for a chunk's nodes, read in place.
pub(super) enum InPlace<'a> {
    Ints {
        values: &'a [i64],
        col: ColumnView<'a>,
        /// No row of the column lacks a value.
        full: bool,
        row0: usize,
        datetime: bool,
    },
    Floats(&'a [f64]),
}

/// The column of `key` and the row of `refs[0]` in it, when `refs` are consecutive rows of
/// one label's base (a label scan's chunk, nothing touched): row `i` is then `row0 + i`.
pub(in crate::batch) fn column_in_place<'a>(
    bx: &Bx<'a, '_>,
    refs: &[NodeRef],
    key: &str,
) -> Option<(ColumnView<'a>, usize)> {
    column_in_place_at(bx, refs, key).map(|(_, c, row0)| (c, row0))
}

/// `column_in_place` with the index of the label the column belongs to.
pub(in crate::batch) fn column_in_place_at<'a>(
    bx: &Bx<'a, '_>,
    refs: &[NodeRef],
    key: &str,
) -> Option<(usize, ColumnView<'a>, usize)> {
    if !bx.m.untouched() {
        return None;
    }
    let first = *refs.first()?;
    let (li, col, row0) = match crate::batch::expr::PropReader::new(key).locate(bx, first) {
        crate::batch::expr::Found::Column(li, col, row) => (li, col, row),
        _ => return None,
    };
    let end = row0 + refs.len();
    if bx.label_rows(li).get(row0..end)? != refs {
        return None;
    }
    Some((li, col, row0))
}

/// The values of a number (or datetime) column for `refs`, when they are consecutive rows of
/// one label's base (a label scan's chunk, nothing touched). None otherwise (the caller
/// evaluates row by row).
pub(super) fn numbers_in_place<'a>(
    bx: &Bx<'a, '_>,
    refs: &[NodeRef],
    key: &str,
) -> Option<InPlace<'a>> {
    let (col, row0) = column_in_place(bx, refs, key)?;
    let end = row0 + refs.len();
    match col {
        ColumnView::Integers {
            values,
            absent,
            datetime,
        } => Some(InPlace::Ints {
            values: values.get(row0..end)?,
            col,
            full: absent.is_empty(),
            row0,
            datetime,
        }),
        ColumnView::Floats(values) => Some(InPlace::Floats(values.get(row0..end)?)),
        _ => None,
    }
}

pub(super) struct Group {
    keys: Vec<Val>,
    states: Vec<AggState>,
    /// Per aggregate, the values a DISTINCT aggregate has met (empty when none is DISTINCT).
    seen: Vec<Seen>,
}

/// Values a DISTINCT aggregate has met: nodes by reference, anything else by its key bytes.
#[derive(Default)]
pub(super) struct Seen {
    refs: HashSet<u32, Fx>,
    /// Node references as bits, for the one group of an aggregate without keys (a bit per
    /// node of the model at most; per group of many it could be too much memory).
    bits: Vec<u64>,
    keys: HashSet<Vec<u8>, Fx>,
}

impl Seen {
    /// Whether node reference `r` is new (then it is remembered); `bitmap` for the one group
    /// of an aggregate without keys.
    #[inline]
    fn insert_ref(&mut self, r: NodeRef, bitmap: bool) -> bool {
        if !bitmap {
            return self.refs.insert(r);
        }
        let (w, b) = ((r / 64) as usize, 1u64 << (r % 64));
        if self.bits.len() <= w {
            self.bits.resize(w + 1, 0);
        }
        let new = self.bits[w] & b == 0;
        self.bits[w] |= b;
        new
    }

    /// Whether `v` is new (then it is remembered).
    fn insert(&mut self, bx: &Bx<'_, '_>, v: &Val, bitmap: bool) -> bool {
        match v {
            Val::Node(id) => self.insert_ref(bx.node_ref(*id), bitmap),
            other => {
                let mut key = Vec::new();
                write_key(other, &mut key);
                self.keys.insert(key)
            }
        }
    }
}

pub(in crate::batch) struct Aggregate<'p> {
    pub(in crate::batch) input: BBox<'p>,
    pub(in crate::batch) keys: Vec<(usize, BExpr)>,
    pub(in crate::batch) aggs: Vec<(&'p AggSpec, Option<BExpr>)>,
    pub(in crate::batch) output: Option<std::vec::IntoIter<Chunk>>,
}

/// A new group: its keys and a fresh state per aggregate.
fn new_group(keys: Vec<Val>, aggs: &[(&AggSpec, Option<BExpr>)]) -> Group {
    Group {
        keys,
        states: aggs.iter().map(|(a, _)| AggState::new(a.kind)).collect(),
        seen: if aggs.iter().any(|(a, _)| a.distinct) {
            aggs.iter().map(|_| Seen::default()).collect()
        } else {
            Vec::new()
        },
    }
}

impl Aggregate<'_> {
    fn run(&mut self, bx: &Bx<'_, '_>) -> Result<Vec<Chunk>, QueryError> {
        let mut index: HashMap<Vec<u8>, usize, Fx> = HashMap::default();
        let mut fast = FastIndex::default();
        let mut groups: Vec<Group> = Vec::new();
        let mut group_of = Vec::new();
        // Groups made through the fast index only are missing from `index` until a row
        // needs it (then it is rebuilt from the groups' keys once).
        let mut index_complete = true;
        // Without keys there is one group, made before the first row: no key per row.
        let ungrouped = self.keys.is_empty();
        if ungrouped {
            groups.push(new_group(Vec::new(), &self.aggs));
        }
        while let Some(ch) = self.input.next(bx)? {
            check_deadline(bx)?;
            group_of.clear();
            if ungrouped {
                group_of.resize(ch.len, 0);
            } else {
                index_complete = self.assign(
                    bx,
                    &ch,
                    &mut fast,
                    &mut index,
                    &mut groups,
                    &mut group_of,
                    index_complete,
                )?;
            }
            self.fold(bx, &ch, ungrouped, &mut groups, &group_of)?;
        }
        if groups.is_empty() && self.keys.is_empty() {
            groups.push(new_group(Vec::new(), &self.aggs));
        }
        Ok(self.output_chunks(bx, groups))
    }

    /// Each row's group (made when new) into `group_of`; whether `index` still holds every
    /// group's byte key.
    #[allow(clippy::too_many_arguments)]
    fn assign(
        &mut self,
        bx: &Bx<'_, '_>,
        ch: &Chunk,
        fast: &mut FastIndex,
        index: &mut HashMap<Vec<u8>, usize, Fx>,
        groups: &mut Vec<Group>,
        group_of: &mut Vec<usize>,
        mut index_complete: bool,
    ) -> Result<bool, QueryError> {
        let max = bx.cx.limits.max_buffered_rows;
        {
            let mut key_cols = Vec::with_capacity(self.keys.len());
            for (_, e) in &mut self.keys {
                key_cols.push(e.eval(bx, ch)?);
            }
            let refs: Vec<&Col> = key_cols.iter().collect();
            let fk = fast_keys(&refs, ch.len);
            if let Some((_, dicts)) = &fk {
                fast.reset_if_changed(dicts);
            }
            group_of.clear();
            // The fast index alone decides when it has seen every group so far (it was never
            // reset), so new groups need no byte key.
            let fast_only = fk.is_some() && fast.complete(groups.len());
            for i in 0..ch.len {
                if let Some((keys, _)) = &fk {
                    if let Some(g) = fast.get(&keys[i]) {
                        group_of.push(g);
                        continue;
                    }
                }
                let vals: Vec<Val> = key_cols.iter().map(|c| cell(bx, c, i)).collect();
                if fast_only {
                    if groups.len() >= max {
                        return Err(QueryError::BufferLimit(max));
                    }
                    groups.push(new_group(vals, &self.aggs));
                    index_complete = false;
                    let g = groups.len() - 1;
                    if let Some((keys, _)) = &fk {
                        fast.insert(keys[i], g);
                    }
                    group_of.push(g);
                    continue;
                }
                if !index_complete {
                    index.clear();
                    for (g, group) in groups.iter().enumerate() {
                        let mut k = Vec::new();
                        group.keys.iter().for_each(|v| write_key(v, &mut k));
                        index.insert(k, g);
                    }
                    index_complete = true;
                }
                let mut k = Vec::new();
                vals.iter().for_each(|v| write_key(v, &mut k));
                let g = match index.get(&k) {
                    Some(g) => *g,
                    None => {
                        if groups.len() >= max {
                            return Err(QueryError::BufferLimit(max));
                        }
                        groups.push(new_group(vals, &self.aggs));
                        index.insert(k, groups.len() - 1);
                        groups.len() - 1
                    }
                };
                if let Some((keys, _)) = &fk {
                    fast.insert(keys[i], g);
                }
                group_of.push(g);
            }
        }
        Ok(index_complete)
    }

    /// Adds one chunk's rows to their groups' aggregate states.
    fn fold(
        &mut self,
        bx: &Bx<'_, '_>,
        ch: &Chunk,
        ungrouped: bool,
        groups: &mut [Group],
        group_of: &[usize],
    ) -> Result<(), QueryError> {
        for (a, (spec, arg)) in self.aggs.iter_mut().enumerate() {
            let Some(arg) = arg else {
                // count(*): every row counts.
                if ungrouped {
                    if let AggState::Count(n) = &mut groups[0].states[a] {
                        *n += ch.len as i64;
                    }
                    continue;
                }
                for g in group_of {
                    if let AggState::Count(n) = &mut groups[*g].states[a] {
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
            if let (true, Col::Nodes(refs)) = (spec.distinct, &c) {
                // Distinct nodes by reference: no value built for a node met before.
                for (r, g) in refs.iter().zip(group_of) {
                    let group = &mut groups[*g];
                    if *r != NULL && group.seen[a].insert_ref(*r, ungrouped) {
                        group.states[a].add(spec.kind, bx.node_val(*r))?;
                    }
                }
                continue;
            }
            if let (false, AggKind::Count, Col::Nodes(refs)) = (spec.distinct, spec.kind, &c) {
                // count(node): the rows with a node, no value built.
                for (r, g) in refs.iter().zip(group_of) {
                    if let (true, AggState::Count(n)) = (*r != NULL, &mut groups[*g].states[a]) {
                        *n += 1;
                    }
                }
                continue;
            }
            for (i, g) in group_of.iter().enumerate() {
                let v = cell(bx, &c, i);
                if v.is_null() {
                    continue;
                }
                let group = &mut groups[*g];
                if spec.distinct && !group.seen[a].insert(bx, &v, ungrouped) {
                    continue;
                }
                group.states[a].add(spec.kind, v)?;
            }
        }
        Ok(())
    }

    /// The groups as chunks: keys and finished aggregates.
    fn output_chunks(&self, bx: &Bx<'_, '_>, groups: Vec<Group>) -> Vec<Chunk> {
        let mut out = Vec::new();
        let mut rest = groups.into_iter().peekable();
        while rest.peek().is_some() {
            let part: Vec<Group> = rest.by_ref().take(CHUNK).collect();
            let mut ch = Chunk::new(part.len(), bx.width);
            let mut key_vals: Vec<Vec<Val>> = vec![Vec::with_capacity(part.len()); self.keys.len()];
            let mut agg_vals: Vec<Vec<Val>> = vec![Vec::with_capacity(part.len()); self.aggs.len()];
            for g in part {
                for (k, v) in g.keys.into_iter().enumerate() {
                    key_vals[k].push(v);
                }
                for (a, s) in g.states.into_iter().enumerate() {
                    agg_vals[a].push(s.finish());
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

/// Aggregate `a` (`spec`, not DISTINCT) of one chunk folded from its number column read in
/// place, when its argument is `n.key` of a label scan's chunk; false: nothing done.
fn fold_in_place(
    bx: &Bx<'_, '_>,
    ch: &Chunk,
    spec: &AggSpec,
    a: usize,
    ungrouped: bool,
    groups: &mut [Group],
    group_of: &[usize],
) -> Result<bool, QueryError> {
    let Some((s, key)) = plain_prop(&spec.arg) else {
        return Ok(false);
    };
    let Some(Col::Nodes(refs)) = ch.cols.get(s) else {
        return Ok(false);
    };
    match numbers_in_place(bx, refs, key) {
        Some(InPlace::Ints {
            values,
            col,
            full,
            row0,
            datetime,
        }) => {
            let present: Option<Vec<bool>> = (!full).then(|| {
                (0..values.len())
                    .map(|i| !col.is_absent(row0 + i))
                    .collect()
            });
            if ungrouped
                && fold_ints(
                    &mut groups[0].states[a],
                    spec.kind,
                    values,
                    present.as_deref(),
                    datetime,
                )?
            {
                return Ok(true);
            }
            for (i, (g, v)) in group_of.iter().zip(values).enumerate() {
                if present.as_ref().is_some_and(|p| !p[i]) {
                    continue;
                }
                add_int(&mut groups[*g].states[a], spec.kind, *v, datetime)?;
            }
            Ok(true)
        }
        Some(InPlace::Floats(values)) => {
            if ungrouped && fold_floats(&mut groups[0].states[a], spec.kind, values)? {
                return Ok(true);
            }
            for (g, v) in group_of.iter().zip(values) {
                if !v.is_nan() {
                    add_float(&mut groups[*g].states[a], spec.kind, *v)?;
                }
            }
            Ok(true)
        }
        None => Ok(false),
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
            let fk = fast_keys(&cols, ch.len);
            if let Some((_, dicts)) = &fk {
                self.fast.reset_if_changed(dicts);
            }
            let mut keep = vec![false; ch.len];
            for (i, k) in keep.iter_mut().enumerate() {
                if let Some((keys, _)) = &fk {
                    if self.fast.get(&keys[i]).is_some() {
                        continue;
                    }
                    self.fast.insert(keys[i], 0);
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
