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

/// One key's values for one chunk.
pub(super) struct KeyCol<'x> {
    pub(super) keys: Vec<K<'x>>,
    owned: Vec<Val>,
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

    /// ORDER BY's order (`value::order`) of row `i` against a value.
    #[inline]
    pub(super) fn cmp_val(&self, i: usize, v: &Val) -> Ordering {
        match (self.keys[i], v) {
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

    /// ORDER BY's order of rows `i` and `j`.
    #[inline]
    pub(super) fn cmp_rows(&self, i: usize, j: usize) -> Ordering {
        match (self.keys[i], self.keys[j]) {
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
) -> Result<Vec<KeyCol<'x>>, QueryError> {
    let mut out = Vec::with_capacity(keys.len());
    for (((e, _), src), guard) in keys.iter().zip(sources).zip(guards) {
        let mut kc = KeyCol {
            keys: Vec::with_capacity(ch.len),
            owned: Vec::new(),
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
                        kc.keys
                            .extend((0..refs.len()).map(|i| K::of_column(&c, row0 + i)));
                        out.push(kc);
                        continue;
                    }
                    _ => {}
                }
                let mut reader = PropReader::new(key);
                for &r in refs {
                    let k = if r == NULL {
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
    Ok(out)
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

/// Whether row `i` of `cols` sorts strictly before the key `cut` (directions `desc`).
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

/// Row order within one chunk (ties keep input order: the sort is stable).
fn cmp_in_chunk(cols: &[KeyCol<'_>], desc: &[bool], i: usize, j: usize) -> Ordering {
    for (c, d) in cols.iter().zip(desc) {
        let o = c.cmp_rows(i, j);
        let o = if *d { o.reverse() } else { o };
        if o.is_ne() {
            return o;
        }
    }
    Ordering::Equal
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

/// The best `keep` rows of the input, in order.
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
    let mut held_keys: Vec<Vec<Val>> = Vec::new();
    let mut cut: Option<Vec<Val>> = None;
    let max = bx.cx.limits.max_buffered_rows;
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
        let cols = key_cols(bx, keys, &sources, &gs, &ch)?;
        let mut idx: Vec<u32> = match &cut {
            Some(cut) => (0..ch.len)
                .filter(|i| before_cut(&cols, &desc, *i, cut))
                .map(|i| i as u32)
                .collect(),
            None => (0..ch.len as u32).collect(),
        };
        if idx.is_empty() {
            continue;
        }
        if idx.len() > keep {
            // The best `keep` in linear time; the row number breaks ties (as a stable sort).
            let by = |a: &u32, b: &u32| {
                cmp_in_chunk(&cols, &desc, *a as usize, *b as usize).then(a.cmp(b))
            };
            idx.select_nth_unstable_by(keep - 1, by);
            idx.truncate(keep);
            // Back to input order, so held rows stay in input order among equals.
            idx.sort_unstable();
        }
        for i in &idx {
            held_keys.push(cols.iter().map(|c| c.val(c.keys[*i as usize])).collect());
        }
        let part = ch.gather(&idx);
        drop(cols);
        drop(gs);
        match &mut held {
            None => held = Some(part),
            Some(h) => h.append(part, &node),
        }
        if held_keys.len() > max {
            return Err(QueryError::BufferLimit(max));
        }
        if held_keys.len() >= keep && (cut.is_none() || held_keys.len() >= keep.saturating_mul(2)) {
            let (h, k) = compact(held.take(), std::mem::take(&mut held_keys), &desc, keep);
            cut = k.last().cloned();
            held = h;
            held_keys = k;
        }
    }
    let (held, _) = compact(held, held_keys, &desc, keep);
    let Some(h) = held else {
        return Ok(Vec::new());
    };
    let all: Vec<u32> = (0..h.len as u32).collect();
    Ok(all.chunks(CHUNK).map(|part| h.gather(part)).collect())
}

/// The held rows sorted (stably) and cut to `keep`.
fn compact(
    held: Option<Chunk>,
    keys: Vec<Vec<Val>>,
    desc: &[bool],
    keep: usize,
) -> (Option<Chunk>, Vec<Vec<Val>>) {
    let Some(h) = held else {
        return (None, keys);
    };
    let mut idx: Vec<u32> = (0..keys.len() as u32).collect();
    idx.sort_by(|a, b| cmp_held(&keys[*a as usize], &keys[*b as usize], desc));
    idx.truncate(keep);
    let kept_keys = idx.iter().map(|i| keys[*i as usize].clone()).collect();
    (Some(h.gather(&idx)), kept_keys)
}
