//! One property of one label as a column aligned with the label's rows: strings dictionary-
//! encoded, integers / datetimes / floats unboxed, anything else (mixed types, booleans, lists)
//! kept as values. A test (`n.key <op> constant`) is prepared once per column so that the
//! per-row work is an integer or float comparison.
//!
//! Built with each column (the base never changes, later writes go to the delta):
//! - number and datetime columns keep their present rows sorted by value (`sorted`), so a range
//!   test is two binary searches: a count of a range is `hi - lo`, a range filter visits only
//!   the rows inside;
//! - string columns keep their dictionary concatenated (`DictText`), so a substring test runs
//!   one vectorised search over every distinct string instead of one search per string.

#[cfg(feature = "storage")]
use std::cmp::Ordering;
use std::collections::HashMap;
#[cfg(feature = "storage")]
use std::ops::Range;

use roaring::RoaringBitmap;

use crate::model::Value;
#[cfg(feature = "storage")]
use crate::read::{compare_values, Comparison, PropertyTest};

/// Code of an absent string.
pub const NO_CODE: u32 = u32::MAX;

#[derive(Debug)]
pub(crate) enum Column {
    /// Every present value is a string.
    Strings {
        codes: Vec<u32>,
        dict: Vec<String>,
        text: DictText,
    },
    /// Every present value is an integer (`datetime`: a datetime); `absent` lists the rows
    /// without a value; `sorted` the others by value (then row).
    Integers {
        values: Vec<i64>,
        absent: RoaringBitmap,
        datetime: bool,
        sorted: Vec<u32>,
    },
    /// Every present value is a float other than NaN; NaN marks an absent value; `sorted`
    /// lists the present rows by value (then row).
    Floats { values: Vec<f64>, sorted: Vec<u32> },
    /// Anything else.
    Values(Vec<Option<Value>>),
}

impl Column {
    /// A column of `rows` rows from its present values (row, value), rows ascending.
    pub fn build(rows: usize, present: Vec<(u32, Value)>) -> Column {
        let all = |f: fn(&Value) -> bool| present.iter().all(|(_, v)| f(v));
        if all(|v| matches!(v, Value::String(_))) {
            let mut codes = vec![NO_CODE; rows];
            let mut dict = Vec::new();
            let mut index: HashMap<String, u32> = HashMap::new();
            for (row, v) in present {
                let Value::String(s) = v else { continue };
                let next = dict.len() as u32;
                let code = *index.entry(s).or_insert_with_key(|s| {
                    dict.push(s.clone());
                    next
                });
                codes[row as usize] = code;
            }
            let text = DictText::new(&dict);
            return Column::Strings { codes, dict, text };
        }
        let ints = all(|v| matches!(v, Value::Int(_)));
        let datetimes = all(|v| matches!(v, Value::DateTime(_)));
        if ints || datetimes {
            let mut values = vec![0; rows];
            let mut absent: RoaringBitmap = (0..rows as u32).collect();
            let mut keyed = Vec::with_capacity(present.len());
            for (row, v) in present {
                if let Value::Int(x) | Value::DateTime(x) = v {
                    values[row as usize] = x;
                    absent.remove(row);
                    keyed.push((x, row));
                }
            }
            return Column::Integers {
                values,
                absent,
                datetime: datetimes && !ints,
                sorted: sorted_rows(keyed),
            };
        }
        if all(|v| matches!(v, Value::Float(f) if !f.is_nan())) {
            let mut values = vec![f64::NAN; rows];
            let mut keyed = Vec::with_capacity(present.len());
            for (row, v) in present {
                if let Value::Float(f) = v {
                    values[row as usize] = f;
                    keyed.push((float_key(f), row));
                }
            }
            return Column::Floats {
                values,
                sorted: sorted_rows(keyed),
            };
        }
        let mut values = vec![None; rows];
        for (row, v) in present {
            values[row as usize] = Some(v);
        }
        Column::Values(values)
    }

    /// Heap bytes held.
    pub fn bytes(&self) -> usize {
        match self {
            Column::Strings { codes, dict, text } => {
                codes.capacity() * 4
                    + dict.iter().map(|s| s.capacity() + 24).sum::<usize>()
                    + text.bytes()
            }
            Column::Integers {
                values,
                absent,
                sorted,
                ..
            } => values.capacity() * 8 + absent.serialized_size() + sorted.capacity() * 4,
            Column::Floats { values, sorted } => values.capacity() * 8 + sorted.capacity() * 4,
            Column::Values(v) => {
                v.capacity() * std::mem::size_of::<Option<Value>>()
                    + v.iter().flatten().map(value_heap).sum::<usize>()
            }
        }
    }

    /// The test prepared for this column.
    #[cfg(feature = "storage")]
    pub fn prepare<'c>(&'c self, test: &'c PropertyTest) -> Prepared<'c> {
        let op = test.op;
        match (self, &test.value) {
            (Column::Strings { codes, dict, .. }, c) => {
                let pass = dict
                    .iter()
                    .map(|s| {
                        compare_values(&Value::String(s.clone()), c).is_some_and(|o| op.holds(o))
                    })
                    .collect::<Vec<_>>();
                if pass.iter().any(|p| *p) {
                    Prepared::Codes { codes, pass }
                } else {
                    Prepared::Never
                }
            }
            (
                Column::Integers {
                    values,
                    absent,
                    datetime,
                    ..
                },
                c,
            ) => match (c, *datetime) {
                (Value::Int(x), false) | (Value::DateTime(x), true) => Prepared::Ints {
                    values,
                    absent,
                    op,
                    c: *x,
                },
                (Value::ZonedDateTime(z), true) => match micros_test(op, z) {
                    Some((op, c)) => Prepared::Ints {
                        values,
                        absent,
                        op,
                        c,
                    },
                    None => Prepared::Never,
                },
                (Value::Float(f), false) if !f.is_nan() => Prepared::IntsAsFloat {
                    values,
                    absent,
                    op,
                    c: *f,
                },
                _ => Prepared::Never,
            },
            (Column::Floats { values, .. }, c) => match c {
                Value::Float(f) if !f.is_nan() => Prepared::Floats { values, op, c: *f },
                Value::Int(i) => Prepared::Floats {
                    values,
                    op,
                    c: *i as f64,
                },
                _ => Prepared::Never,
            },
            (Column::Values(values), _) => Prepared::Values { values, test },
        }
    }
}

/// `micros <op> z` for microsecond instants, as a test on the microseconds themselves
/// (None: none passes). A datetime between two microseconds equals none of them.
#[cfg(feature = "storage")]
fn micros_test(op: Comparison, z: &crate::model::ZonedDateTime) -> Option<(Comparison, i64)> {
    let n = z.instant_nanos();
    let floor =
        i64::try_from(n.div_euclid(1000)).unwrap_or(if n < 0 { i64::MIN } else { i64::MAX });
    if n.rem_euclid(1000) == 0 {
        let plain_utc = z.offset == 0 && z.zone.is_none();
        return (op != Comparison::Eq || plain_utc).then_some((op, floor));
    }
    match op {
        Comparison::Eq => None,
        Comparison::Lt | Comparison::Le => Some((Comparison::Le, floor)),
        Comparison::Gt | Comparison::Ge => Some((Comparison::Gt, floor)),
    }
}

/// Rows ordered by their key, then by row.
fn sorted_rows<K: Ord + Copy>(mut keyed: Vec<(K, u32)>) -> Vec<u32> {
    keyed.sort_unstable();
    keyed.into_iter().map(|(_, row)| row).collect()
}

/// A key whose integer order is the order of floats other than NaN (-0.0 just before 0.0,
/// which compare equal: a range search by comparison still finds both).
fn float_key(f: f64) -> i64 {
    let b = f.to_bits() as i64;
    b ^ (((b >> 63) as u64) >> 1) as i64
}

/// A string column's dictionary as one text: string `i` is `text[start(i)..ends[i]]`. A
/// substring search runs over the whole text at vector speed and maps each hit to its
/// string, instead of setting up one search per string.
#[derive(Debug, Default)]
pub(crate) struct DictText {
    text: String,
    ends: Vec<usize>,
}

impl DictText {
    fn new(dict: &[String]) -> DictText {
        let mut text = String::with_capacity(dict.iter().map(String::len).sum());
        let mut ends = Vec::with_capacity(dict.len());
        for s in dict {
            text.push_str(s);
            ends.push(text.len());
        }
        DictText { text, ends }
    }

    fn bytes(&self) -> usize {
        self.text.capacity() + self.ends.capacity() * 8
    }

    /// The string of code `i`.
    #[inline]
    fn string(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.text.as_bytes()[start..self.ends[i]]
    }

    /// Per dictionary code, whether its string starts with `needle` (`suffix`: ends with it).
    /// Compared byte by byte in place from the affix's start: strings that differ mostly
    /// differ there (the domain of an address, not its common ending), and no call is made
    /// per string.
    pub fn affixed(&self, needle: &str, suffix: bool) -> Vec<bool> {
        let n = needle.as_bytes();
        (0..self.ends.len())
            .map(|i| {
                let s = self.string(i);
                let Some(at) = s.len().checked_sub(n.len()) else {
                    return false;
                };
                let part = if suffix { &s[at..] } else { &s[..n.len()] };
                same_bytes(part, n)
            })
            .collect()
    }

    /// Per dictionary code, whether its string contains `needle`.
    pub fn containing(&self, needle: &str) -> Vec<bool> {
        let mut pass = vec![needle.is_empty(); self.ends.len()];
        if needle.is_empty() {
            return pass;
        }
        let finder = memchr::memmem::Finder::new(needle.as_bytes());
        let hay = self.text.as_bytes();
        let mut at = 0usize;
        // Bounded: every step moves `at` to the start of a later string.
        while at < hay.len() {
            let Some(hit) = finder.find(&hay[at..]).map(|h| h + at) else {
                break;
            };
            // The string the hit starts in: the first whose end lies past the hit.
            let i = self.ends.partition_point(|e| *e <= hit);
            let Some(&end) = self.ends.get(i) else { break };
            // A hit running past its string's end spans two strings: none later in that
            // string can fit either, so the search goes on from the next string.
            if hit + needle.len() <= end {
                pass[i] = true;
            }
            at = end;
        }
        pass
    }
}

impl Column {
    /// The present rows by value, then row (number and datetime columns).
    pub fn sorted(&self) -> Option<&[u32]> {
        match self {
            Column::Integers { sorted, .. } | Column::Floats { sorted, .. } => Some(sorted),
            _ => None,
        }
    }

    /// The dictionary as one text (string columns).
    pub fn dict_text(&self) -> Option<&DictText> {
        match self {
            Column::Strings { text, .. } => Some(text),
            _ => None,
        }
    }
}

/// Whether two slices of the same length hold the same bytes: for up to 16 bytes two
/// overlapping word comparisons and no early exit (a dictionary scan meets matches and
/// mismatches unpredictably), longer ones word by word.
#[inline]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    #[inline]
    fn word(x: &[u8], at: usize) -> u64 {
        let mut w = [0u8; 8];
        w.copy_from_slice(&x[at..at + 8]);
        u64::from_ne_bytes(w)
    }
    #[inline]
    fn half(x: &[u8], at: usize) -> u32 {
        let mut w = [0u8; 4];
        w.copy_from_slice(&x[at..at + 4]);
        u32::from_ne_bytes(w)
    }
    let n = a.len();
    if n != b.len() {
        return false;
    }
    match n {
        0 => true,
        1..=3 => a.iter().zip(b).fold(true, |eq, (x, y)| eq & (x == y)),
        4..=7 => (half(a, 0) == half(b, 0)) & (half(a, n - 4) == half(b, n - 4)),
        8..=16 => (word(a, 0) == word(b, 0)) & (word(a, n - 8) == word(b, n - 8)),
        _ => {
            let whole = n / 8 * 8;
            (0..whole).step_by(8).all(|i| word(a, i) == word(b, i))
                && word(a, n - 8) == word(b, n - 8)
        }
    }
}

/// The positions in `sorted` (rows by value) whose values `v` pass `v <op> c`, given `below`
/// (whether `v < c`) and `at_most` (whether `v <= c`), both monotone along `sorted`.
#[cfg(feature = "storage")]
pub(crate) fn range_of(
    sorted: &[u32],
    op: crate::read::Comparison,
    below: impl Fn(u32) -> bool,
    at_most: impl Fn(u32) -> bool,
) -> Range<usize> {
    use crate::read::Comparison as C;
    let lt = || sorted.partition_point(|r| below(*r));
    let le = || sorted.partition_point(|r| at_most(*r));
    match op {
        C::Lt => 0..lt(),
        C::Le => 0..le(),
        C::Gt => le()..sorted.len(),
        C::Ge => lt()..sorted.len(),
        C::Eq => lt()..le(),
    }
}

fn value_heap(v: &Value) -> usize {
    match v {
        Value::String(s) => s.capacity(),
        Value::List(l) => {
            l.len() * std::mem::size_of::<Value>() + l.iter().map(value_heap).sum::<usize>()
        }
        Value::Map(m) => m
            .iter()
            .map(|(k, v)| k.capacity() + std::mem::size_of::<Value>() + 32 + value_heap(v))
            .sum(),
        Value::ZonedDateTime(z) => {
            std::mem::size_of::<crate::model::ZonedDateTime>()
                + z.zone.as_ref().map_or(0, |n| n.capacity())
        }
        Value::Duration(_) => std::mem::size_of::<crate::model::DurationValue>(),
        _ => 0,
    }
}

/// A test bound to a column: `passes(row)` is the test on that row's value.
#[cfg(feature = "storage")]
pub(crate) enum Prepared<'c> {
    /// No value of the column can pass.
    Never,
    Codes {
        codes: &'c [u32],
        pass: Vec<bool>,
    },
    Ints {
        values: &'c [i64],
        absent: &'c RoaringBitmap,
        op: Comparison,
        c: i64,
    },
    IntsAsFloat {
        values: &'c [i64],
        absent: &'c RoaringBitmap,
        op: Comparison,
        c: f64,
    },
    Floats {
        values: &'c [f64],
        op: Comparison,
        c: f64,
    },
    Values {
        values: &'c [Option<Value>],
        test: &'c PropertyTest,
    },
}

#[cfg(feature = "storage")]
impl Prepared<'_> {
    #[inline]
    pub fn passes(&self, row: usize) -> bool {
        match self {
            Prepared::Never => false,
            Prepared::Codes { codes, pass } => {
                let code = codes[row];
                code != NO_CODE && pass[code as usize]
            }
            Prepared::Ints {
                values,
                absent,
                op,
                c,
            } => {
                op.holds(values[row].cmp(c)) && (absent.is_empty() || !absent.contains(row as u32))
            }
            Prepared::IntsAsFloat {
                values,
                absent,
                op,
                c,
            } => {
                (values[row] as f64)
                    .partial_cmp(c)
                    .is_some_and(|o| op.holds(o))
                    && !absent.contains(row as u32)
            }
            Prepared::Floats { values, op, c } => values[row]
                .partial_cmp(c)
                .is_some_and(|o: Ordering| op.holds(o)),
            Prepared::Values { values, test } => test.passes(values[row].as_ref()),
        }
    }

    /// Number of rows in `0..rows` that pass, in one tight loop per column kind (the common
    /// single-test count without touched rows).
    pub fn count_all(&self, rows: usize) -> u64 {
        /// Counts the values passing `op` against `c`, with the operator chosen once.
        fn count<T: PartialOrd + Copy>(values: &[T], op: Comparison, c: T) -> u64 {
            let n = match op {
                Comparison::Eq => values.iter().filter(|v| **v == c).count(),
                Comparison::Lt => values.iter().filter(|v| **v < c).count(),
                Comparison::Le => values.iter().filter(|v| **v <= c).count(),
                Comparison::Gt => values.iter().filter(|v| **v > c).count(),
                Comparison::Ge => values.iter().filter(|v| **v >= c).count(),
            };
            n as u64
        }
        match self {
            Prepared::Never => 0,
            Prepared::Codes { codes, pass } => codes[..rows]
                .iter()
                .filter(|c| pass.get(**c as usize).copied().unwrap_or(false))
                .count() as u64,
            Prepared::Ints {
                values,
                absent,
                op,
                c,
            } if absent.is_empty() => count(&values[..rows], *op, *c),
            Prepared::Floats { values, op, c } => count(&values[..rows], *op, *c),
            _ => (0..rows).filter(|r| self.passes(*r)).count() as u64,
        }
    }

    pub fn is_never(&self) -> bool {
        matches!(self, Prepared::Never)
    }

    /// The positions in `sorted` (the column's present rows by value) of the rows that pass,
    /// by binary search: None for a test that is not a range of the column's order.
    pub fn sorted_range(&self, sorted: &[u32]) -> Option<Range<usize>> {
        let at = |r: u32| r as usize;
        Some(match *self {
            Prepared::Ints { values, op, c, .. } => {
                range_of(sorted, op, |r| values[at(r)] < c, |r| values[at(r)] <= c)
            }
            Prepared::IntsAsFloat { values, op, c, .. } => range_of(
                sorted,
                op,
                |r| (values[at(r)] as f64) < c,
                |r| (values[at(r)] as f64) <= c,
            ),
            Prepared::Floats { values, op, c } => {
                range_of(sorted, op, |r| values[at(r)] < c, |r| values[at(r)] <= c)
            }
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dict(words: &[&str]) -> DictText {
        DictText::new(&words.iter().map(|w| w.to_string()).collect::<Vec<_>>())
    }

    const WORDS: [&str; 8] = [
        "ada@acme.test",
        "xa",
        "ab",
        "",
        "lovelace",
        "aab",
        "ééa",
        "b",
    ];

    #[test]
    fn a_substring_search_over_the_dictionary_finds_each_string_that_contains_it() {
        let d = dict(&WORDS);
        let naive =
            |needle: &str| -> Vec<bool> { WORDS.iter().map(|s| s.contains(needle)).collect() };
        // Hits across two strings ("xa|ab", "aab|ééa") count for neither.
        for needle in [
            "ab", "a", "acme", "lovelace", "", "é", "éa", "zz", "xaab", "b",
        ] {
            assert_eq!(d.containing(needle), naive(needle), "{needle:?}");
        }
        assert!(dict(&[]).containing("a").is_empty());
    }

    #[test]
    fn same_bytes_is_slice_equality_at_every_length() {
        let a: Vec<u8> = (0..40u8).collect();
        for n in 0..40 {
            assert!(same_bytes(&a[..n], &a[..n]));
            for at in 0..n {
                let mut b = a[..n].to_vec();
                b[at] ^= 0x20;
                assert!(!same_bytes(&a[..n], &b), "{n} {at}");
            }
        }
        assert!(!same_bytes(b"ab", b"abc"));
    }

    #[test]
    fn prefixes_and_suffixes_over_the_dictionary_are_those_of_each_string() {
        let d = dict(&WORDS);
        for needle in [
            "a",
            "ab",
            "",
            "é",
            "éa",
            "test",
            "ada@acme.test",
            "xab",
            "b",
        ] {
            let starts: Vec<bool> = WORDS.iter().map(|s| s.starts_with(needle)).collect();
            let ends: Vec<bool> = WORDS.iter().map(|s| s.ends_with(needle)).collect();
            assert_eq!(d.affixed(needle, false), starts, "{needle:?}");
            assert_eq!(d.affixed(needle, true), ends, "{needle:?}");
        }
    }

    #[test]
    fn sorted_rows_order_floats_and_integers_by_value_then_row() {
        let present = |vals: &[f64]| -> Vec<(u32, Value)> {
            vals.iter()
                .enumerate()
                .map(|(i, f)| (i as u32 * 2, Value::Float(*f)))
                .collect()
        };
        let c = Column::build(
            12,
            present(&[2.5, -1.0, 0.0, -0.0, f64::INFINITY, f64::NEG_INFINITY]),
        );
        let Column::Floats { values, sorted } = &c else {
            panic!("a float column");
        };
        let got: Vec<f64> = sorted.iter().map(|r| values[*r as usize]).collect();
        assert_eq!(
            got,
            vec![f64::NEG_INFINITY, -1.0, -0.0, 0.0, 2.5, f64::INFINITY]
        );
        let c = Column::build(
            5,
            vec![(0, Value::Int(3)), (1, Value::Int(-7)), (3, Value::Int(3))],
        );
        assert_eq!(c.sorted(), Some(&[1, 0, 3][..]));
    }

    #[cfg(feature = "storage")]
    #[test]
    fn a_range_by_binary_search_is_the_rows_that_pass() {
        use crate::read::Comparison as C;
        let ints: Vec<(u32, Value)> = (0..40u32)
            .filter(|r| r % 7 != 3)
            .map(|r| (r, Value::Int((r as i64 * 37) % 11 - 5)))
            .collect();
        let floats: Vec<(u32, Value)> = (0..40u32)
            .filter(|r| r % 5 != 1)
            .map(|r| (r, Value::Float(((r * 13) % 9) as f64 / 2.0 - 2.0)))
            .collect();
        for col in [Column::build(40, ints), Column::build(40, floats)] {
            let sorted = col.sorted().expect("sorted");
            for op in [C::Eq, C::Lt, C::Le, C::Gt, C::Ge] {
                for c in [
                    Value::Int(-6),
                    Value::Int(0),
                    Value::Int(2),
                    Value::Float(-0.5),
                    Value::Float(1.0),
                    Value::Float(9.5),
                ] {
                    let test = PropertyTest {
                        key: "k".into(),
                        op,
                        value: c.clone(),
                    };
                    let p = col.prepare(&test);
                    let want: Vec<usize> = (0..40).filter(|r| p.passes(*r)).collect();
                    let Some(range) = p.sorted_range(sorted) else {
                        assert!(p.is_never(), "{op:?} {c:?}");
                        continue;
                    };
                    let mut got: Vec<usize> = sorted[range].iter().map(|r| *r as usize).collect();
                    got.sort_unstable();
                    assert_eq!(got, want, "{op:?} {c:?}");
                }
            }
        }
    }
}
