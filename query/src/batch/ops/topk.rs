//! Top-k (ORDER BY ... LIMIT) over typed keys: each chunk's keys are read as borrowed,
//! typed values (the model's integers, floats and strings in place), compared with the
//! current cut-off row, and only the rows that beat it are gathered and kept. The kept set
//! stays at most about twice `skip + limit` rows plus one chunk.

use std::cell::Ref;
use std::cmp::Ordering;

#[allow(unused_imports)]
use super::*;
use crate::batch::expr::{Found, PropReader};

/// One row's sort key, borrowed where it can be.
#[derive(Clone, Copy)]
pub(super) enum K<'x> {
    Null,
    Int(i64),
    Float(f64),
    DateTime(i64),
    Str(&'x str),
    /// Any other value, borrowed from the chunk's column.
    Val(&'x Val),
    /// Any other value, read through the snapshot: index into the key column's `owned`.
    Own(u32),
}

/// One key's values for one chunk: built per row, or read in place per row when asked.
pub(super) struct KeyCol<'x> {
    /// Rows of the chunk.
    len: usize,
    keys: Vec<K<'x>>,
    owned: Vec<Val>,
    lazy: Option<Lazy<'x>>,
}

/// Rows `row0..` of a model column (a label scan's chunk), read when a comparison needs
/// them: most rows lose on the first key, so the others are never read.
struct Lazy<'x> {
    col: ColumnView<'x>,
    row0: usize,
    /// Per chunk row, whether it lacks a value (integer columns with absent rows here).
    absent: Option<Vec<bool>>,
}

impl<'x> Lazy<'x> {
    fn new(col: ColumnView<'x>, row0: usize, len: usize) -> Self {
        let absent = match &col {
            ColumnView::Integers { absent, .. } if !absent.is_empty() => {
                let (lo, hi) = (row0 as u32, (row0 + len) as u32);
                (absent.range_cardinality(lo..hi) > 0).then(|| {
                    let mut mask = vec![false; len];
                    for r in absent.range(lo..hi) {
                        if let Some(m) = mask.get_mut((r - lo) as usize) {
                            *m = true;
                        }
                    }
                    mask
                })
            }
            _ => None,
        };
        Lazy { col, row0, absent }
    }

    #[inline]
    fn key(&self, i: usize) -> K<'x> {
        let row = self.row0 + i;
        match self.col {
            // The chunk's absent rows are in the mask (no bitmap lookup per row).
            ColumnView::Integers {
                values, datetime, ..
            } => match values.get(row) {
                Some(_) if self.absent.as_ref().is_some_and(|a| a[i]) => K::Null,
                Some(v) if datetime => K::DateTime(*v),
                Some(v) => K::Int(*v),
                None => K::Null,
            },
            ref c => K::of_column(c, row),
        }
    }
}

impl<'x> KeyCol<'x> {
    /// The key of an owned value (null stays `K::Null`: the comparisons rank it by kind).
    fn own(&mut self, v: Val) -> K<'x> {
        match v {
            Val::Null => K::Null,
            Val::Int(i) => K::Int(i),
            Val::Float(f) => K::Float(f),
            Val::DateTime(t) => K::DateTime(t),
            v => {
                self.owned.push(v);
                K::Own(self.owned.len() as u32 - 1)
            }
        }
    }

    #[inline]
    fn key(&self, i: usize) -> K<'x> {
        match &self.lazy {
            Some(l) => l.key(i),
            None => self.keys[i],
        }
    }

    /// Row `i`'s key as a value.
    fn val_of(&self, i: usize) -> Val {
        self.val(self.key(i))
    }

    fn val(&self, k: K<'_>) -> Val {
        match k {
            K::Null => Val::Null,
            K::Int(i) => Val::Int(i),
            K::Float(f) => Val::Float(f),
            K::DateTime(t) => Val::DateTime(t),
            K::Str(s) => Val::Str(s.to_owned()),
            K::Val(v) => v.clone(),
            K::Own(i) => self.owned.get(i as usize).cloned().unwrap_or(Val::Null),
        }
    }

    /// ORDER BY's order of rows `i` and `j`.
    fn cmp_rows(&self, i: usize, j: usize) -> Ordering {
        match (self.key(i), self.key(j)) {
            (K::Null, K::Null) => Ordering::Equal,
            (K::Null, _) => Ordering::Greater,
            (_, K::Null) => Ordering::Less,
            (K::Int(a), K::Int(b)) => a.cmp(&b),
            (K::DateTime(a), K::DateTime(b)) => a.cmp(&b),
            (K::Float(a), K::Float(b)) if !a.is_nan() && !b.is_nan() => {
                a.partial_cmp(&b).unwrap_or(Ordering::Equal)
            }
            (K::Str(a), K::Str(b)) => a.cmp(b),
            (a, b) => order(&self.val(a), &self.val(b)),
        }
    }

    /// ORDER BY's order (`value::order`) of row `i` against a value.
    #[inline]
    pub(super) fn cmp_val(&self, i: usize, v: &Val) -> Ordering {
        match (self.key(i), v) {
            (K::Null, Val::Null) => Ordering::Equal,
            // Null ranks after every type.
            (K::Null, _) => Ordering::Greater,
            (_, Val::Null) => Ordering::Less,
            (K::Int(a), Val::Int(b)) => a.cmp(b),
            (K::DateTime(a), Val::DateTime(b)) => a.cmp(b),
            (K::Float(a), Val::Float(b)) if !a.is_nan() && !b.is_nan() => {
                a.partial_cmp(b).unwrap_or(Ordering::Equal)
            }
            (K::Str(a), Val::Str(b)) => a.cmp(b.as_str()),
            (K::Val(a), b) => order(a, b),
            (K::Own(a), b) => match self.owned.get(a as usize) {
                Some(a) => order(a, b),
                None => order(&Val::Null, b),
            },
            (k, b) => order(&self.val(k), b),
        }
    }
}

impl<'x> K<'x> {
    fn of(v: &'x Val) -> K<'x> {
        match v {
            Val::Null => K::Null,
            Val::Int(i) => K::Int(*i),
            Val::Float(f) => K::Float(*f),
            Val::DateTime(t) => K::DateTime(*t),
            Val::Str(s) => K::Str(s),
            other => K::Val(other),
        }
    }

    #[inline]
    fn of_column(c: &ColumnView<'x>, row: usize) -> K<'x> {
        match c {
            ColumnView::Strings { codes, dict } => match codes.get(row) {
                Some(&code) if code != svc_engine::NO_CODE => {
                    dict.get(code as usize).map_or(K::Null, |s| K::Str(s))
                }
                _ => K::Null,
            },
            ColumnView::Integers {
                values,
                absent,
                datetime,
            } => match values.get(row) {
                Some(_) if !absent.is_empty() && absent.contains(row as u32) => K::Null,
                Some(v) if *datetime => K::DateTime(*v),
                Some(v) => K::Int(*v),
                None => K::Null,
            },
            ColumnView::Floats(v) => match v.get(row) {
                Some(f) if !f.is_nan() => K::Float(*f),
                _ => K::Null,
            },
            // Other values are rare in sort keys: the evaluator's value.
            ColumnView::Values(_) => K::Null,
        }
    }
}

/// A key's source for one chunk: an evaluated column, and the dictionary it borrows from.
pub(super) struct KeySource {
    col: Col,
}

/// Evaluates the keys of one chunk (the property reads of node slots straight from the
/// model's columns; anything else through `BExpr`).
pub(super) fn eval_sources(
    bx: &Bx<'_, '_>,
    keys: &mut [(BExpr, bool)],
    ch: &Chunk,
) -> Result<Vec<Option<KeySource>>, QueryError> {
    let mut out = Vec::with_capacity(keys.len());
    for (e, _) in keys.iter_mut() {
        let direct = e
            .plain_prop()
            .is_some_and(|(s, _)| matches!(ch.cols.get(s), Some(Col::Nodes(_))));
        out.push(if direct {
            None
        } else {
            Some(KeySource {
                col: e.eval(bx, ch)?,
            })
        });
    }
    Ok(out)
}

/// The typed keys of one chunk from `eval_sources`' result.
pub(super) fn key_cols<'x>(
    bx: &Bx<'x, '_>,
    keys: &[(BExpr, bool)],
    sources: &'x [Option<KeySource>],
    guards: &'x [Option<Ref<'x, Vec<Val>>>],
    ch: &Chunk,
    cut: Option<&[Val]>,
    keep: usize,
) -> Result<(Vec<KeyCol<'x>>, Option<Vec<bool>>), QueryError> {
    let mut out: Vec<KeyCol<'x>> = Vec::with_capacity(keys.len());
    // Rows whose first key does not lose to the cut (None: every row): the only ones whose
    // later keys a comparison reads, so the only ones a later key is looked up for.
    let mut need: Option<Vec<bool>> = None;
    let desc0 = keys.first().is_some_and(|(_, d)| *d);
    for (j, (((e, _), src), guard)) in keys.iter().zip(sources).zip(guards).enumerate() {
        let mut kc = KeyCol {
            len: ch.len,
            keys: Vec::new(),
            owned: Vec::new(),
            lazy: None,
        };
        match src {
            None => {
                let Some((slot, key)) = e.plain_prop() else {
                    return Err(QueryError::semantic("sort key changed kind"));
                };
                let Some(Col::Nodes(refs)) = ch.cols.get(slot) else {
                    return Err(QueryError::semantic("sort key changed kind"));
                };
                match column_in_place(bx, refs, key) {
                    Some((c, row0)) if !matches!(c, ColumnView::Values(_)) => {
                        kc.lazy = Some(Lazy::new(c, row0, refs.len()));
                        out.push(kc);
                        continue;
                    }
                    _ => {}
                }
                if j > 0 && need.is_none() {
                    // A later key looked up node by node: first see which rows need it.
                    need = out
                        .first()
                        .and_then(|first| first_key_needed(first, desc0, cut, keep));
                }
                let mut reader = PropReader::new(key);
                for (i, &r) in refs.iter().enumerate() {
                    let k = if r == NULL || need.as_ref().is_some_and(|n| !n[i]) {
                        K::Null
                    } else {
                        match reader.locate(bx, r) {
                            Found::Column(_, ColumnView::Values(_), _) | Found::Slow => {
                                kc.own(reader.get(bx, r)?)
                            }
                            Found::Column(_, c, row) => K::of_column(&c, row),
                            Found::Absent => K::Null,
                        }
                    };
                    kc.keys.push(k);
                }
            }
            Some(KeySource { col }) => match (col, guard) {
                (Col::Dict { codes, .. }, Some(vals)) => {
                    kc.keys.extend(
                        codes
                            .iter()
                            .map(|c| vals.get(*c as usize).map_or(K::Null, K::of)),
                    );
                }
                (Col::Vals(v), _) => kc.keys.extend(v.iter().map(K::of)),
                (Col::Rels(v), _) => {
                    for e in v {
                        let k = kc.own(Val::Rel(svc_engine::EdgeId(*e)));
                        kc.keys.push(k);
                    }
                }
                (Col::Nodes(refs), _) => {
                    for r in refs {
                        let k = kc.own(bx.node_val(*r));
                        kc.keys.push(k);
                    }
                }
                _ => kc.keys.extend(std::iter::repeat_n(K::Null, ch.len)),
            },
        }
        out.push(kc);
    }
    Ok((out, need))
}

/// Per row of a chunk, whether its first key can still place it among the best `keep`:
/// it does not lose to the cut's first key or, before there is a cut, to the `keep`-th best
/// first key of the chunk (`keep` rows beat any row behind that). None: every row can.
fn first_key_needed(
    first: &KeyCol<'_>,
    desc: bool,
    cut: Option<&[Val]>,
    keep: usize,
) -> Option<Vec<bool>> {
    let len = first.len;
    if cut.is_none() && keep > 0 && keep < len {
        // Strings: the selection on their first 16 bytes (a row whose prefix sorts after the
        // keep-th best prefix sorts after at least `keep` rows). Integers or datetimes: on the
        // numbers themselves, exact.
        if let Some(p) = str_prefixes(first) {
            return Some(not_behind(&p, keep, desc));
        }
        if let Some(p) = int_keys(first) {
            return Some(not_behind(&p, keep, desc));
        }
    }
    let dir = |o: Ordering| if desc { o.reverse() } else { o };
    // Once there is a cut it is the stricter bound, mostly: no need to select.
    let by_chunk = (cut.is_none() && keep > 0 && keep < len).then(|| {
        let mut idx: Vec<u32> = (0..len as u32).collect();
        idx.select_nth_unstable_by(keep - 1, |a, b| {
            dir(first.cmp_rows(*a as usize, *b as usize))
        });
        idx[keep - 1] as usize
    });
    let by_cut = cut.and_then(|c| c.first());
    if by_chunk.is_none() && by_cut.is_none() {
        return None;
    }
    Some(
        (0..len)
            .map(|i| {
                by_cut.is_none_or(|c| dir(first.cmp_val(i, c)).is_le())
                    && by_chunk.is_none_or(|t| dir(first.cmp_rows(i, t)).is_le())
            })
            .collect(),
    )
}

/// Per key, whether it ties or beats the `keep`-th best of `keys` (ascending, or `desc`).
fn not_behind<T: Ord + Copy>(keys: &[T], keep: usize, desc: bool) -> Vec<bool> {
    let mut s = keys.to_vec();
    let t = if desc {
        *s.select_nth_unstable_by(keep - 1, |a, b| b.cmp(a)).1
    } else {
        *s.select_nth_unstable(keep - 1).1
    };
    keys.iter()
        .map(|x| if desc { *x >= t } else { *x <= t })
        .collect()
}

/// A string's first 16 bytes as a number, zero-padded: `a < b` gives `prefix(a) <= prefix(b)`,
/// so a strictly smaller prefix is a strictly smaller string.
#[inline]
fn prefix16(s: &str) -> u128 {
    let s = s.as_bytes();
    if let Some(head) = s.first_chunk::<16>() {
        return u128::from_be_bytes(*head);
    }
    let mut b = [0u8; 16];
    for (d, c) in b.iter_mut().zip(s) {
        *d = *c;
    }
    u128::from_be_bytes(b)
}

/// Per row of a key column of strings (and nulls), the string's `prefix16`; null (after every
/// string) is `u128::MAX`, which no UTF-8 prefix reaches (0xFF is never in UTF-8). None: a
/// value of another type.
fn str_prefixes(first: &KeyCol<'_>) -> Option<Vec<u128>> {
    let mut out = Vec::with_capacity(first.len);
    if let Some(Lazy {
        col: ColumnView::Strings { codes, dict },
        row0,
        ..
    }) = &first.lazy
    {
        for c in codes.get(*row0..row0 + first.len)? {
            out.push(match dict.get(*c as usize) {
                Some(s) => prefix16(s),
                None => u128::MAX, // NO_CODE: absent
            });
        }
        return Some(out);
    }
    for i in 0..first.len {
        out.push(match first.key(i) {
            K::Str(s) => prefix16(s),
            K::Null => u128::MAX,
            _ => return None,
        });
    }
    Some(out)
}

/// Per row of a key column of integers (or of datetimes) and nulls, a number in ORDER BY's
/// order: the value, null (after every value) `i128::MAX`. None: another type, or both kinds
/// (integers and datetimes order by type first).
fn int_keys(first: &KeyCol<'_>) -> Option<Vec<i128>> {
    let mut out = Vec::with_capacity(first.len);
    let mut datetimes = None;
    for i in 0..first.len {
        let (v, dt) = match first.key(i) {
            K::Null => {
                out.push(i128::MAX);
                continue;
            }
            K::Int(v) => (v, false),
            K::DateTime(v) => (v, true),
            _ => return None,
        };
        if *datetimes.get_or_insert(dt) != dt {
            return None;
        }
        out.push(i128::from(v));
    }
    Some(out)
}

/// The dictionaries the key columns borrow from, held for one chunk.
pub(super) fn guards(sources: &[Option<KeySource>]) -> Vec<Option<Ref<'_, Vec<Val>>>> {
    sources
        .iter()
        .map(|s| match s {
            Some(KeySource {
                col: Col::Dict { dict, .. },
            }) => Some(dict.vals()),
            _ => None,
        })
        .collect()
}

/// Whether row `i` of `cols` sorts strictly before the key `cut` (directions `desc`): the
/// first key decides most rows alone, later keys are read only on a tie.
#[inline]
fn before_cut(cols: &[KeyCol<'_>], desc: &[bool], i: usize, cut: &[Val]) -> bool {
    for ((c, d), v) in cols.iter().zip(desc).zip(cut) {
        let o = c.cmp_val(i, v);
        let o = if *d { o.reverse() } else { o };
        if o.is_ne() {
            return o.is_lt();
        }
    }
    false
}

/// Order of held keys (values), as the row path compares them.
fn cmp_held(a: &[Val], b: &[Val], desc: &[bool]) -> Ordering {
    for ((x, y), d) in a.iter().zip(b).zip(desc) {
        let o = order(x, y);
        let o = if *d { o.reverse() } else { o };
        if o.is_ne() {
            return o;
        }
    }
    Ordering::Equal
}

/// Whether every value of the slots a deferred projection reads properties of is one such a
/// read cannot fail on (a node, a relationship, a map, null).
pub(super) fn readable(ch: &Chunk, slots: &[usize]) -> bool {
    slots.iter().all(|s| match ch.cols.get(*s) {
        None | Some(Col::Null) | Some(Col::Nodes(_)) => true,
        Some(Col::Dict { codes, dict }) => {
            let vals = dict.vals();
            codes.iter().all(|c| {
                matches!(
                    vals.get(*c as usize),
                    Some(Val::Null | Val::Node(_) | Val::Rel(_) | Val::Map(_))
                )
            })
        }
        Some(Col::Rels(_)) => true,
        Some(Col::Vals(v)) => v
            .iter()
            .all(|x| matches!(x, Val::Null | Val::Node(_) | Val::Rel(_) | Val::Map(_))),
    })
}

/// A candidate row: its keys, its place in the input (ties keep input order, as a stable
/// sort), and its row in the held chunk (or, while `cur`, in the chunk being read).
struct Entry {
    keys: Vec<Val>,
    seq: u64,
    row: u32,
    cur: bool,
}

fn cmp_entry(a: &Entry, b: &Entry, desc: &[bool]) -> Ordering {
    cmp_held(&a.keys, &b.keys, desc).then(a.seq.cmp(&b.seq))
}

/// Entries held before a compaction cuts them back to `keep`: enough that compactions are
/// rare, few enough that they stay cheap.
fn high_water(keep: usize) -> usize {
    keep.saturating_mul(2).max(keep.saturating_add(32))
}

/// The best `keep` rows of the input, in order. Rows are read one at a time against the
/// cut-off (the worst of the best `keep` so far): a row that does not beat it costs one
/// comparison of its first key (read in place when it can be); the rows that do are kept
/// (keys as values, the rows gathered once per chunk), and cut back to `keep` whenever they
/// reach `high_water`.
pub(super) fn top_k(
    bx: &Bx<'_, '_>,
    input: &mut BBox<'_>,
    keys: &mut [(BExpr, bool)],
    keep: usize,
    readable_slots: &[usize],
) -> Result<Vec<Chunk>, QueryError> {
    let desc: Vec<bool> = keys.iter().map(|(_, d)| *d).collect();
    let node = |r: NodeRef| bx.node_val(r);
    let mut held: Option<Chunk> = None;
    let mut entries: Vec<Entry> = Vec::new();
    let mut cut: Option<Vec<Val>> = None;
    let mut seq = 0u64;
    let max = bx.cx.limits.max_buffered_rows;
    let high = high_water(keep);
    while let Some(ch) = input.next(bx)? {
        check_deadline(bx)?;
        if !readable(&ch, readable_slots) {
            // A deferred projection could fail on a row the cut drops: the row path decides.
            return Err(QueryError::semantic(
                "deferred projection over other values",
            ));
        }
        let sources = eval_sources(bx, keys, &ch)?;
        if keep == 0 {
            continue; // the keys were evaluated (their errors raised); no row is kept
        }
        let gs = guards(&sources);
        let (cols, mut need) = key_cols(bx, keys, &sources, &gs, &ch, cut.as_deref(), keep)?;
        // A chunk of values (not read in place, or strings) much larger than `keep`: only rows whose first
        // key ties or beats the chunk's `keep`-th best can place, so the rest never become
        // entries. Without it an input already in the wanted order (the newest events of a
        // customer, `ORDER BY ts DESC` over rows created oldest first) beats the cut on every
        // row: an entry and a compaction every few rows.
        // Only before the first cut (later chunks have the cut as their bound, and selecting
        // in every chunk costs more than it saves on inputs in no particular order).
        if need.is_none()
            && cut.is_none()
            && ch.len >= 4 * high
            && cols.first().is_some_and(|c| {
                // Read in place: strings only (their selection is on prefixes, cheap).
                c.lazy
                    .as_ref()
                    .is_none_or(|l| matches!(l.col, ColumnView::Strings { .. }))
            })
        {
            need = cols
                .first()
                .and_then(|first| first_key_needed(first, desc[0], None, keep));
        }
        let base = seq;
        seq += ch.len as u64;
        for i in 0..ch.len {
            if need.as_ref().is_some_and(|n| !n[i]) {
                continue;
            }
            if cut
                .as_ref()
                .is_some_and(|c| !before_cut(&cols, &desc, i, c))
            {
                continue;
            }
            entries.push(Entry {
                keys: cols.iter().map(|c| c.val_of(i)).collect(),
                seq: base + i as u64,
                row: i as u32,
                cur: true,
            });
            if entries.len() > max {
                return Err(QueryError::BufferLimit(max));
            }
            if entries.len() >= high {
                cut_back(&mut entries, &desc, keep);
                cut = entries
                    .iter()
                    .max_by(|a, b| cmp_entry(a, b, &desc))
                    .map(|e| e.keys.clone());
            }
        }
        drop(cols);
        drop(gs);
        held = Some(settle(held, &ch, &mut entries, &node));
    }
    cut_back(&mut entries, &desc, keep);
    entries.sort_unstable_by(|a, b| cmp_entry(a, b, &desc));
    let Some(h) = held else {
        return Ok(Vec::new());
    };
    let all: Vec<u32> = entries.iter().map(|e| e.row).collect();
    Ok(all.chunks(CHUNK).map(|part| h.gather(part)).collect())
}

/// The best `keep` entries (in no order).
fn cut_back(entries: &mut Vec<Entry>, desc: &[bool], keep: usize) {
    if entries.len() > keep {
        if keep > 0 {
            entries.select_nth_unstable_by(keep - 1, |a, b| cmp_entry(a, b, desc));
        }
        entries.truncate(keep);
    }
}

/// The held chunk after reading `ch`: the rows of `ch` still held gathered onto it, and
/// rows no entry holds any more dropped once they outnumber the held ones.
fn settle(
    held: Option<Chunk>,
    ch: &Chunk,
    entries: &mut [Entry],
    node: &dyn Fn(NodeRef) -> Val,
) -> Chunk {
    let mut h = held.unwrap_or_else(|| Chunk::new(0, ch.cols.len()));
    if h.len > 2 * entries.len() + CHUNK {
        let live: Vec<u32> = entries.iter().filter(|e| !e.cur).map(|e| e.row).collect();
        h = h.gather(&live);
        for (next, e) in (0u32..).zip(entries.iter_mut().filter(|e| !e.cur)) {
            e.row = next;
        }
    }
    let from_ch: Vec<u32> = entries.iter().filter(|e| e.cur).map(|e| e.row).collect();
    if !from_ch.is_empty() {
        for (next, e) in (h.len as u32..).zip(entries.iter_mut().filter(|e| e.cur)) {
            e.row = next;
            e.cur = false;
        }
        let part = ch.gather(&from_ch);
        if h.len == 0 {
            h = part;
        } else {
            h.append(part, node);
        }
    }
    h
}

#[cfg(test)]
pub(in crate::batch) mod tests {
    use crate::model::ModelGraph;
    use crate::{parse, run_read, run_write, Limits, ModelSwitch, Params};

    /// Several chunks of nodes: integers with absent rows and many ties, floats, strings,
    /// datetimes, and a property of mixed types.
    fn graph() -> ModelGraph {
        let create = "UNWIND range(0, 5199) AS i CREATE (:N {i: i, \
             a: CASE WHEN i % 7 = 0 THEN null ELSE (i * 7919) % 113 END, \
             f: CASE WHEN i % 11 = 0 THEN null ELSE toFloat((i * 31) % 37) / 3 END, \
             s: CASE WHEN i % 13 = 0 THEN null ELSE 'n' + toString((i * 17) % 101) END, \
             t: CASE WHEN i % 5 = 0 THEN null ELSE datetime('2024-05-0' + toString(1 + (i * 7) % 9) + 'T10:00:00Z') END, \
             m: CASE i % 4 WHEN 0 THEN i WHEN 1 THEN toString(i) WHEN 2 THEN toFloat(i) / 2 \
                ELSE null END, \
             l: CASE WHEN i % 17 = 0 THEN null \
                ELSE 'a shared prefix past 16 bytes ' + toString((i * 29) % 211) END})";
        made_by(create)
    }

    /// Runs each query on the batch path (checked to run there) and on the row path: the
    /// same rows in the same order.
    pub(in crate::batch) fn same_as_rows(g: &ModelGraph, queries: &[&str]) {
        let batch = ModelSwitch::batch(g).expect("model");
        for q in queries {
            let stmt = parse(q).expect("parses");
            let p = Params::new();
            let l = Limits::default();
            let before = crate::batch::RUNS.with(|r| r.get());
            let b = run_read(&batch, &stmt, &p, &l).expect("batch runs");
            let after = crate::batch::RUNS.with(|r| r.get());
            assert!(
                after.0 > before.0 && after.1 == before.1,
                "{q}: not batched"
            );
            let r = run_read(&ModelSwitch::rows(g), &stmt, &p, &l).expect("rows run");
            assert_eq!(format!("{:?}", b.rows), format!("{:?}", r.rows), "{q}");
        }
    }

    /// A graph made by one write statement.
    pub(in crate::batch) fn made_by(create: &str) -> ModelGraph {
        let mut g = ModelGraph::new();
        run_write(
            &mut g,
            &parse(create).expect("parses"),
            &Params::new(),
            &Limits::default(),
        )
        .expect("creates");
        g
    }

    #[test]
    fn top_k_is_the_row_paths_sort_on_ties_nulls_and_mixed_types() {
        let g = graph();
        same_as_rows(&g, &[
            "MATCH (n:N) RETURN n.i AS i, n.a AS a ORDER BY a LIMIT 7",
            "MATCH (n:N) RETURN n.i AS i, n.a AS a ORDER BY a DESC LIMIT 9",
            "MATCH (n:N) RETURN n.i, n.a ORDER BY n.a DESC, n.s SKIP 40 LIMIT 30",
            "MATCH (n:N) RETURN n.i, n.f ORDER BY n.f, n.i DESC LIMIT 12",
            "MATCH (n:N) RETURN n.i, n.f ORDER BY n.f DESC SKIP 3 LIMIT 5",
            "MATCH (n:N) RETURN n.i, n.s AS s ORDER BY s SKIP 100 LIMIT 10",
            "MATCH (n:N) RETURN n.i, n.s AS s ORDER BY s DESC, n.t LIMIT 300",
            "MATCH (n:N) RETURN n.i, n.t ORDER BY n.t DESC, n.a LIMIT 20",
            "MATCH (n:N) RETURN n.i, n.m ORDER BY n.m LIMIT 15",
            "MATCH (n:N) RETURN n.i, n.m ORDER BY n.m DESC SKIP 5 LIMIT 15",
            "MATCH (n:N) RETURN n.i, n.a * 2 + n.f AS e ORDER BY e DESC, n.i LIMIT 10",
            "MATCH (n:N) RETURN n.i ORDER BY n.a, n.f, n.s LIMIT 5000",
            "MATCH (n:N) RETURN n.i ORDER BY n.a LIMIT 0",
            // Strings tied on their first 16 bytes, nulls, both directions.
            "MATCH (n:N) RETURN n.i, n.l ORDER BY n.l LIMIT 20",
            "MATCH (n:N) RETURN n.i, n.l ORDER BY n.l DESC, n.i SKIP 10 LIMIT 15",
            "MATCH (n:N) RETURN n.i, n.s ORDER BY n.s DESC LIMIT 7",
            "MATCH (n:N) WHERE n.i % 3 = 0 RETURN n.a AS a, count(*) AS k ORDER BY k DESC, a LIMIT 4",
        ]);
    }

    #[test]
    fn top_k_over_an_expansion_prunes_on_the_first_key_only_where_it_may() {
        // One chunk of rows that are no label scan's: later keys read only for rows whose
        // first key may place them; many ties on the first key.
        let g = made_by(
            "UNWIND range(0, 3) AS s CREATE (:S {w: CASE WHEN s = 3 THEN null ELSE s END}) \
             WITH count(*) AS made MATCH (s:S) WITH collect(s) AS stages \
             UNWIND range(0, 1499) AS i WITH stages[i % 4] AS s, i \
             CREATE (o:O {i: i, a: (i * 13) % 7, \
               k: CASE WHEN i % 5 = 0 THEN null ELSE 'k' + toString((i * 7) % 11) END}) \
             CREATE (o)-[:AT]->(s)",
        );
        same_as_rows(
            &g,
            &[
                "MATCH (o:O)-[:AT]->(s:S) RETURN o.i, o.a * s.w AS e ORDER BY e DESC, o.k, o.i LIMIT 25",
                "MATCH (o:O)-[:AT]->(s:S) RETURN o.i ORDER BY s.w, o.k DESC, o.i SKIP 7 LIMIT 30",
                "MATCH (o:O)-[:AT]->(s:S) RETURN o.i ORDER BY o.k LIMIT 40",
                "MATCH (o:O)-[:AT]->(s:S) RETURN o.i ORDER BY s.w DESC LIMIT 3",
                // Projected keys (values, not read in place), input already in the wanted
                // order, ties on the first key kept in input order, SKIP.
                "MATCH (o:O)-[:AT]->(s:S) WITH o.i AS i, o.a AS a RETURN i ORDER BY i DESC LIMIT 5",
                "MATCH (o:O)-[:AT]->(s:S) WITH o.i AS i, o.a AS a RETURN i, a ORDER BY a DESC LIMIT 9",
                "MATCH (o:O)-[:AT]->(s:S) WITH o.i AS i, o.k AS k RETURN i, k ORDER BY k, i DESC SKIP 3 LIMIT 6",
            ],
        );
    }
}
