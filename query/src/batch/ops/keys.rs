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
    use std::borrow::Cow;
    if cols.len() > 4 {
        return None;
    }
    let mut codes = Vec::with_capacity(cols.len());
    let mut dicts = Vec::with_capacity(cols.len());
    for c in cols {
        match c {
            Col::Dict { dict, codes: cs } => {
                dicts.push(Rc::as_ptr(dict) as usize);
                codes.push(Cow::Borrowed(cs.as_slice()));
            }
            Col::Nodes(v) => {
                dicts.push(0);
                codes.push(Cow::Borrowed(v.as_slice()));
            }
            // The null node reference: a column of nulls must not meet node 0's key.
            Col::Null => {
                dicts.push(0);
                codes.push(Cow::Owned(vec![NULL; len]));
            }
            Col::Vals(_) | Col::Rels(_) => return None,
        }
    }
    Some((codes, dicts))
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
    one: Vec<u32>,
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
        if self.dicts.len() == 1 && k[0] < TABLE_MAX {
            return match self.one.get(k[0] as usize) {
                Some(0) | None => None,
                Some(g) => Some(*g as usize - 1),
            };
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
            let i = k[0] as usize;
            if self.one.len() <= i {
                self.one.resize((i + 1).max(self.one.len() * 2), 0);
            }
            self.one[i] = v as u32 + 1;
            return;
        }
        if self.dicts.len() == 2 && k[0] < TABLE_MAX && k[1] < TABLE_MAX {
            let (a, b) = (k[0] as usize, k[1] as usize);
            let grow_rows = (a + 1).saturating_sub(self.two.len());
            let grow_cells = self
                .two
                .get(a)
                .map_or(b + 1, |t| (b + 1).saturating_sub(t.len()));
            if self.two_cells + grow_rows + grow_cells <= TWO_CELLS {
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
