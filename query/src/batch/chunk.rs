//! Chunks: a few thousand rows held column by column, and the column kinds.
//!
//! - `Nodes`: node references (`NodeRef`): a base node's dense index, or past the base's end an
//!   index into the query's table of other nodes (created after the model was built); `NULL`.
//! - `Dict`: codes into an append-only dictionary of distinct values shared by every chunk an
//!   expression produces (a string property stays a `u32` through grouping, DISTINCT and
//!   sorting; the value is cloned only for output).
//! - `Vals`: any values.
//! - `Null`: a slot no operator has set (every row null).

use std::cell::{Ref, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

use svc_engine::EdgeId;

use crate::value::{order, write_key, Val};

/// A node reference (see the module doc).
pub(super) type NodeRef = u32;
/// The null node reference.
pub(super) const NULL: NodeRef = u32::MAX;
/// Rows per chunk produced by scans.
pub(super) const CHUNK: usize = 2048;

/// Distinct values by code, appended to as expressions meet new ones.
#[derive(Debug, Default)]
pub(super) struct Dict {
    vals: RefCell<Vec<Val>>,
    index: RefCell<HashMap<Vec<u8>, u32, super::ops::Fx>>,
    /// Codes of null, false and true once met (predicates give little else).
    small: std::cell::Cell<[u32; 3]>,
    /// Codes of strings by the string's hash, so that a string is held once (in `vals`):
    /// the last code of that hash, the others chained through `chain`.
    strs: RefCell<HashMap<u64, u32, super::ops::Fx>>,
    /// Per code, the previous code whose string has the same hash (`NO_LINK`: none).
    chain: RefCell<Vec<u32>>,
}

/// The end of a chain of codes in `Dict::chain`.
const NO_LINK: u32 = u32::MAX;

impl Dict {
    /// The code of `v` (added when new). Values equal for grouping share a code.
    pub(super) fn code(&self, v: Val) -> u32 {
        let slot = match v {
            Val::Null => Some(0),
            Val::Bool(b) => Some(1 + usize::from(b)),
            Val::Str(s) => return self.code_str(s),
            _ => None,
        };
        if let Some(i) = slot {
            let mut small = self.small.get();
            if small[i] == 0 {
                small[i] = self.code_slow(v) + 1;
                self.small.set(small);
            }
            return small[i] - 1;
        }
        self.code_slow(v)
    }

    fn code_str(&self, s: String) -> u32 {
        use std::hash::BuildHasher;
        let h = super::ops::Fx::default().hash_one(s.as_str());
        self.code_hashed(s, h)
    }

    /// `code_str` of a borrowed string: copied only when it is new to the dictionary.
    pub(super) fn code_of_str(&self, s: &str) -> u32 {
        use std::hash::BuildHasher;
        let h = super::ops::Fx::default().hash_one(s);
        self.find_str(s, h)
            .unwrap_or_else(|| self.insert_str(s.to_owned(), h))
    }

    /// The code of string `s` of hash `h`, if the dictionary holds it.
    fn find_str(&self, s: &str, h: u64) -> Option<u32> {
        let head = self.strs.borrow().get(&h).copied()?;
        let (vals, chain) = (self.vals.borrow(), self.chain.borrow());
        let mut c = head;
        while c != NO_LINK {
            if matches!(vals.get(c as usize), Some(Val::Str(t)) if t == s) {
                return Some(c);
            }
            c = chain.get(c as usize).copied().unwrap_or(NO_LINK);
        }
        None
    }

    /// `code_str` with the string's hash `h` given.
    fn code_hashed(&self, s: String, h: u64) -> u32 {
        match self.find_str(&s, h) {
            Some(c) => c,
            None => self.insert_str(s, h),
        }
    }

    /// Appends string `s` of hash `h`, which the dictionary does not hold yet.
    fn insert_str(&self, s: String, h: u64) -> u32 {
        let head = self.strs.borrow().get(&h).copied();
        let mut vals = self.vals.borrow_mut();
        let c = vals.len() as u32;
        vals.push(Val::Str(s));
        let mut chain = self.chain.borrow_mut();
        chain.resize(vals.len(), NO_LINK);
        chain[c as usize] = head.unwrap_or(NO_LINK);
        self.strs.borrow_mut().insert(h, c);
        c
    }

    fn code_slow(&self, v: Val) -> u32 {
        let mut key = Vec::new();
        write_key(&v, &mut key);
        if let Some(c) = self.index.borrow().get(&key) {
            return *c;
        }
        let mut vals = self.vals.borrow_mut();
        let c = vals.len() as u32;
        vals.push(v);
        self.index.borrow_mut().insert(key, c);
        c
    }

    /// Room for `n` more strings (a chunk of distinct ones grows nothing on the way).
    pub(super) fn reserve(&self, n: usize) {
        self.vals.borrow_mut().reserve(n);
        self.chain.borrow_mut().reserve(n);
        self.strs.borrow_mut().reserve(n);
    }

    /// Per code, its rank in ORDER BY's order (`value::order`) among the codes `codes` uses
    /// (equal values share a rank; codes not used rank 0): a sort of the distinct values only.
    pub(super) fn ranks(&self, codes: &[u32]) -> Vec<u32> {
        let vals = self.vals.borrow();
        let mut present = vec![false; vals.len()];
        codes.iter().for_each(|c| present[*c as usize] = true);
        let mut by: Vec<u32> = (0..vals.len() as u32)
            .filter(|c| present[*c as usize])
            .collect();
        let val = |c: &u32| &vals[*c as usize];
        let mut rank = vec![0u32; vals.len()];
        let strs: Option<Vec<&str>> = by
            .iter()
            .map(|c| match val(c) {
                Val::Str(s) => Some(s.as_str()),
                _ => None,
            })
            .collect();
        if let Some(strs) = strs {
            // Strings only (`order` of two strings is their byte order); a string has one
            // code, so every rank is distinct.
            let mut pairs: Vec<(&str, u32)> = strs.into_iter().zip(by).collect();
            pairs.sort_unstable_by(|a, b| a.0.cmp(b.0));
            for (r, (_, c)) in pairs.iter().enumerate() {
                rank[*c as usize] = r as u32;
            }
            return rank;
        }
        by.sort_unstable_by(|a, b| order(val(a), val(b)));
        let mut r = 0u32;
        for (i, c) in by.iter().enumerate() {
            if i > 0 && order(val(&by[i - 1]), val(c)).is_ne() {
                r += 1;
            }
            rank[*c as usize] = r;
        }
        rank
    }

    /// Distinct values held.
    pub(super) fn len(&self) -> usize {
        self.vals.borrow().len()
    }

    pub(super) fn vals(&self) -> Ref<'_, Vec<Val>> {
        self.vals.borrow()
    }

    pub(super) fn get(&self, code: u32) -> Val {
        self.vals
            .borrow()
            .get(code as usize)
            .cloned()
            .unwrap_or(Val::Null)
    }
}

#[derive(Clone, Debug)]
pub(super) enum Col {
    Null,
    Nodes(Vec<NodeRef>),
    Dict {
        codes: Vec<u32>,
        dict: Rc<Dict>,
    },
    Vals(Vec<Val>),
    /// Relationship ids (an expansion's bound relationships: never null), no value per row.
    Rels(Vec<u64>),
}

impl Col {
    /// The rows `idx` of the column, in that order.
    pub(super) fn gather(&self, idx: &[u32]) -> Col {
        match self {
            Col::Null => Col::Null,
            Col::Nodes(v) => Col::Nodes(idx.iter().map(|i| v[*i as usize]).collect()),
            Col::Dict { codes, dict } => Col::Dict {
                codes: idx.iter().map(|i| codes[*i as usize]).collect(),
                dict: Rc::clone(dict),
            },
            Col::Vals(v) => Col::Vals(idx.iter().map(|i| v[*i as usize].clone()).collect()),
            Col::Rels(v) => Col::Rels(idx.iter().map(|i| v[*i as usize]).collect()),
        }
    }

    /// Appends `other`'s rows (`len_self` rows before, `len_other` in `other`); `node`
    /// resolves node references when the kinds differ and the result must hold values.
    pub(super) fn append(
        &mut self,
        other: Col,
        len_self: usize,
        len_other: usize,
        node: &dyn Fn(NodeRef) -> Val,
    ) {
        match (&mut *self, other) {
            (Col::Null, Col::Null) => {}
            (Col::Nodes(a), Col::Nodes(b)) => a.extend(b),
            (Col::Nodes(a), Col::Null) => a.extend(std::iter::repeat_n(NULL, len_other)),
            (Col::Null, Col::Nodes(b)) => {
                let mut a = vec![NULL; len_self];
                a.extend(b);
                *self = Col::Nodes(a);
            }
            (Col::Dict { codes: a, dict: da }, Col::Dict { codes: b, dict: db })
                if Rc::ptr_eq(da, &db) =>
            {
                a.extend(b)
            }
            (Col::Dict { codes, dict }, Col::Null) => {
                let null = dict.code(Val::Null);
                codes.extend(std::iter::repeat_n(null, len_other));
            }
            (Col::Null, Col::Dict { codes: b, dict }) => {
                let mut codes = vec![dict.code(Val::Null); len_self];
                codes.extend(b);
                *self = Col::Dict { codes, dict };
            }
            (Col::Vals(a), Col::Vals(b)) => a.extend(b),
            (Col::Rels(a), Col::Rels(b)) => a.extend(b),
            (_, other) => {
                let mut vals = self.to_vals_with(len_self, node);
                vals.extend(other.to_vals_with(len_other, node));
                *self = Col::Vals(vals);
            }
        }
    }

    /// Every row as a value (`node` resolves node references).
    pub(super) fn to_vals_with(&self, len: usize, node: &dyn Fn(NodeRef) -> Val) -> Vec<Val> {
        match self {
            Col::Null => vec![Val::Null; len],
            Col::Nodes(v) => v.iter().map(|r| node(*r)).collect(),
            Col::Dict { codes, dict } => {
                let vals = dict.vals();
                codes.iter().map(|c| vals[*c as usize].clone()).collect()
            }
            Col::Vals(v) => v.clone(),
            Col::Rels(v) => v.iter().map(|e| Val::Rel(EdgeId(*e))).collect(),
        }
    }
}

/// Rows held by column; `cols` is indexed by slot.
#[derive(Clone, Debug)]
pub(super) struct Chunk {
    pub(super) len: usize,
    pub(super) cols: Vec<Col>,
}

impl Chunk {
    pub(super) fn new(len: usize, width: usize) -> Chunk {
        Chunk {
            len,
            cols: vec![Col::Null; width],
        }
    }

    pub(super) fn gather(&self, idx: &[u32]) -> Chunk {
        Chunk {
            len: idx.len(),
            cols: self.cols.iter().map(|c| c.gather(idx)).collect(),
        }
    }

    /// Rows whose `keep` is set, in order.
    pub(super) fn select(self, keep: &[bool]) -> Chunk {
        if keep.iter().all(|k| *k) {
            return self;
        }
        // Branch-free: every row is written, only the kept ones advance (a filter keeps an
        // unpredictable half of the rows as often as not).
        let mut idx = vec![0u32; keep.len()];
        let mut n = 0usize;
        for (i, k) in keep.iter().enumerate() {
            idx[n] = i as u32;
            n += usize::from(*k);
        }
        idx.truncate(n);
        self.gather(&idx)
    }

    /// Appends another chunk's rows.
    pub(super) fn append(&mut self, other: Chunk, node: &dyn Fn(NodeRef) -> Val) {
        let (a, b) = (self.len, other.len);
        for (c, o) in self.cols.iter_mut().zip(other.cols) {
            c.append(o, a, b, node);
        }
        self.len += b;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Equal values share a code, different ones never do, whatever kinds are interleaved;
    /// the value of a code is the one coded.
    #[test]
    fn codes_are_one_per_distinct_value() {
        let d = Dict::default();
        let mut vals: Vec<Val> = Vec::new();
        for i in 0..2000 {
            vals.push(Val::Str(format!("s{}", i % 700)));
            vals.push(Val::Int(i % 50));
            if i % 7 == 0 {
                vals.push(Val::Null);
                vals.push(Val::Bool(i % 2 == 0));
                vals.push(Val::Str(String::new()));
            }
        }
        let mut seen: HashMap<Vec<u8>, u32> = HashMap::new();
        for v in vals {
            let c = d.code(v.clone());
            assert_eq!(d.get(c), v);
            let mut k = Vec::new();
            write_key(&v, &mut k);
            assert_eq!(*seen.entry(k).or_insert(c), c, "{v:?}");
        }
        // Every code is a distinct value.
        assert_eq!(seen.len(), d.vals().len());
    }

    /// Strings whose hashes collide still get a code each (the chain is walked to its end).
    #[test]
    fn colliding_hashes_are_chained() {
        let d = Dict::default();
        let a = d.code_hashed("a".into(), 7);
        let n = d.code(Val::Int(1));
        let b = d.code_hashed("b".into(), 7);
        let c = d.code_hashed("c".into(), 7);
        assert_eq!(
            [a, b, c].map(|x| d.get(x)),
            ["a", "b", "c"].map(|s| Val::Str(s.into()))
        );
        assert!(a != b && b != c && a != c && n != a);
        for (s, x) in [("a", a), ("b", b), ("c", c)] {
            assert_eq!(d.code_hashed(s.into(), 7), x);
        }
        assert_eq!(d.vals().len(), 4);
    }

    /// Ranks order the used codes as `value::order` orders their values, strings alone and
    /// mixed with other kinds; codes not used do not count.
    #[test]
    fn ranks_are_orders_order() {
        let strs = ["b", "a", "", "ab", "Ä", "a\u{0}", "B", "aa"];
        let mixed = [
            Val::Int(1),
            Val::Float(1.0),
            Val::Null,
            Val::Str("x".into()),
            Val::Bool(true),
            Val::Float(-0.5),
            Val::List(vec![Val::Int(1)]),
        ];
        let only_strings: Vec<Val> = strs.iter().map(|s| Val::Str((*s).into())).collect();
        let mut all = only_strings.clone();
        all.extend(mixed);
        for vals in [only_strings, all] {
            let d = Dict::default();
            let codes: Vec<u32> = vals.iter().map(|v| d.code(v.clone())).collect();
            // One value coded but not used by the rows ranked.
            d.code(Val::Str("unused".into()));
            let used = &codes[1..];
            let rank = d.ranks(used);
            for a in used {
                for b in used {
                    let (x, y) = (d.get(*a), d.get(*b));
                    assert_eq!(
                        rank[*a as usize].cmp(&rank[*b as usize]),
                        order(&x, &y),
                        "{x:?} vs {y:?}"
                    );
                }
            }
        }
    }
}
