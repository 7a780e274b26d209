//! Group and DISTINCT keys without values: up to four columns' codes per row
//! (`FastKey`), the index from a key to its group (a table by code for one key, a table of
//! tables for two, a hash beyond) and the hasher behind it.

#[allow(unused_imports)]
use super::*;

/// Up to four key columns' codes (dictionary codes or node references): a row's group or
/// DISTINCT key without building its values, valid while the dictionaries stay the same.
pub(super) type FastKey = [u32; 4];

/// Per key column, its codes (dictionary codes or node references) when every column has
/// them, and each column's dictionary (0 for node references): a row's fast key is its
/// codes (`fast_key`).
pub(super) type FastCodes<'c> = (Vec<std::borrow::Cow<'c, [u32]>>, Vec<usize>);

/// The codes of `cols` (see `FastCodes`), None when a column has none or there are more
/// than four.
pub(super) fn fast_codes<'c>(cols: &[&'c Col], len: usize) -> Option<FastCodes<'c>> {
    if cols.len() > 4 {
        return None;
    }
    let both: Option<Vec<_>> = cols.iter().map(|c| col_codes(c, len)).collect();
    both.map(|v| v.into_iter().unzip())
}

/// One column's codes and what identifies them (its dictionary's address, 0 for node
/// references), None when it has none.
fn col_codes(c: &Col, len: usize) -> Option<(std::borrow::Cow<'_, [u32]>, usize)> {
    use std::borrow::Cow;
    match c {
        Col::Dict { dict, codes } => {
            Some((Cow::Borrowed(codes.as_slice()), Rc::as_ptr(dict) as usize))
        }
        Col::Nodes(v) => Some((Cow::Borrowed(v.as_slice()), 0)),
        // The null node reference: a column of nulls must not meet node 0's key.
        Col::Null => Some((Cow::Owned(vec![NULL; len]), 0)),
        Col::Vals(_) | Col::Rels(_) => None,
    }
}

/// Row `i`'s fast key from `fast_codes`' codes.
#[inline]
pub(super) fn fast_key(codes: &[std::borrow::Cow<'_, [u32]>], i: usize) -> FastKey {
    let mut k = [0u32; 4];
    for (x, c) in k.iter_mut().zip(codes) {
        *x = c[i];
    }
    k
}

/// A cache from fast keys to an index (a group, a seen flag), dropped when the key columns'
/// dictionaries change. One key: a table indexed by its code (codes and node references are
/// small dense integers); several: a hash map with a cheap hash.
#[derive(Default)]
pub(in crate::batch) struct FastIndex {
    dicts: Vec<usize>,
    /// One key: per code from `one_base` on, its index + 1 (0: none). Kept within a few
    /// cells per entry (node references of one label start anywhere in the model), the
    /// keys beyond go to `map`.
    one: Vec<u32>,
    one_base: u32,
    /// Two keys: per first code, a table by the second (cells bounded by `TWO_CELLS`).
    two: Vec<Vec<u32>>,
    two_cells: usize,
    map: HashMap<FastKey, usize, Fx>,
    /// Entries inserted since the last reset, and whether it was ever reset after one.
    entries: usize,
    lost: bool,
}

/// Hash maps keyed by the executor's own keys use `FxHasher`.
pub(in crate::batch) type Fx = std::hash::BuildHasherDefault<FxHasher>;

/// Most entries of the one-key table (beyond, the hash map serves).
pub(super) const TABLE_MAX: u32 = 1 << 24;

/// Most cells of the two-key tables together (beyond, the hash map serves).
const TWO_CELLS: usize = 1 << 20;

impl FastIndex {
    pub(super) fn reset_if_changed(&mut self, dicts: &[usize]) {
        if self.dicts != dicts {
            self.dicts = dicts.to_vec();
            self.one.clear();
            self.one_base = 0;
            self.two.clear();
            self.two_cells = 0;
            self.map.clear();
            self.lost |= self.entries > 0;
            self.entries = 0;
        }
    }

    /// Whether it holds an entry for each of the `groups` made so far (each group was
    /// inserted once, and nothing was dropped): a key it lacks is then a new group.
    pub(super) fn complete(&self, groups: usize) -> bool {
        !self.lost && self.entries == groups
    }

    #[inline(always)]
    pub(super) fn get(&self, k: &FastKey) -> Option<usize> {
        if self.dicts.len() == 1 {
            if let Some(&g) = self.one.get(k[0].wrapping_sub(self.one_base) as usize) {
                if g != 0 {
                    return Some(g as usize - 1);
                }
            }
            if self.map.is_empty() {
                return None;
            }
        }
        if self.dicts.len() == 2 {
            if let Some(g) = self
                .two
                .get(k[0] as usize)
                .and_then(|t| t.get(k[1] as usize))
            {
                if *g != 0 {
                    return Some(*g as usize - 1);
                }
            }
            if self.map.is_empty() {
                return None;
            }
        }
        self.map.get(k).copied()
    }

    #[inline(always)]
    pub(super) fn insert(&mut self, k: FastKey, v: usize) {
        self.entries += 1;
        if self.dicts.len() == 1 && k[0] < TABLE_MAX {
            if let Some(i) = self.one_cell(k[0]) {
                self.one[i] = v as u32 + 1;
                return;
            }
        }
        if self.dicts.len() == 2 && k[0] < TABLE_MAX && k[1] < TABLE_MAX {
            let (a, b) = (k[0] as usize, k[1] as usize);
            let grow_rows = (a + 1).saturating_sub(self.two.len());
            let grow_cells = self
                .two
                .get(a)
                .map_or(b + 1, |t| (b + 1).saturating_sub(t.len()));
            // Bounded like the one-key table, by the entries made: a first code far up (a
            // number key's class code, a node reference) would otherwise make a table of
            // empty rows as long as the code, again after each reset.
            let bound = TWO_CELLS.min(ONE_MIN.max(ONE_PER_ENTRY * self.entries));
            if self.two_cells + grow_rows + grow_cells <= bound {
                if grow_rows > 0 {
                    self.two.resize(a + 1, Vec::new());
                    self.two_cells += grow_rows;
                }
                let t = &mut self.two[a];
                if t.len() <= b {
                    t.resize(b + 1, 0);
                    self.two_cells += grow_cells;
                }
                t[b] = v as u32 + 1;
                return;
            }
        }
        self.map.insert(k, v);
    }
}

impl FastIndex {
    /// The cell of `key` in the one-key table, grown to take it when that keeps the table
    /// within `ONE_PER_ENTRY` cells per entry (or `ONE_MIN`); None: the key goes to the map.
    fn one_cell(&mut self, key: u32) -> Option<usize> {
        let bound = ONE_MIN.max(ONE_PER_ENTRY * self.entries);
        if self.one.is_empty() {
            self.one_base = key & !(ONE_ALIGN - 1);
        }
        let (base, len) = (self.one_base as usize, self.one.len());
        let key = key as usize;
        if key >= base && key < base + len {
            return Some(key - base);
        }
        if key >= base {
            let need = key - base + 1;
            if need > bound {
                return None;
            }
            self.one.resize(need.max(len * 2).min(bound), 0);
            return Some(key - base);
        }
        // Below the base: the table moves down (its cells shift up).
        let new_base = key & !(ONE_ALIGN as usize - 1);
        let shift = base - new_base;
        if len + shift > bound {
            return None;
        }
        let mut grown = vec![0u32; shift];
        grown.extend_from_slice(&self.one);
        self.one = grown;
        self.one_base = new_base as u32;
        Some(key - new_base)
    }
}

/// The one-key table's size: at least `ONE_MIN` cells, else `ONE_PER_ENTRY` per entry.
const ONE_MIN: usize = 1 << 12;
const ONE_PER_ENTRY: usize = 8;
/// The one-key table's base is a multiple of this.
const ONE_ALIGN: u32 = 1 << 10;

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

/// Codes for a key column of numbers, datetimes and nulls (which have no dictionary): one
/// per class of values equal for grouping, as `write_key` makes them (an integral float is
/// its integer, every NaN one value), kept across chunks.
#[derive(Default)]
pub(super) struct NumCoder {
    map: HashMap<(u8, u64), u32, Fx>,
}

/// The grouping class of a number, datetime or null (`write_key`'s tag and payload); None
/// for other values.
#[inline]
pub(super) fn num_class(v: &Val) -> Option<(u8, u64)> {
    Some(match v {
        Val::Null => (0, 0),
        Val::Int(i) => (2, *i as u64),
        Val::Float(f) if f.fract() == 0.0 && *f >= -9.2e18 && *f <= 9.2e18 => {
            (2, (*f as i64) as u64)
        }
        Val::Float(f) if f.is_nan() => (3, f64::NAN.to_bits()),
        Val::Float(f) => (3, f.to_bits()),
        Val::DateTime(t) => (5, *t as u64),
        _ => return None,
    })
}

impl NumCoder {
    /// Each value's code; None when one is not a number, datetime or null (or the codes
    /// would run out).
    pub(super) fn codes(&mut self, vals: &[Val]) -> Option<Vec<u32>> {
        let mut out = Vec::with_capacity(vals.len());
        for v in vals {
            let k = num_class(v)?;
            let n = u32::try_from(self.map.len())
                .ok()
                .filter(|n| *n < TABLE_MAX)?;
            out.push(*self.map.entry(k).or_insert(n));
        }
        Some(out)
    }

    /// What identifies its codes to `FastIndex::reset_if_changed` (no dictionary's address).
    pub(super) fn id(&self) -> usize {
        self as *const NumCoder as usize
    }
}

/// One grouping key's column for a chunk, with codes for the fast index where it has them.
pub(super) enum KeyCol<'m> {
    /// Evaluated; codes (and their dictionary's id) for a column of numbers.
    Col(Col, Option<(Vec<u32>, usize)>),
    /// `n.key` of base nodes in one string column of the model: the column's own codes
    /// (`NO_CODE`: null), no value built but a new group's.
    Model(Vec<u32>, &'m [String]),
}

impl<'m> KeyCol<'m> {
    /// Row `i`'s value.
    pub(super) fn val(&self, bx: &Bx<'_, '_>, i: usize) -> Val {
        match self {
            KeyCol::Col(c, _) => cell(bx, c, i),
            KeyCol::Model(codes, dict) => match codes[i] {
                svc_engine::NO_CODE => Val::Null,
                c => dict
                    .get(c as usize)
                    .map_or(Val::Null, |s| Val::Str(s.clone())),
            },
        }
    }

    /// The codes of `n.key` for `refs` from one string column of the model, when every
    /// node that has a value has it there (the same column for all: then the column's codes
    /// are a grouping key, equal strings sharing a code).
    pub(super) fn model(bx: &Bx<'m, '_>, refs: &[NodeRef], key: &str) -> Option<KeyCol<'m>> {
        use crate::batch::expr::{Found, PropReader};
        // A label scan's chunk: consecutive rows of the column.
        if let Some((ColumnView::Strings { codes, dict }, row0)) =
            crate::batch::ops::column_in_place(bx, refs, key)
        {
            let codes = codes.get(row0..row0 + refs.len())?;
            return Some(KeyCol::Model(codes.to_vec(), dict));
        }
        let mut reader = PropReader::new(key);
        let mut codes = Vec::with_capacity(refs.len());
        let mut column: Option<(&'m [u32], &'m [String])> = None;
        // Nodes of the first one's label are read by their row in its column (a popcount),
        // the others located one by one.
        let fast = match crate::batch::ops::first_label_column(bx, refs, key) {
            Some((label, ColumnView::Strings { codes: sc, dict }, n)) => {
                column = Some((sc, dict));
                Some((label, sc, n))
            }
            _ => None,
        };
        // The near side of an expansion repeats each node over a run of rows: read once.
        let mut last = (NULL, svc_engine::NO_CODE);
        for r in refs {
            if *r == NULL {
                codes.push(svc_engine::NO_CODE);
                continue;
            }
            if *r == last.0 {
                codes.push(last.1);
                continue;
            }
            if let Some((label, sc, n)) = &fast {
                if let Some(row) = label.row_of(*r).filter(|_| *r < *n) {
                    let code = *sc.get(row)?;
                    last = (*r, code);
                    codes.push(code);
                    continue;
                }
            }
            let code = match reader.locate(bx, *r) {
                Found::Column(_, ColumnView::Strings { codes: sc, dict }, row) => {
                    match column {
                        None => column = Some((sc, dict)),
                        Some((c0, _)) if std::ptr::eq(c0, sc) => {}
                        Some(_) => return None,
                    }
                    *sc.get(row)?
                }
                Found::Absent => svc_engine::NO_CODE,
                _ => return None,
            };
            last = (*r, code);
            codes.push(code);
        }
        Some(KeyCol::Model(codes, column.map_or(&[][..], |(_, d)| d)))
    }
}

/// The fast codes of key columns (see `fast_codes`).
pub(super) fn key_codes<'c>(cols: &'c [KeyCol<'_>], len: usize) -> Option<FastCodes<'c>> {
    use std::borrow::Cow;
    if cols.len() > 4 {
        return None;
    }
    let both: Option<Vec<_>> = cols
        .iter()
        .map(|c| match c {
            KeyCol::Col(_, Some((cs, id))) => Some((Cow::Borrowed(cs.as_slice()), *id)),
            KeyCol::Col(c, None) => col_codes(c, len),
            // The column's dictionary (an empty one: every row null, the same for all); odd,
            // so never an `Rc`'s or a coder's address.
            KeyCol::Model(cs, dict) => {
                Some((Cow::Borrowed(cs.as_slice()), dict.as_ptr() as usize | 1))
            }
        })
        .collect();
    both.map(|v| v.into_iter().unzip())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_classes_are_the_byte_keys_classes() {
        let vals = [
            Val::Null,
            Val::Int(0),
            Val::Int(1),
            Val::Int(-1),
            Val::Int(i64::MAX),
            Val::Int(i64::MIN),
            Val::Int(9_200_000_000_000_000_000),
            Val::Float(0.0),
            Val::Float(-0.0),
            Val::Float(1.0),
            Val::Float(-1.0),
            Val::Float(0.5),
            Val::Float(f64::NAN),
            Val::Float(-f64::NAN),
            Val::Float(f64::INFINITY),
            Val::Float(f64::NEG_INFINITY),
            Val::Float(9.2e18),
            Val::Float(9.3e18),
            Val::Float(-9.2e18),
            Val::Float(1e300),
            Val::DateTime(0),
            Val::DateTime(1),
            Val::DateTime(-5),
        ];
        let key = |v: &Val| {
            let mut k = Vec::new();
            write_key(v, &mut k);
            k
        };
        for a in &vals {
            for b in &vals {
                assert_eq!(
                    num_class(a) == num_class(b),
                    key(a) == key(b),
                    "{a:?} and {b:?}"
                );
            }
        }
        assert!(num_class(&Val::Str("1".into())).is_none());
        let mut coder = NumCoder::default();
        let codes = coder
            .codes(&[Val::Int(1), Val::Float(1.0), Val::Float(-0.0), Val::Int(0)])
            .expect("numbers");
        assert_eq!(codes, vec![0, 0, 1, 1]);
        assert!(coder.codes(&[Val::Int(1), Val::Bool(true)]).is_none());
    }

    #[test]
    fn the_one_key_table_answers_as_a_map_for_sparse_keys() {
        let mut fast = FastIndex::default();
        fast.reset_if_changed(&[0]);
        let mut want: HashMap<u32, usize> = HashMap::new();
        // Clustered keys far from 0, keys below the first, scattered ones, the null reference
        // and keys past the table's limit.
        let mut keys: Vec<u32> = (500_000..503_000).step_by(3).collect();
        keys.extend([
            499_000,
            10,
            400_000,
            3_000_000,
            NULL,
            TABLE_MAX + 5,
            501_001,
        ]);
        keys.extend((0..2000u32).map(|i| i.wrapping_mul(2_654_435_761) % 5_000_000));
        for (g, k) in keys.iter().enumerate() {
            if fast.get(&[*k, 0, 0, 0]).is_none() {
                fast.insert([*k, 0, 0, 0], g);
                want.insert(*k, g);
            }
        }
        for k in keys.iter().chain(&[1, 499_999, 503_001, 4_999_999]) {
            assert_eq!(fast.get(&[*k, 0, 0, 0]), want.get(k).copied(), "key {k}");
        }
        // A few cells per entry at most, whatever the keys' spread.
        assert!(fast.one.len() <= ONE_MIN.max(ONE_PER_ENTRY * fast.entries));
    }
}
