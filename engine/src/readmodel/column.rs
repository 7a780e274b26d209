//! One property of one label as a column aligned with the label's rows: strings dictionary-
//! encoded, integers / datetimes / floats unboxed, anything else (mixed types, booleans, lists)
//! kept as values. A test (`n.key <op> constant`) is prepared once per column so that the
//! per-row work is an integer or float comparison.

#[cfg(feature = "storage")]
use std::cmp::Ordering;
use std::collections::HashMap;

use roaring::RoaringBitmap;

use crate::model::Value;
#[cfg(feature = "storage")]
use crate::read::{compare_values, Comparison, PropertyTest};

/// Code of an absent string.
pub const NO_CODE: u32 = u32::MAX;

#[derive(Debug)]
pub(crate) enum Column {
    /// Every present value is a string.
    Strings { codes: Vec<u32>, dict: Vec<String> },
    /// Every present value is an integer (`datetime`: a datetime); `absent` lists the rows
    /// without a value.
    Integers {
        values: Vec<i64>,
        absent: RoaringBitmap,
        datetime: bool,
    },
    /// Every present value is a float other than NaN; NaN marks an absent value.
    Floats(Vec<f64>),
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
            return Column::Strings { codes, dict };
        }
        let ints = all(|v| matches!(v, Value::Int(_)));
        let datetimes = all(|v| matches!(v, Value::DateTime(_)));
        if ints || datetimes {
            let mut values = vec![0; rows];
            let mut absent: RoaringBitmap = (0..rows as u32).collect();
            for (row, v) in present {
                if let Value::Int(x) | Value::DateTime(x) = v {
                    values[row as usize] = x;
                    absent.remove(row);
                }
            }
            return Column::Integers {
                values,
                absent,
                datetime: datetimes && !ints,
            };
        }
        if all(|v| matches!(v, Value::Float(f) if !f.is_nan())) {
            let mut values = vec![f64::NAN; rows];
            for (row, v) in present {
                if let Value::Float(f) = v {
                    values[row as usize] = f;
                }
            }
            return Column::Floats(values);
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
            Column::Strings { codes, dict } => {
                codes.capacity() * 4 + dict.iter().map(|s| s.capacity() + 24).sum::<usize>()
            }
            Column::Integers { values, absent, .. } => {
                values.capacity() * 8 + absent.serialized_size()
            }
            Column::Floats(v) => v.capacity() * 8,
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
            (Column::Strings { codes, dict }, c) => {
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
            (Column::Floats(values), c) => match c {
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
}
